/**
 * The frame codec, behind an interface (STYLE.md "Formats and protocols").
 * Binary frames carry msgpack (msgpackr, useRecords: false, so any msgpack
 * library reads them); text frames carry JSON. A reply uses the request's
 * encoding. Bytes: msgpack `bin`; in JSON, a reply whose `ok` is bytes is
 * sent as a base64 string with `encoding: 'base64'` beside it.
 * No Node-only types: frames are Uint8Array or string.
 */
import { Packr } from 'msgpackr'
import { ProtoError } from './errors.js'
import { isObject, type Encoding } from './messages.js'

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

const packr = new Packr({ useRecords: false, mapsAsObjects: true, moreTypes: false })
const utf8 = new TextDecoder('utf-8', { fatal: true })

const B64 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/'
const B64_INDEX = new Int16Array(128).fill(-1)
for (let i = 0; i < B64.length; i++) B64_INDEX[B64.charCodeAt(i)] = i

/** Standard base64 (RFC 4648 §4, with padding) of bytes. */
export function toBase64 (b: Uint8Array): string {
  let out = ''
  let i = 0
  const parts: string[] = []
  for (; i + 2 < b.length; i += 3) {
    const n = (b[i] << 16) | (b[i + 1] << 8) | b[i + 2]
    out += B64[n >> 18] + B64[(n >> 12) & 63] + B64[(n >> 6) & 63] + B64[n & 63]
    if (out.length >= 8192) { parts.push(out); out = '' }
  }
  if (i < b.length) {
    const n = (b[i] << 16) | ((i + 1 < b.length ? b[i + 1] : 0) << 8)
    out += B64[n >> 18] + B64[(n >> 12) & 63] + (i + 1 < b.length ? B64[(n >> 6) & 63] : '=') + '='
  }
  parts.push(out)
  return parts.join('')
}

/** Decode standard base64 (padding optional). Throws on a character outside the alphabet. */
export function fromBase64 (s: string): Uint8Array {
  const clean = s.replace(/=+$/, '')
  if (clean.length % 4 === 1) throw new Error('invalid base64 length')
  const out = new Uint8Array(Math.floor(clean.length * 3 / 4))
  let o = 0
  let acc = 0
  let bits = 0
  for (let i = 0; i < clean.length; i++) {
    const c = clean.charCodeAt(i)
    const v = c < 128 ? B64_INDEX[c] : -1
    if (v < 0) throw new Error('invalid base64 character')
    acc = (acc << 6) | v
    bits += 6
    if (bits >= 8) { bits -= 8; out[o++] = (acc >> bits) & 255 }
  }
  return out
}

/** The protocol's codec: msgpack for binary frames, JSON for text frames. */
export const codec: Codec = {
  decode (raw, isBinary) {
    if (isBinary) {
      if (typeof raw === 'string') throw new ProtoError('E_BAD_REQUEST', 'message: binary frame given as a string')
      try {
        return { msg: packr.unpack(raw), encoding: 'msgpack' }
      } catch (err) {
        throw new ProtoError('E_BAD_REQUEST', `message: malformed msgpack (${(err as Error).message})`)
      }
    }
    let text: string
    try {
      text = typeof raw === 'string' ? raw : utf8.decode(raw)
    } catch {
      throw new ProtoError('E_BAD_REQUEST', 'message: text frame is not valid UTF-8')
    }
    try {
      return { msg: JSON.parse(text), encoding: 'json' }
    } catch (err) {
      throw new ProtoError('E_BAD_REQUEST', `message: malformed JSON (${(err as Error).message})`)
    }
  },
  encode (msg, encoding) {
    if (encoding === 'msgpack') return packr.pack(msg) as Uint8Array
    if (isObject(msg) && msg.ok instanceof Uint8Array) {
      return JSON.stringify({ ...msg, ok: toBase64(msg.ok), encoding: 'base64' })
    }
    return JSON.stringify(msg)
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
