/**
 * JSON text frames under the value model (proto/values.ts, PROTOCOL.md
 * "Values"):
 *   - integers beyond ±(2^53−1) are JSON numbers written with all their
 *     digits; reading, an integer literal (no fraction, no exponent) of
 *     16 or more digits within -2^63..2^64−1 that a float64 cannot hold
 *     exactly becomes a bigint;
 *   - bytes anywhere in a message are base64 strings, and the message's
 *     top-level `bytes` field (an array of JSON Pointers from the message's
 *     root, RFC 6901) names them.
 * Everything else is JSON.parse / JSON.stringify: duplicate map keys keep the
 * last, key order is the JavaScript object's (array-index keys first,
 * ascending; then the rest in insertion order).
 * No Node-only types.
 */
import { fromBase64, toBase64 } from './base64.js'
import { INT_MIN, parsePointer, pointerToken, setKey, UINT_MAX } from './values.js'

/** The name of the top-level field that lists where bytes are. */
export const BYTES_FIELD = 'bytes'

// a placeholder for an exact integer inside JSON.stringify/JSON.parse: random per process,
// so no string a client sends can be taken for one by accident
const rand = new Uint32Array(4)
globalThis.crypto.getRandomValues(rand)
const PH = `rewindfs-int-${[...rand].map(n => n.toString(16).padStart(8, '0')).join('')}:`
const PH_RE = new RegExp(`"${PH}(-?[0-9]+)"`, 'g')

/** A `bytes` field that cannot be applied; `message` says why. */
export class BytesFieldError extends Error {
  constructor (message: string) {
    super(message)
    this.name = 'BytesFieldError'
  }
}

function isPlainObject (x: object): x is Record<string, unknown> {
  const p = Object.getPrototypeOf(x)
  return p === Object.prototype || p === null
}

/** Copy-on-write walk: bytes → base64 (their pointers pushed to `ptrs`), exact integers → placeholders. */
function prep (x: unknown, at: string, ptrs: string[]): unknown {
  if (typeof x === 'bigint') return PH + x.toString()
  if (typeof x === 'number') {
    return Number.isInteger(x) && !Number.isSafeInteger(x) && x >= -(2 ** 63) && x < 2 ** 64 ? PH + BigInt(x).toString() : x
  }
  if (typeof x !== 'object' || x === null) return x
  if (x instanceof Uint8Array) { ptrs.push(at); return toBase64(x) }
  if (Array.isArray(x)) {
    let out: unknown[] | null = null
    for (let i = 0; i < x.length; i++) {
      const v = prep(x[i], `${at}/${i}`, ptrs)
      if (v !== x[i]) { out ??= x.slice(); out[i] = v }
    }
    return out ?? x
  }
  if (!isPlainObject(x)) return x
  let out: Record<string, unknown> | null = null
  for (const k of Object.keys(x)) {
    const v = prep(x[k], `${at}/${pointerToken(k)}`, ptrs)
    if (v !== x[k]) {
      if (out === null) { out = {}; for (const j of Object.keys(x)) setKey(out, j, x[j]) }
      setKey(out, k, v)
    }
  }
  return out ?? x
}

/**
 * The JSON text of a message: integers exact, bytes as base64 named by a
 * top-level `bytes` field (added only when there are bytes). Throws
 * TypeError when `msg` is an object that already has a `bytes` field and
 * holds bytes (the two cannot both be sent).
 */
export function stringifyMessage (msg: unknown): string {
  const ptrs: string[] = []
  let out = prep(msg, '', ptrs)
  if (ptrs.length > 0) {
    if (typeof out !== 'object' || out === null || Array.isArray(out) || ptrs.includes('')) throw new TypeError('bytes can be sent in JSON only inside a message object')
    if (BYTES_FIELD in out) throw new TypeError(`a message with bytes cannot have its own "${BYTES_FIELD}" field`)
    out = { ...out, [BYTES_FIELD]: ptrs }
  }
  const text = JSON.stringify(out)
  return text.includes(PH) ? text.replace(PH_RE, '$1') : text
}

const SAFE_MAX = BigInt(Number.MAX_SAFE_INTEGER)

/**
 * Replace every integer literal that a float64 cannot hold exactly (outside
 * ±(2^53−1), within -2^63..2^64−1, valid JSON syntax) by a placeholder
 * string; other text is left as it is (strings are skipped).
 */
function markWideIntegers (text: string): string {
  const parts: string[] = []
  let last = 0
  const n = text.length
  for (let i = 0; i < n;) {
    const c = text.charCodeAt(i)
    if (c === 0x22) { // a string: skip to its closing quote
      i++
      while (i < n) {
        const d = text.charCodeAt(i)
        if (d === 0x5c) i += 2
        else if (d === 0x22) { i++; break } else i++
      }
      continue
    }
    if (c === 0x2d || (c >= 0x30 && c <= 0x39)) {
      const start = i
      i++
      while (i < n) {
        const d = text.charCodeAt(i)
        if ((d >= 0x30 && d <= 0x39) || d === 0x2e || d === 0x65 || d === 0x45 || d === 0x2b || d === 0x2d) i++
        else break
      }
      const tok = text.slice(start, i)
      if (tok.length >= 16 && /^-?(0|[1-9][0-9]*)$/.test(tok)) {
        const b = BigInt(tok)
        if ((b > SAFE_MAX || b < -SAFE_MAX) && b >= INT_MIN && b <= UINT_MAX) {
          parts.push(text.slice(last, start), `"${PH}${tok}"`)
          last = i
        }
      }
      continue
    }
    i++
  }
  if (parts.length === 0) return text
  parts.push(text.slice(last))
  return parts.join('')
}

function revive (_k: string, v: unknown): unknown {
  return typeof v === 'string' && v.startsWith(PH) ? BigInt(v.slice(PH.length)) : v
}

/**
 * Parse the JSON text of a message: integers exact (bigint beyond 2^53),
 * and, when the message is an object with a `bytes` field, the strings it
 * names decoded to Uint8Array (the field itself removed).
 * Throws SyntaxError (malformed JSON) or BytesFieldError (a `bytes` field
 * that is not an array of pointers to base64 strings in the message).
 */
export function parseMessage (text: string): unknown {
  const msg: unknown = /[0-9]{16}/.test(text) ? JSON.parse(markWideIntegers(text), revive) : JSON.parse(text)
  if (typeof msg === 'object' && msg !== null && !Array.isArray(msg) && BYTES_FIELD in msg) {
    applyBytes(msg as Record<string, unknown>)
  }
  return msg
}

function applyBytes (msg: Record<string, unknown>): void {
  const ptrs = msg[BYTES_FIELD]
  delete msg[BYTES_FIELD]
  if (!Array.isArray(ptrs) || !ptrs.every(p => typeof p === 'string')) {
    throw new BytesFieldError(`${BYTES_FIELD}: expected an array of JSON Pointers (strings) naming base64 strings in the message`)
  }
  for (const p of ptrs as string[]) {
    let tokens: string[]
    try { tokens = parsePointer(p) } catch (e) { throw new BytesFieldError(`${BYTES_FIELD}: ${(e as Error).message}`) }
    if (tokens.length === 0) throw new BytesFieldError(`${BYTES_FIELD}: the pointer "" names the whole message, which cannot be bytes`)
    let parent: unknown = msg
    for (let i = 0; i < tokens.length - 1; i++) parent = child(parent, tokens[i], p)
    const key = tokens[tokens.length - 1]
    const s = child(parent, key, p)
    if (typeof s !== 'string') throw new BytesFieldError(`${BYTES_FIELD}: ${JSON.stringify(p)} names a ${s === null ? 'null' : Array.isArray(s) ? 'array' : typeof s}, not a base64 string`)
    let b: Uint8Array
    try { b = fromBase64(s) } catch (e) { throw new BytesFieldError(`${BYTES_FIELD}: ${JSON.stringify(p)} is not base64 (${(e as Error).message})`) }
    if (Array.isArray(parent)) parent[Number(key)] = b
    else setKey(parent as Record<string, unknown>, key, b)
  }
}

function child (x: unknown, token: string, p: string): unknown {
  if (Array.isArray(x)) {
    if (!/^(0|[1-9][0-9]*)$/.test(token) || Number(token) >= x.length) throw new BytesFieldError(`${BYTES_FIELD}: ${JSON.stringify(p)}: no array element ${JSON.stringify(token)}`)
    return x[Number(token)]
  }
  if (typeof x === 'object' && x !== null && !(x instanceof Uint8Array) && Object.prototype.hasOwnProperty.call(x, token)) return (x as Record<string, unknown>)[token]
  throw new BytesFieldError(`${BYTES_FIELD}: ${JSON.stringify(p)}: nothing at ${JSON.stringify(token)}`)
}
