/**
 * A Node client of the daemon's hook socket (daemon/hook-socket.ts,
 * proto/PROTOCOL.md §7), for `rewindfs rewind` and tests. The hook itself
 * uses the C client (hooks/rewindfs-hook.c).
 */
import net from 'node:net'
import path from 'node:path'
import { readClientToken } from '../client/client.js'
import { HOOK_SOCKET, isHookMeta, type HookMeta } from '../proto/hook.js'

/** A daemon's hook socket and the token file to use on it: `<store>/hook.sock` and `<store>/token`, or discovery's `R/<key>.hook` and `R/<key>.token` (PROTOCOL.md §1, §7). */
export interface HookEndpoint { socket: string, token: string }

/** The hook endpoint in a store directory (a daemon this user started). */
export function storeHookEndpoint (store: string): HookEndpoint {
  return { socket: path.join(store, HOOK_SOCKET), token: path.join(store, 'token') }
}

/** Send one request line (without its newline) to the hook socket at `socketPath`; resolves to the reply line. Rejects on a connection error or after `timeoutMs`. */
export async function hookRequest (socketPath: string, line: string, timeoutMs = 30000): Promise<string> {
  return await new Promise<string>((resolve, reject) => {
    const sock = net.connect(socketPath)
    const chunks: Buffer[] = []
    const timer = setTimeout(() => { sock.destroy(); reject(new Error(`the daemon did not answer on its hook socket within ${timeoutMs} ms`)) }, timeoutMs)
    sock.on('connect', () => { sock.end(line + '\n') })
    sock.on('data', (b: Buffer) => chunks.push(b))
    sock.on('error', (e) => { clearTimeout(timer); reject(e) })
    sock.on('end', () => { clearTimeout(timer); resolve(Buffer.concat(chunks).toString('utf8').replace(/\n$/, '')) })
  })
}

/** An `error CODE MESSAGE` reply. */
export class HookReplyError extends Error {
  constructor (readonly code: string, message: string) { super(message); this.name = 'HookReplyError' }
}

function check (reply: string): string {
  const e = /^error (\S+) ?(.*)$/.exec(reply)
  if (e) throw new HookReplyError(e[1], e[2])
  return reply
}

/** The newest checkpoint marked by a hook for tool call `toolUseId`, or null. */
export async function findToolCheckpoint (hook: HookEndpoint, toolUseId: string): Promise<{ id: number, meta: HookMeta } | null> {
  if (!/^\S+$/.test(toolUseId)) throw new HookReplyError('E_BAD_REQUEST', `"${toolUseId}" is not a tool call id (no spaces; e.g. toolu_01ABC...)`)
  const token = await readClientToken(hook.token)
  const r = check(await hookRequest(hook.socket, `find ${token} ${toolUseId}`))
  if (r === 'none') return null
  const m = /^ok (\d+) (.*)$/.exec(r)
  if (!m) throw new HookReplyError('E_INTERNAL', `unexpected reply from the hook socket: ${r.slice(0, 200)}`)
  const meta: unknown = JSON.parse(m[2])
  if (!isHookMeta(meta)) throw new HookReplyError('E_INTERNAL', 'the hook socket answered a checkpoint without hook metadata')
  return { id: Number(m[1]), meta }
}

/** Mark a checkpoint for a hook payload (as the C client does); resolves to its id. */
export async function markForPayload (hook: HookEndpoint, harness: string, payload: unknown): Promise<number> {
  const token = await readClientToken(hook.token)
  const r = check(await hookRequest(hook.socket, `mark ${token} ${harness} ${JSON.stringify(payload)}`))
  const m = /^ok (\d+)$/.exec(r)
  if (!m) throw new HookReplyError('E_INTERNAL', `unexpected reply from the hook socket: ${r.slice(0, 200)}`)
  return Number(m[1])
}
