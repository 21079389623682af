/**
 * RewindClient: a typed client of the rewindfs daemon over its websocket
 * (proto/PROTOCOL.md). One method per operation, a timeout per call, error
 * replies as RewindError, events after subscribe, and a reconnect on the next
 * call after the connection was lost (never in the middle of a call).
 *
 * The checkpoint-taking methods take the same argument objects as
 * daemon/api.ts RewindApi (e.g. `restore({ id })`), so a client can stand in
 * for the api; on the wire the checkpoint id travels as `checkpoint`.
 */
import { promises as fs } from 'node:fs'
import * as path from 'node:path'
import { WebSocket, type RawData } from 'ws'
import { codec, reviveBytes } from '../proto/codec.js'
import { namesFromBytes, OPS_WITH_PATHS, pathsForWire } from '../proto/names.js'
import { isErrorCode } from '../proto/errors.js'
import {
  CONNECTION_FILE, TOKEN_FILE, isConnectionInfo, isErrorReply, isEvent, isOkReply,
  type CandidateInfo, type CheckpointEvent, type CheckpointId, type CheckpointInfo, type DiffEntry, type Encoding, type Event, type EventName,
  type ExportInfo, type GcPolicy, type GcReport, type RunEndInfo, type HelloInfo, type MemoryAddInfo, type MemoryEntry, type MemoryGetInfo, type Op, type OpArgs, type OpResults, type RestoreEvent, type RestoreInfo,
  type StatInfo, type StatusInfo, type SubscribeInfo, type UnmountInfo, type UndoInfo, type PathHistoryEntry, type CallInfo,
} from '../proto/messages.js'
import { PROTOCOL_VERSION } from '../proto/version.js'
import { wireArgs, type ApiArgs } from '../proto/api-args.js'
import type { EffectBeginArgs } from '../proto/messages.js'
import type { EffectBeginInfo, EffectInfo, EffectRegistration, GateInfo } from '../proto/effects.js'
import { ConnectionError, RewindError, TimeoutError } from './errors.js'
import { discover } from './discover.js'

export { ConnectionError, RewindError, TimeoutError } from './errors.js'
/** The arguments of each operation as this client's methods take them (proto/api-args.ts). */
export type { ApiArgs } from '../proto/api-args.js'
/** The names of the connection and token files in a store directory (defined once, in proto/messages.ts). */
export { CONNECTION_FILE, TOKEN_FILE } from '../proto/messages.js'

/** Default per-call timeout, ms. */
export const DEFAULT_TIMEOUT_MS = 30000
/** Default bound on an incoming reply, bytes (the server's default maxPayload plus framing slack). */
export const DEFAULT_CLIENT_MAX_PAYLOAD = 64 * 1024 * 1024 + 1024 * 1024

/** Options of RewindClient.connect. Endpoint: url, else socketPath, else storeDir's daemon.json, else discovery from `workspace`. */
export interface ConnectOptions {
  /** a workspace or any path inside one: the daemon is found by the discovery rule (client/discover.ts, PROTOCOL.md §1 "Finding the daemon"), again at every reconnect */
  workspace?: string
  /** websocket URL, e.g. ws://127.0.0.1:4711/ */
  url?: string
  /** unix socket path of the daemon */
  socketPath?: string
  /** the token; default: read from `<storeDir>/token` */
  token?: string
  /** store directory holding daemon.json and token; re-read at every reconnect */
  storeDir?: string
  /** default timeout of each call (and of opening the connection), ms; default 30000 */
  timeoutMs?: number
  /** frame encoding: 'msgpack' (binary frames, default) or 'json' (text frames) */
  encoding?: Encoding
  /** largest reply accepted, bytes; default DEFAULT_CLIENT_MAX_PAYLOAD */
  maxPayload?: number
}

/** Per-call options. */
export interface CallOptions {
  /** timeout of this call, ms; default the client's timeoutMs */
  timeoutMs?: number
}

interface Pending {
  op: Op
  /** the connection the request went out on */
  ws: WebSocket
  resolve: (v: unknown) => void
  reject: (e: Error) => void
  timer: ReturnType<typeof setTimeout>
}

type Listener<E> = (event: E) => void

/** A connection to the daemon. Create with RewindClient.connect. */
export class RewindClient {
  private ws: WebSocket | null = null
  private opening: Promise<WebSocket> | null = null
  private nextId = 1
  private readonly pending = new Map<number, Pending>()
  private readonly listeners: { checkpoint: Set<Listener<CheckpointEvent>>; restore: Set<Listener<RestoreEvent>> } = { checkpoint: new Set(), restore: new Set() }
  /** events subscribed to, re-subscribed after a reconnect; null before subscribe */
  private subscribed: EventName[] | null = null
  private closed = false
  private serverInfo: HelloInfo | null = null

  private constructor (private readonly opts: Required<Pick<ConnectOptions, 'timeoutMs' | 'encoding' | 'maxPayload'>> & ConnectOptions) {}

  /**
   * Open a connection and say hello. Rejects with RewindError
   * (E_UNAUTHORIZED on 401, E_UNSUPPORTED_VERSION) or ConnectionError.
   */
  static async connect (opts: ConnectOptions = {}): Promise<RewindClient> {
    if (opts.url === undefined && opts.socketPath === undefined && opts.storeDir === undefined && opts.workspace === undefined) {
      throw new TypeError('RewindClient.connect: give workspace, url, socketPath or storeDir')
    }
    const c = new RewindClient({ ...opts, timeoutMs: opts.timeoutMs ?? DEFAULT_TIMEOUT_MS, encoding: opts.encoding ?? 'msgpack', maxPayload: opts.maxPayload ?? DEFAULT_CLIENT_MAX_PAYLOAD })
    await c.open()
    return c
  }

  /** What the server said in hello on the current connection (null while disconnected before the first hello). */
  get server (): HelloInfo | null {
    return this.serverInfo
  }

  /** True while a connection is open. */
  get connected (): boolean {
    return this.ws !== null && this.ws.readyState === WebSocket.OPEN
  }

  // ------------------------------------------------------------ operations

  /** hello: version and capabilities of the server (done by connect; call again to refresh). */
  hello (args: ApiArgs<'hello'> = {}, o?: CallOptions): Promise<HelloInfo> {
    return this.call('hello', args, o)
  }

  /** status of the mounted workspace. */
  status (o?: CallOptions): Promise<StatusInfo> {
    return this.call('status', {}, o)
  }

  /** Seal the current generation as a checkpoint; `context` (any JSON value) and `meta` (segment metadata) are stored with it. */
  mark (args: ApiArgs<'mark'> = {}, o?: CallOptions): Promise<CheckpointInfo> {
    return this.call('mark', args, o)
  }

  /**
   * Restore checkpoint `id` exactly; unknown id → RewindError E_UNKNOWN_CHECKPOINT and nothing changes.
   * `paths`: only those files or subtrees, on the current branch, as a new checkpoint (RestoreInfo.result);
   * `dryRun`: what would change (RestoreInfo.changes), nothing changed.
   */
  restore (args: ApiArgs<'restore'>, o?: CallOptions): Promise<RestoreInfo> {
    return this.call('restore', wireArgs<'restore'>(args), o)
  }

  /**
   * Revert what the segment ending at checkpoint `id` changed, where no later change touched the same paths;
   * with conflicts (UndoInfo.conflicts) nothing is applied. `dryRun`: change nothing.
   */
  undo (args: ApiArgs<'undo'>, o?: CallOptions): Promise<UndoInfo> {
    return this.call('undo', wireArgs<'undo'>(args), o)
  }

  /** The checkpoints at which `path` changed, newest first: the current lineage, or every branch with `all`; at most `limit` (default 100); `meta`: with each checkpoint's segment metadata. */
  history (args: ApiArgs<'history'>, o?: CallOptions): Promise<PathHistoryEntry[]> {
    return this.call('history', args, o)
  }

  /**
   * Begin a tool call (attribution, PROTOCOL.md "Attribution"): every change
   * that process `pid` and the processes it starts make until callEnd is
   * attributed to the call in the next checkpoint's `calls`. Give the pid of
   * the process that will start the tool (your own: process.pid) before it
   * starts it.
   */
  callBegin (args: ApiArgs<'call_begin'>, o?: CallOptions): Promise<CallInfo> {
    return this.call('call_begin', wireArgs<'call_begin'>(args), o)
  }

  /** End a tool call begun with callBegin; `exitStatus`: how the tool ended (0 success). */
  callEnd (args: ApiArgs<'call_end'>, o?: CallOptions): Promise<CallInfo> {
    return this.call('call_end', wireArgs<'call_end'>(args), o)
  }

  /** Checkpoints newest first; all branches unless `branch`; at most `limit` (default 100 in the daemon). */
  log (args: ApiArgs<'log'> = {}, o?: CallOptions): Promise<CheckpointInfo[]> {
    return this.call('log', args, o)
  }

  /** Differences from checkpoint `a` to checkpoint `b` (or to the live workspace when b is absent). */
  diff (args: ApiArgs<'diff'>, o?: CallOptions): Promise<DiffEntry[]> {
    return this.call('diff', args, o)
  }

  /** stat of workspace path `path` at checkpoint `id` (live when absent); null when absent. */
  stat (args: ApiArgs<'stat'>, o?: CallOptions): Promise<StatInfo | null> {
    return this.call('stat', wireArgs<'stat'>(args), o)
  }

  /** Entries of directory `path` at checkpoint `id` (live when absent). */
  readdir (args: ApiArgs<'readdir'>, o?: CallOptions): Promise<StatInfo[]> {
    return this.call('readdir', wireArgs<'readdir'>(args), o)
  }

  /** Bytes of file `path` at checkpoint `id` (live when absent) from `offset`, at most `length` (≤ 16 MiB). */
  read (args: ApiArgs<'read'>, o?: CallOptions): Promise<Uint8Array> {
    return this.call('read', wireArgs<'read'>(args), o)
  }

  /** Context stored with checkpoint `id` (null when none). */
  context (args: ApiArgs<'context'>, o?: CallOptions): Promise<unknown> {
    return this.call('context', wireArgs<'context'>(args), o)
  }

  /** Checkpoints on the current lineage (parent links from the head, across branches), newest first, at most `limit` (1..80, default 80); step 0 is the oldest. */
  candidates (args: ApiArgs<'candidates'> = {}, o?: CallOptions): Promise<CandidateInfo[]> {
    return this.call('candidates', args, o)
  }

  /** Append `entry` (a JSON object) to the rewind memory of `run` (kept by the daemon, durable); resolves to `{count}` entries now. */
  memoryAdd (args: ApiArgs<'memory_add'>, o?: CallOptions): Promise<MemoryAddInfo> {
    return this.call('memory_add', args, o)
  }

  /** The rewind memory of `run`: `{entries}` in insertion order. */
  memoryGet (args: ApiArgs<'memory_get'>, o?: CallOptions): Promise<MemoryGetInfo> {
    return this.call('memory_get', args, o)
  }

  /** Write checkpoint `id` as plain files into absolute directory `dir` (absent or empty, outside the workspace). */
  export (args: ApiArgs<'export'>, o?: CallOptions): Promise<ExportInfo> {
    return this.call('export', wireArgs<'export'>(args), o)
  }

  /** Pin checkpoint `id` (or unpin it with `pinned: false`): garbage collection never removes a pinned checkpoint. */
  pin (args: ApiArgs<'pin'>, o?: CallOptions): Promise<CheckpointInfo> {
    return this.call('pin', wireArgs<'pin'>(args), o)
  }

  /** Say that run `run` has ended: garbage collection stops keeping the checkpoints whose context names it. */
  runEnd (args: ApiArgs<'run_end'>, o?: CallOptions): Promise<RunEndInfo> {
    return this.call('run_end', args, o)
  }

  /**
   * Garbage collection with a retention policy (every field optional, see
   * GcPolicy); the workspace stays usable meanwhile. May take seconds on a
   * large store: give a `timeoutMs` in `o` to wait longer than the default.
   */
  gc (args: ApiArgs<'gc'> = {}, o?: CallOptions): Promise<GcReport> {
    return this.call('gc', args, o)
  }

  // ------------------------------------------------------------ effects (proto/effects.ts, PROTOCOL.md "Effects")

  /** Register a tool's effect class (and the body fields its derived identities leave out, as JSON Pointers). */
  effectRegister (args: OpArgs['effect_register'], o?: CallOptions): Promise<EffectRegistration> {
    return this.call('effect_register', args, o)
  }

  /** Begin an effect: the occurrence id, or the gate's refusal as RewindError (E_EFFECT_DONE, E_EFFECT_COMPENSATE_ONLY, E_EFFECT_IRREVERSIBLE, E_EFFECT_UNKNOWN; details.gate.message says what to do). */
  effectBegin (args: EffectBeginArgs, o?: CallOptions): Promise<EffectBeginInfo> {
    return this.call('effect_begin', args, o)
  }

  /** Begin the compensation of occurrence `compensates`: a new effect with its own occurrence id. */
  effectCompensate (args: EffectBeginArgs & { compensates: number }, o?: CallOptions): Promise<EffectBeginInfo> {
    return this.call('effect_compensate', args, o)
  }

  /** What the gate would decide for a begin now; records nothing. */
  effectGate (args: OpArgs['effect_gate'], o?: CallOptions): Promise<GateInfo> {
    return this.call('effect_gate', args, o)
  }

  /** intent -> pending: the call is being sent. */
  effectSent (args: OpArgs['effect_sent'], o?: CallOptions): Promise<EffectInfo> {
    return this.call('effect_sent', args, o)
  }

  /** Record the outcome (confirmed, failed or unknown) with evidence. */
  effectComplete (args: OpArgs['effect_complete'], o?: CallOptions): Promise<EffectInfo> {
    return this.call('effect_complete', args, o)
  }

  /** Record what an authoritative re-read of the target showed: absent, present or wrong. */
  effectReconcile (args: OpArgs['effect_reconcile'], o?: CallOptions): Promise<EffectInfo> {
    return this.call('effect_reconcile', args, o)
  }

  /** Occurrences, newest first, filtered by run, branch, status and target. */
  effectList (args: OpArgs['effect_list'] = {}, o?: CallOptions): Promise<EffectInfo[]> {
    return this.call('effect_list', args, o)
  }

  /** Unmount the workspace; with `discard` it gets its original content back. */
  unmount (args: { discard?: boolean } = {}, o?: CallOptions): Promise<UnmountInfo> {
    return this.call('unmount', args, o)
  }

  /** Receive `events` (default all) on this connection; renewed after each reconnect. Listen with on(). */
  async subscribe (events?: EventName[], o?: CallOptions): Promise<SubscribeInfo> {
    const r = await this.call('subscribe', events === undefined ? {} : { events }, o)
    this.subscribed = r.events
    return r
  }

  /** Listen to an event (after subscribe). Returns a function that removes the listener. */
  on (event: 'checkpoint', fn: Listener<CheckpointEvent>): () => void
  on (event: 'restore', fn: Listener<RestoreEvent>): () => void
  on (event: EventName, fn: Listener<never>): () => void {
    const set = this.listeners[event] as Set<Listener<Event>>
    set.add(fn as Listener<Event>)
    return () => { set.delete(fn as Listener<Event>) }
  }

  /** Close the connection; waiting calls reject with ConnectionError. Later calls reject too. */
  async close (): Promise<void> {
    this.closed = true
    const ws = this.ws
    this.ws = null
    this.failAll(new ConnectionError('client closed'))
    if (ws !== null && ws.readyState !== WebSocket.CLOSED) {
      await new Promise<void>(resolve => {
        ws.once('close', () => resolve())
        ws.close(1000)
      })
    }
  }

  /**
   * Send one request and wait for its reply. Reconnects first if the
   * connection was lost. Rejects with RewindError (error reply), TimeoutError
   * or ConnectionError.
   */
  async call<O extends Op> (op: O, args: OpArgs[O], o?: CallOptions): Promise<OpResults[O]> {
    if (this.closed) throw new ConnectionError('client closed')
    const timeoutMs = o?.timeoutMs ?? this.opts.timeoutMs
    const ws = await this.open()
    return await this.send(ws, op, args, timeoutMs) as OpResults[O]
  }

  // ------------------------------------------------------------ internals

  private send (ws: WebSocket, op: Op, args: object, timeoutMs: number): Promise<unknown> {
    const id = this.nextId++
    const frame = codec.encode({ ...pathsForWire(args), v: PROTOCOL_VERSION, id, op }, this.opts.encoding)
    const size = typeof frame === 'string' ? Buffer.byteLength(frame) : frame.byteLength
    const limit = this.serverInfo?.maxPayload
    if (limit !== undefined && size > limit) {
      return Promise.reject(new RewindError('E_TOO_LARGE', `${op}: request of ${size} bytes exceeds the server's maxPayload ${limit} (not sent)`, { size, maxPayload: limit, local: true }, op))
    }
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id)
        reject(new TimeoutError(op, timeoutMs))
      }, timeoutMs)
      this.pending.set(id, { op, ws, resolve, reject, timer })
      ws.send(frame, { binary: typeof frame !== 'string' }, err => {
        if (err !== undefined && err !== null) this.settle(id, new ConnectionError(`${op}: send failed: ${err.message}`, undefined, { cause: err }))
      })
    })
  }

  private settle (id: number, result: Error | { ok: unknown }): void {
    const p = this.pending.get(id)
    if (p === undefined) return
    this.pending.delete(id)
    clearTimeout(p.timer)
    if (result instanceof Error) p.reject(result)
    else p.resolve(result.ok)
  }

  /** Reject every waiting call (sent on `ws` only, when given). */
  private failAll (err: Error, ws?: WebSocket): void {
    for (const [id, p] of [...this.pending]) if (ws === undefined || p.ws === ws) this.settle(id, err)
  }

  /** The open websocket, opening (and saying hello, re-subscribing) when there is none. */
  private open (): Promise<WebSocket> {
    if (this.ws !== null && this.ws.readyState === WebSocket.OPEN) return Promise.resolve(this.ws)
    this.opening ??= this.doOpen().finally(() => { this.opening = null })
    return this.opening
  }

  private async doOpen (): Promise<WebSocket> {
    const { url, token } = await this.endpoint()
    const timeoutMs = this.opts.timeoutMs
    const ws = new WebSocket(url, {
      headers: { Authorization: `Bearer ${token}` },
      maxPayload: this.opts.maxPayload,
      perMessageDeflate: false,
      handshakeTimeout: timeoutMs,
    })
    await new Promise<void>((resolve, reject) => {
      ws.once('open', () => { ws.removeAllListeners('error'); ws.removeAllListeners('unexpected-response'); resolve() })
      ws.once('unexpected-response', (_req, res) => {
        const status = res.statusCode ?? 0
        res.resume()
        ws.removeAllListeners('error')
        ws.on('error', () => {})
        ws.terminate()
        if (status === 401) reject(new RewindError('E_UNAUTHORIZED', 'the daemon refused the token (HTTP 401)', { status }))
        else reject(new ConnectionError(`the daemon refused the connection (HTTP ${status})`, status))
      })
      ws.once('error', err => reject(new ConnectionError(`cannot connect to ${url}: ${err.message}`, undefined, { cause: err })))
    })
    ws.on('error', () => { /* followed by close */ })
    ws.on('message', (data: RawData, isBinary: boolean) => this.onMessage(data, isBinary))
    ws.on('close', (code: number, reason: Buffer) => {
      if (this.ws === ws) this.ws = null
      const why = reason.length > 0 ? `: ${reason.toString()}` : ''
      if (code === 1009) this.failAll(new RewindError('E_TOO_LARGE', `the daemon closed the connection: message too large (1009)${why}`, { closeCode: code }), ws)
      else this.failAll(new ConnectionError(`connection lost (close code ${code})${why}`, code), ws)
    })
    this.ws = ws
    try {
      this.serverInfo = await this.send(ws, 'hello', {}, timeoutMs) as HelloInfo
      if (this.subscribed !== null) await this.send(ws, 'subscribe', { events: this.subscribed }, timeoutMs)
    } catch (err) {
      if (this.ws === ws) this.ws = null
      ws.terminate()
      throw err
    }
    return ws
  }

  /** Where to connect and with which token, re-read from storeDir each time. */
  private async endpoint (): Promise<{ url: string; token: string }> {
    const { storeDir } = this.opts
    let url = this.opts.url
    if (url === undefined && this.opts.socketPath !== undefined) url = `ws+unix:${this.opts.socketPath}:/`
    if (url === undefined && storeDir !== undefined) {
      const file = path.join(storeDir, CONNECTION_FILE)
      let info: unknown
      try {
        info = JSON.parse(await fs.readFile(file, 'utf8'))
      } catch (err) {
        throw new ConnectionError(`cannot read connection file ${file}: ${(err as Error).message} (is the daemon running?)`, undefined, { cause: err })
      }
      if (!isConnectionInfo(info)) throw new ConnectionError(`connection file ${file} is malformed`)
      url = info.socket !== null ? `ws+unix:${info.socket}:/` : `ws://127.0.0.1:${info.port}/`
    }
    let token = this.opts.token
    if (token === undefined && storeDir !== undefined) token = await readClientToken(path.join(storeDir, TOKEN_FILE))
    if ((url === undefined || token === undefined) && this.opts.workspace !== undefined) {
      let found
      try { found = await discover(this.opts.workspace) } catch (err) {
        throw new ConnectionError((err as Error).message, undefined, { cause: err })
      }
      if (found === null) throw new ConnectionError(`no rewindfs daemon serves ${this.opts.workspace}: no connection file for it or an ancestor (is it mounted? rewindfs mount DIR; REWINDFS_RUNTIME_DIR must match the daemon's)`)
      url ??= found.socket !== null ? `ws+unix:${found.socket}:/` : `ws://127.0.0.1:${found.port}/`
      token ??= await readClientToken(found.token)
    }
    if (url === undefined) throw new TypeError('RewindClient: no endpoint')
    if (token === undefined) throw new TypeError('RewindClient: give token, storeDir or workspace')
    return { url, token }
  }

  private onMessage (data: RawData, isBinary: boolean): void {
    let msg: unknown
    try {
      const raw = Array.isArray(data) ? Buffer.concat(data) : data instanceof ArrayBuffer ? new Uint8Array(data) : data
      msg = reviveBytes(codec.decode(raw, isBinary).msg)
    } catch {
      return // a frame we cannot decode answers nothing we wait for
    }
    if (isEvent(msg)) {
      const ev = msg.event === 'restore' ? namesFromBytes(msg) as Event : msg
      for (const fn of this.listeners[ev.event] as Set<Listener<Event>>) {
        try { fn(ev) } catch { /* a listener's failure is its own */ }
      }
      return
    }
    if (isErrorReply(msg)) {
      if (typeof msg.id !== 'number') return
      const p = this.pending.get(msg.id)
      const code = isErrorCode(msg.error.code) ? msg.error.code : 'E_INTERNAL'
      this.settle(msg.id, new RewindError(code, msg.error.message, msg.error.details, p?.op))
      return
    }
    if (isOkReply(msg) && typeof msg.id === 'number') {
      // paths that are not UTF-8 arrive as bytes: the client's string form of them (proto/names.ts)
      const op = this.pending.get(msg.id)?.op
      this.settle(msg.id, { ok: op !== undefined && OPS_WITH_PATHS.has(op) ? namesFromBytes(msg.ok) : msg.ok })
    }
  }
}

/** Read a token file, refusing one that group or others can access. */
export async function readClientToken (file: string): Promise<string> {
  let st
  try {
    st = await fs.stat(file)
  } catch (err) {
    throw new ConnectionError(`cannot read token file ${file}: ${(err as Error).message}`, undefined, { cause: err })
  }
  if ((st.mode & 0o077) !== 0) throw new ConnectionError(`token file ${file} has mode ${(st.mode & 0o777).toString(8)}: group or others can access it; refusing to use it (chmod 600 ${file})`)
  return (await fs.readFile(file, 'utf8')).trim()
}
