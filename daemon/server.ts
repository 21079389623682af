/**
 * The websocket server: decodes, validates (proto/validate.ts) and dispatches
 * requests to a RewindApi, replies in the request's encoding, and pushes
 * events to subscribed connections. Wire format: proto/PROTOCOL.md.
 *
 * Security (DESIGN.md "Protocol"): listens only on loopback or a unix socket
 * (mode 0600); the upgrade is refused with 403 when it carries an Origin
 * header (a browser) and with 401 unless it carries `Authorization: Bearer
 * <token>` (compared in constant time), before any message is read; incoming
 * messages are bounded by maxPayload (ws closes with 1009); no request reaches
 * the api before every field has been validated.
 *
 * States: LISTENING after startServer resolves, CLOSED after close(); close()
 * closes every connection with 1001 and stops listening.
 */
import { createHash, timingSafeEqual } from 'node:crypto'
import { promises as fs } from 'node:fs'
import { createServer, type IncomingMessage, type Server as HttpServer } from 'node:http'
import { isIP, type AddressInfo } from 'node:net'
import { WebSocketServer, WebSocket } from 'ws'
import { codec } from '../proto/codec.js'
import { namesAsBytes, OPS_WITH_PATHS } from '../proto/names.js'
import { ApiError, isErrorCode, ProtoError, type WireError } from '../proto/errors.js'
import { EVENTS, OPS, type Encoding, type Event, type EventName, type HelloInfo, type Request, type RequestId } from '../proto/messages.js'
import { MAX_READ_LENGTH, peekId, validateRequest } from '../proto/validate.js'
import { apiArgs } from '../proto/api-args.js'
import { SUPPORTED_VERSIONS } from '../proto/version.js'
import type { RewindApi } from './api.js'

/** Default bound on an incoming message, bytes (64 MiB). */
export const DEFAULT_MAX_PAYLOAD = 64 * 1024 * 1024

/** Server name reported by hello. */
export const SERVER_NAME = 'rewindfs/0.1.0'

/** Options of startServer. */
export interface ServerOptions {
  /** the operations served */
  api: RewindApi
  /** the token clients must present (daemon/token.ts) */
  token: string
  /** loopback address to listen on: 127.x.x.x, ::1 or localhost; default 127.0.0.1. Anything else is refused. Ignored with socketPath. */
  host?: string
  /** TCP port; default 0 (any free port, see RewindServer.port). Ignored with socketPath. */
  port?: number
  /** listen on this unix socket path instead of TCP (chmod 0600 after listen) */
  socketPath?: string
  /** largest incoming message, bytes; default DEFAULT_MAX_PAYLOAD (64 MiB). Larger frames close the connection with 1009. Replies larger than this are replaced by E_TOO_LARGE. */
  maxPayload?: number
  /** push 'checkpoint' and 'restore' events after successful mark/restore requests; default true. Set false when the daemon calls broadcast itself. */
  autoEvents?: boolean
}

/** A listening server. */
export interface RewindServer {
  /** TCP port listened on, or null on a unix socket */
  readonly port: number | null
  /** unix socket path, or null on TCP */
  readonly socketPath: string | null
  /** Send `event` to every connection subscribed to its name, each in the encoding of its subscribe request. */
  broadcast (event: Event): void
  /** Number of open connections. */
  connections (): number
  /** Close every connection (1001) and stop listening. Idempotent. */
  close (): Promise<void>
}

/** Per-connection state. */
interface Conn {
  ws: WebSocket
  /** events this connection subscribed to */
  events: Set<EventName>
  /** encoding of the subscribe request; events are sent in it */
  eventEncoding: Encoding
}

/** True for an address that can only be reached from this host. */
export function isLoopbackHost (host: string): boolean {
  if (host === 'localhost') return true
  const kind = isIP(host)
  if (kind === 4) return host.startsWith('127.')
  if (kind === 6) return host === '::1' || host === '0:0:0:0:0:0:0:1' || /^::ffff:127\./i.test(host)
  return false
}

/** True for the request target `/`, the only one served (PROTOCOL.md §1: anything else, a query string included, is 400). */
export function isRootPath (url: string | undefined): boolean {
  return url === '/'
}

/** Constant-time token comparison (hashing first makes lengths equal). */
export function tokenMatches (given: string, expected: string): boolean {
  const a = createHash('sha256').update(given).digest()
  const b = createHash('sha256').update(expected).digest()
  return timingSafeEqual(a, b) && given.length === expected.length
}

/** The token of an upgrade request, from `Authorization: Bearer <token>`, or null. */
function bearerToken (req: IncomingMessage): string | null {
  const h = req.headers.authorization
  if (typeof h !== 'string') return null
  const m = /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(h)
  return m ? m[1] : null
}

/** Turn anything thrown into a wire error: ApiError (or a look-alike) keeps its code; the rest is E_INTERNAL. */
export function toWireError (err: unknown): WireError {
  if (err instanceof ApiError) return err.toWire()
  if (typeof err === 'object' && err !== null) {
    const e = err as { code?: unknown; message?: unknown; details?: unknown }
    if (isErrorCode(e.code) && typeof e.message === 'string') {
      const w: WireError = { code: e.code, message: e.message }
      if (e.details !== undefined) w.details = e.details
      return w
    }
    if ((e.code === 'ENOSPC' || e.code === 'EDQUOT') && typeof e.message === 'string') return { code: 'E_NO_SPACE', message: e.message }
    if (typeof e.message === 'string') return { code: 'E_INTERNAL', message: e.message }
  }
  return { code: 'E_INTERNAL', message: String(err) }
}

/**
 * Start serving `api`. Resolves once listening. Throws (rejects) on a
 * non-loopback host, an empty token, or a listen error.
 */
export async function startServer (opts: ServerOptions): Promise<RewindServer> {
  const { api, token } = opts
  const maxPayload = opts.maxPayload ?? DEFAULT_MAX_PAYLOAD
  const autoEvents = opts.autoEvents ?? true
  const host = opts.host ?? '127.0.0.1'
  if (typeof token !== 'string' || token.length === 0) throw new Error('startServer: a token is required')
  if (opts.socketPath === undefined && !isLoopbackHost(host)) {
    throw new Error(`startServer: refusing to listen on non-loopback host ${host}; use 127.0.0.1, ::1 or a unix socket`)
  }
  if (!Number.isInteger(maxPayload) || maxPayload < 1024) throw new Error('startServer: maxPayload must be an integer >= 1024')

  const conns = new Set<Conn>()
  const http: HttpServer = createServer((_req, res) => {
    res.writeHead(426, { 'Content-Type': 'text/plain', Upgrade: 'websocket', Connection: 'close' })
    res.end('rewindfs: websocket only (see proto/PROTOCOL.md)\n')
  })
  const wss = new WebSocketServer({
    server: http,
    maxPayload,
    perMessageDeflate: false,
    clientTracking: false,
    verifyClient: (info: { req: IncomingMessage }, cb: (ok: boolean, code?: number, message?: string, headers?: Record<string, string>) => void) => {
      const h = info.req.headers
      if (!isRootPath(info.req.url)) {
        cb(false, 400, 'Bad Request: the protocol is served at path / only')
        return
      }
      if (h.origin !== undefined || h['sec-websocket-origin'] !== undefined) {
        cb(false, 403, 'Forbidden: browser origins are refused')
        return
      }
      const given = bearerToken(info.req)
      if (given === null || !tokenMatches(given, token)) {
        cb(false, 401, 'Unauthorized', { 'WWW-Authenticate': 'Bearer' })
        return
      }
      cb(true)
    },
  })

  const hello = (v: number): HelloInfo => ({
    protocol: v,
    versions: [...SUPPORTED_VERSIONS],
    server: SERVER_NAME,
    ops: [...OPS],
    events: [...EVENTS],
    encodings: ['msgpack', 'json'],
    maxPayload,
    maxRead: MAX_READ_LENGTH,
  })

  function send (c: Conn, msg: unknown, encoding: Encoding): void {
    if (c.ws.readyState !== WebSocket.OPEN) return
    let frame = codec.encode(msg, encoding)
    const size = typeof frame === 'string' ? Buffer.byteLength(frame) : frame.byteLength
    if (size > maxPayload) {
      const id = (msg as { id?: RequestId | null }).id ?? null
      if (!('id' in (msg as object))) return // an oversized event is dropped
      frame = codec.encode({ id, error: { code: 'E_TOO_LARGE', message: `reply of ${size} bytes exceeds maxPayload ${maxPayload}`, details: { size, maxPayload } } }, encoding)
    }
    c.ws.send(frame, { binary: typeof frame !== 'string' })
  }

  function broadcast (event: Event): void {
    const wire = namesAsBytes(event) as Event // a restore event's paths that are not UTF-8 go as bytes, as in replies
    for (const c of conns) if (c.events.has(event.event)) send(c, wire, c.eventEncoding)
  }

  /** The effect ledger's operations, or E_INTERNAL when this api keeps none. */
  function effects (): NonNullable<RewindApi['effects']> {
    if (api.effects === undefined) throw new ApiError('E_INTERNAL', 'this server keeps no effect ledger')
    return api.effects
  }

  /** The tool calls, or E_INTERNAL when this api keeps none. */
  function calls (): NonNullable<RewindApi['toolCalls']> {
    if (api.toolCalls === undefined) throw new ApiError('E_INTERNAL', 'this server attributes no tool calls')
    return api.toolCalls
  }

  /** Dispatch a validated request (its arguments as the api takes them: proto/api-args.ts apiArgs); returns the result for `ok`. */
  async function dispatch (c: Conn, req: Request, encoding: Encoding): Promise<unknown> {
    switch (req.op) {
      case 'hello': return hello(req.v)
      case 'status': return await api.status()
      case 'mark': {
        const r = await api.mark(apiArgs(req))
        if (autoEvents) broadcast({ event: 'checkpoint', checkpoint: r })
        return r
      }
      case 'restore': {
        const r = await api.restore(apiArgs(req))
        if (autoEvents && r.dryRun !== true) broadcast({ event: 'restore', restore: r })
        return r
      }
      case 'log': return await api.log(apiArgs(req))
      case 'diff': return await api.diff(apiArgs(req))
      case 'stat': return await api.stat(apiArgs(req))
      case 'readdir': return await api.readdir(apiArgs(req))
      case 'read': return await api.read(apiArgs(req))
      case 'context': return await api.context(apiArgs(req))
      case 'candidates': return await api.candidates(apiArgs(req))
      case 'memory_add': return await api.memoryAdd(apiArgs(req))
      case 'memory_get': return await api.memoryGet(apiArgs(req))
      case 'export': return await api.export(apiArgs(req))
      case 'unmount': return await api.unmount(apiArgs(req))
      case 'pin': return await api.pin({ ...apiArgs(req), pinned: req.pinned ?? true })
      case 'run_end': return await api.runEnd(apiArgs(req))
      case 'gc': return await api.gc(apiArgs(req))
      case 'effect_register': return await effects().register(apiArgs(req))
      case 'effect_begin': return await effects().begin(apiArgs(req))
      case 'effect_compensate': return await effects().compensate(apiArgs(req))
      case 'effect_gate': return await effects().gate(apiArgs(req))
      case 'effect_sent': return await effects().sent(apiArgs(req))
      case 'effect_complete': return await effects().complete(apiArgs(req))
      case 'effect_reconcile': return await effects().reconcile(apiArgs(req))
      case 'effect_list': return await effects().list(apiArgs(req))
      case 'undo': {
        const r = await api.undo(apiArgs(req))
        if (autoEvents && r.applied && r.restore) broadcast({ event: 'restore', restore: r.restore })
        return r
      }
      case 'history': return await api.history(apiArgs(req))
      case 'call_begin': return calls().begin(apiArgs(req))
      case 'call_end': return calls().end(apiArgs(req))
      case 'subscribe': {
        c.events = new Set(req.events ?? EVENTS)
        c.eventEncoding = encoding
        return { events: [...c.events] }
      }
    }
  }

  async function onMessage (c: Conn, data: Buffer, isBinary: boolean): Promise<void> {
    let encoding: Encoding = isBinary ? 'msgpack' : 'json'
    let id: RequestId | null = null
    try {
      const d = codec.decode(data, isBinary)
      encoding = d.encoding
      id = peekId(d.msg)
      const req = validateRequest(d.msg)
      const result = await dispatch(c, req, encoding)
      // paths that are not UTF-8 go as bytes (PROTOCOL.md "Paths that are not UTF-8")
      const ok = result === undefined ? null : OPS_WITH_PATHS.has(req.op) ? namesAsBytes(result) : result
      send(c, { id: req.id, ok }, encoding)
    } catch (err) {
      if (err instanceof ProtoError && err.id !== null) id = err.id
      send(c, { id, error: toWireError(err) }, encoding)
    }
  }

  wss.on('connection', (ws: WebSocket) => {
    const c: Conn = { ws, events: new Set(), eventEncoding: 'msgpack' }
    conns.add(c)
    ws.on('message', (data: Buffer, isBinary: boolean) => { void onMessage(c, data, isBinary) })
    ws.on('error', () => { /* oversized (1009) or invalid frames: ws closes the connection itself */ })
    ws.on('close', () => { conns.delete(c) })
  })

  // ws re-emits the http server's errors on wss: without a listener there, a
  // failed listen (EADDRINUSE) would be an uncaught exception instead of this rejection
  try {
    await new Promise<void>((resolve, reject) => {
      http.once('error', reject)
      wss.once('error', reject)
      const done = (): void => { http.off('error', reject); wss.off('error', reject); resolve() }
      if (opts.socketPath !== undefined) http.listen(opts.socketPath, done)
      else http.listen(opts.port ?? 0, host, done)
    })
  } catch (e) {
    wss.close()
    throw e
  }
  wss.on('error', () => { /* the listening server's errors: each connection handles its own */ })
  if (opts.socketPath !== undefined) await fs.chmod(opts.socketPath, 0o600)
  const addr = http.address()
  const port = opts.socketPath === undefined && addr !== null && typeof addr === 'object' ? (addr as AddressInfo).port : null

  let closing: Promise<void> | null = null
  return {
    port,
    socketPath: opts.socketPath ?? null,
    broadcast,
    connections: () => conns.size,
    close () {
      closing ??= (async () => {
        const gone: Promise<void>[] = []
        for (const c of conns) {
          gone.push(new Promise(resolve => {
            if (c.ws.readyState === WebSocket.CLOSED) { resolve(); return }
            const t = setTimeout(() => { c.ws.terminate(); resolve() }, 1000)
            c.ws.once('close', () => { clearTimeout(t); resolve() })
            c.ws.close(1001, 'server closing')
          }))
        }
        await Promise.all(gone)
        await new Promise<void>(resolve => wss.close(() => resolve()))
        await new Promise<void>(resolve => http.close(() => resolve()))
      })()
      return closing
    },
  }
}
