/**
 * The frame codec, behind an interface (STYLE.md "Formats and protocols").
 * Binary frames carry msgpack (msgpackr, useRecords: false, so any msgpack
 * library reads them); text frames carry JSON. A reply uses the request's
 * encoding. Values follow the value model (proto/values.ts, PROTOCOL.md
 * "Values"): integers beyond 32 bits are msgpack int64/uint64, JSON numbers
 * with all their digits; bytes are msgpack `bin`; in JSON, a reply whose
 * `ok` is bytes is sent as a base64 string with `encoding: 'base64'` beside
 * it, and bytes anywhere else are base64 strings named by the message's
 * top-level `bytes` field (proto/json.ts).
 * No Node-only types: frames are Uint8Array or string.
 */
import { Packr, Unpackr } from 'msgpackr'
import { fromBase64, toBase64 } from './base64.js'
import { ProtoError } from './errors.js'
import { BytesFieldError, parseMessage, stringifyMessage } from './json.js'
import { isObject, isRequestIdValue, type Encoding, type RequestId } from './messages.js'
import { pointerToken, setKey, toMsgpackValue } from './values.js'

export { fromBase64, toBase64 } from './base64.js'

/** A decoded frame and the encoding it came in. */
export interface Decoded {
  msg: unknown
  encoding: Encoding
}

/** Encodes and decodes protocol messages. */
export interface Codec {
  /**
   * Decode one frame. `raw` is the frame payload; `isBinary` tells a binary
   * frame (msgpack) from a text frame (JSON; bytes are UTF-8).
   * Throws ProtoError E_BAD_REQUEST when the payload does not decode.
   */
  decode (raw: Uint8Array | string, isBinary: boolean): Decoded
  /** Encode a message: msgpack → Uint8Array (send as a binary frame), json → string (send as a text frame). */
  encode (msg: unknown, encoding: Encoding): Uint8Array | string
}

const packr = new Packr({ useRecords: false, moreTypes: false })
// maps decode as Map (so a non-string key is seen, not turned into a string) and are made
// plain objects by fromMaps; int64/uint64 within ±(2^53−1) decode as numbers, beyond as bigint
// ('auto' is in msgpackr 2.1's unpack.js, not in its type declarations)
const unpackr = new Unpackr({ useRecords: false, mapsAsObjects: false, int64AsType: 'auto' as 'number', moreTypes: false })
const utf8 = new TextDecoder('utf-8', { fatal: true })

/** The protocol's codec: msgpack for binary frames, JSON for text frames. */
export const codec: Codec = {
  decode (raw, isBinary) {
    if (isBinary) {
      if (typeof raw === 'string') throw new ProtoError('E_BAD_REQUEST', 'message: binary frame given as a string')
      let tree: unknown
      try {
        tree = unpackr.unpack(raw)
      } catch (err) {
        throw new ProtoError('E_BAD_REQUEST', `message: malformed msgpack (${(err as Error).message})`)
      }
      try {
        return { msg: fromMaps(tree, ''), encoding: 'msgpack' }
      } catch (err) {
        const id = tree instanceof Map && isRequestIdValue(tree.get('id')) ? tree.get('id') as RequestId : null
        const e = err as ProtoError
        throw new ProtoError(e.code, e.message, id, e.details)
      }
    }
    let text: string
    try {
      text = typeof raw === 'string' ? raw : utf8.decode(raw)
    } catch {
      throw new ProtoError('E_BAD_REQUEST', 'message: text frame is not valid UTF-8')
    }
    try {
      return { msg: parseMessage(text), encoding: 'json' }
    } catch (err) {
      if (err instanceof BytesFieldError) throw new ProtoError('E_BAD_REQUEST', err.message, peekJsonId(text), { field: 'bytes' })
      throw new ProtoError('E_BAD_REQUEST', `message: malformed JSON (${(err as Error).message})`)
    }
  },
  encode (msg, encoding) {
    if (encoding === 'msgpack') return packr.pack(toMsgpackValue(msg)) as Uint8Array
    if (isObject(msg) && msg.ok instanceof Uint8Array) {
      return JSON.stringify({ ...msg, ok: toBase64(msg.ok), encoding: 'base64' })
    }
    return stringifyMessage(msg)
  },
}

/**
 * Undo the JSON bytes convention on a decoded reply: when `encoding` is
 * 'base64', `ok` becomes a Uint8Array. Returns the reply unchanged otherwise.
 */
export function reviveBytes (msg: unknown): unknown {
  if (isObject(msg) && msg.encoding === 'base64' && typeof msg.ok === 'string') {
    const { encoding: _e, ...rest } = msg
    return { ...rest, ok: fromBase64(msg.ok) }
  }
  return msg
}

/** Deepest nesting fromMaps follows (values are bounded more tightly by validation, proto/values.ts). */
const MAX_FRAME_DEPTH = 1024

/**
 * Turn decoded msgpack maps into plain objects, refusing a key that is not
 * a string (ProtoError E_BAD_REQUEST naming where). An own `__proto__` key
 * stays a key.
 */
function fromMaps (x: unknown, at: string, depth = 0): unknown {
  if (typeof x !== 'object' || x === null || x instanceof Uint8Array) return x
  if (depth > MAX_FRAME_DEPTH) throw new ProtoError('E_BAD_REQUEST', `message: nesting deeper than ${MAX_FRAME_DEPTH}`)
  if (Array.isArray(x)) {
    for (let i = 0; i < x.length; i++) x[i] = fromMaps(x[i], `${at}/${i}`, depth + 1)
    return x
  }
  if (!(x instanceof Map)) return x
  const out: Record<string, unknown> = {}
  for (const [k, v] of x) {
    if (typeof k !== 'string') {
      const field = at === '' ? 'message' : at.slice(1).split('/')[0]
      throw new ProtoError('E_BAD_REQUEST', `${field}: a map key must be a string, got ${typeof k} ${String(k).slice(0, 40)} at ${at === '' ? 'the top level' : at}`, null, { field })
    }
    setKey(out, k, fromMaps(v, `${at}/${pointerToken(k)}`, depth + 1))
  }
  return out
}

/** The request id of a JSON text when it can be read cheaply and validly, else null (for error replies). */
function peekJsonId (text: string): RequestId | null {
  try {
    const m: unknown = JSON.parse(text)
    return isObject(m) && isRequestIdValue(m.id) ? m.id : null
  } catch { return null }
}
