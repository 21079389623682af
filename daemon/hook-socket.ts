/**
 * The daemon's hook socket: a unix socket in the store (`<store>/hook.sock`,
 * mode 0600) speaking a one-line protocol, for clients that cannot afford a
 * websocket handshake or a Node start-up: the PreToolUse hook client
 * (hooks/rewindfs-hook.c) marks a checkpoint before every tool call through
 * it in about a millisecond. Format: proto/PROTOCOL.md §7.
 *
 * One request per connection: the client writes one line (ending in "\n"),
 * the daemon answers one line and closes. Every request carries the store's
 * token (the same as the websocket's, compared in constant time); the
 * socket takes the token file's owner, group and mode, so exactly those who
 * may read the token may connect.
 */
import net from 'node:net'
import fs from 'node:fs'
import { tokenMatches } from './server.js'
import { hookMark, isHookMeta, type Harness, type HookMeta } from '../proto/hook.js'

/** Longest request line, bytes (the websocket's maxPayload: a Write tool's input carries the file). */
export const HOOK_MAX_LINE = 64 * 1024 * 1024

/** Longest unix socket path Linux accepts (sun_path is 108 bytes with its NUL). */
export const SUN_PATH_MAX = 107

/** What the hook socket asks of the daemon. */
export interface HookHandlers {
  /** mark a checkpoint; resolves to its id. Errors with a `code` (ApiError) are answered with it. */
  mark (label: string, meta: HookMeta): Promise<number>
  /** the newest checkpoint marked for tool call `toolUseId`, or null */
  find (toolUseId: string): { id: number, meta: HookMeta } | null
}

/** A listening hook socket. */
export interface HookSocket {
  readonly path: string
  /** stop listening, end open connections, remove the socket file */
  close (): Promise<void>
}

/** One line of the reply (newlines in messages become spaces). */
function line (s: string): string {
  return s.replace(/[\r\n]+/g, ' ') + '\n'
}

/**
 * Answer one request line. Exported for tests; the socket calls it.
 * Never throws: every failure is an `error CODE message` line.
 */
export async function answerHookLine (req: string, token: string, h: HookHandlers): Promise<string> {
  const m = /^([a-z]+) (\S+)(?: ([\s\S]*))?$/.exec(req)
  if (!m) return line('error E_BAD_REQUEST expected "VERB TOKEN ARGUMENT" (proto/PROTOCOL.md §7)')
  const [, verb, given, arg = ''] = m
  if (!tokenMatches(given, token)) return line('error E_UNAUTHORIZED the token is missing or wrong (read it from the store\'s token file)')
  try {
    switch (verb) {
      case 'ping': return line('ok')
      case 'mark': {
        const sp = arg.indexOf(' ')
        const harness = sp < 0 ? arg : arg.slice(0, sp)
        if (!/^[a-z][a-z0-9-]{0,31}$/.test(harness)) return line('error E_BAD_REQUEST mark: expected "mark TOKEN HARNESS PAYLOAD" with a harness name such as claude or codex')
        let payload: unknown
        try { payload = JSON.parse(sp < 0 ? '' : arg.slice(sp + 1)) } catch (e) { return line(`error E_BAD_REQUEST mark: the payload is not JSON (${(e as Error).message})`) }
        let mk
        try { mk = hookMark(harness as Harness, payload) } catch (e) { return line(`error E_BAD_REQUEST mark: ${(e as Error).message}`) }
        return line(`ok ${await h.mark(mk.label, mk.meta)}`)
      }
      case 'find': {
        if (arg === '') return line('error E_BAD_REQUEST find: expected "find TOKEN TOOL_USE_ID"')
        const f = h.find(arg)
        return line(f === null ? 'none' : `ok ${f.id} ${JSON.stringify(f.meta)}`)
      }
      default: return line(`error E_UNKNOWN_OP ${verb}: the verbs are ping, mark, find`)
    }
  } catch (e) {
    const code = typeof (e as { code?: unknown })?.code === 'string' && /^E_[A-Z_]+$/.test((e as { code: string }).code) ? (e as { code: string }).code : 'E_INTERNAL'
    return line(`error ${code} ${(e as Error)?.message ?? String(e)}`)
  }
}

/**
 * Listen on `file` (a stale socket file left by a killed daemon is removed
 * first: the store's lock, or the runtime directory's connection file, says
 * no other daemon holds it), then give it the owner, group and permission
 * bits of `accessLike` when that is a path (the store's token file), or mode
 * 0600 and, when it is a user ({uid, gid}: the user who mounted through
 * sudo, daemon/discovery.ts accessUser), that owner; mode 0600 alone
 * without it. Throws when the path is longer than SUN_PATH_MAX bytes, the
 * listen fails or `accessLike` cannot be read.
 */
export async function startHookSocket (file: string, token: string, h: HookHandlers, accessLike?: string | { uid: number, gid: number } | null): Promise<HookSocket> {
  if (Buffer.byteLength(file) > SUN_PATH_MAX) throw new Error(`the hook socket path ${file} is longer than ${SUN_PATH_MAX} bytes (a unix socket limit): put the store at a shorter path (--store, or REWINDFS_HOME) to use the harness hooks`)
  try { if (fs.lstatSync(file).isSocket()) fs.rmSync(file) } catch {}
  const open = new Set<net.Socket>()
  // allowHalfOpen: the client shuts its side down after the request; the answer still goes back
  const server = net.createServer({ allowHalfOpen: true }, sock => {
    open.add(sock)
    sock.on('close', () => open.delete(sock))
    sock.on('error', () => {})
    const chunks: Buffer[] = []
    let size = 0
    let done = false
    sock.on('data', (b: Buffer) => {
      if (done) return
      const nl = b.indexOf(10)
      chunks.push(nl < 0 ? b : b.subarray(0, nl))
      size += nl < 0 ? b.length : nl
      if (size > HOOK_MAX_LINE) { done = true; sock.end(line(`error E_TOO_LARGE the request is longer than ${HOOK_MAX_LINE} bytes`)); return }
      if (nl >= 0) {
        done = true
        void answerHookLine(Buffer.concat(chunks).toString('utf8'), token, h).then(r => sock.end(r))
      }
    })
    sock.on('end', () => { if (!done) { done = true; sock.end(line('error E_BAD_REQUEST the request line did not end in a newline')) } })
  })
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(file, () => { server.off('error', reject); resolve() })
  })
  if (accessLike === undefined || accessLike === null) fs.chmodSync(file, 0o600)
  else if (typeof accessLike === 'object') {
    fs.chmodSync(file, 0o600)
    fs.chownSync(file, accessLike.uid, accessLike.gid)
  } else {
    const st = fs.statSync(accessLike)
    fs.chmodSync(file, st.mode & 0o777)
    const own = fs.statSync(file)
    if (own.uid !== st.uid || own.gid !== st.gid) fs.chownSync(file, st.uid, st.gid)
  }
  server.on('error', () => {})
  let closing: Promise<void> | null = null
  return {
    path: file,
    close () {
      closing ??= new Promise<void>(resolve => {
        for (const s of open) s.destroy()
        server.close(() => resolve())
      }).then(() => { try { fs.rmSync(file, { force: true }) } catch {} })
      return closing
    },
  }
}

/** The hook handlers of a daemon: mark through its api, find by scanning its checkpoints' meta (newest first; O(checkpoints)). */
export function hookHandlers (mark: (label: string, meta: HookMeta) => Promise<{ id: number }>, checkpoints: () => Iterable<{ id: number, meta?: unknown }>): HookHandlers {
  return {
    mark: async (label, meta) => (await mark(label, meta)).id,
    find: (toolUseId) => {
      let best: { id: number, meta: HookMeta } | null = null
      for (const c of checkpoints()) {
        if (isHookMeta(c.meta) && c.meta.tool_use_id === toolUseId && (best === null || c.id > best.id)) best = { id: c.id, meta: c.meta }
      }
      return best
    },
  }
}
