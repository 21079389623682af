/**
 * The value model (proto/PROTOCOL.md "Values"): what a context, a segment
 * metadata value (`meta`) and a rewind memory entry may hold, and how each
 * kind travels in the two encodings.
 *
 * A value is null, a boolean, a number, a string, bytes, an array of values
 * or a map from strings to values, nested at most MAX_VALUE_DEPTH deep.
 * Numbers: an integral number in INT_MIN..UINT_MAX is an integer (1.0 and 1
 * are the same value; -0 is 0); any other finite number is a float64.
 * In memory (TypeScript): integers within ±(2^53−1) and floats are `number`,
 * larger integers `bigint`, bytes `Uint8Array`, maps plain objects.
 *
 * On the wire:
 *   - msgpack: integers are msgpack ints (any width is read; beyond 32 bits
 *     the server writes int64/uint64, never float64), floats are float64
 *     (float32 is read), bytes are `bin`, maps have str keys.
 *   - JSON: integers are JSON numbers written with all their digits (also
 *     beyond 2^53: exact text, RFC 8259 §6); floats the shortest text that
 *     reads back as the same float64; bytes are base64 strings (RFC 4648 §4)
 *     named by the message's top-level `bytes` field, an array of JSON
 *     Pointers (RFC 6901) from the message's root.
 *
 * Refused (E_BAD_REQUEST, details.field the request field): NaN and
 * ±Infinity, msgpack ext types (timestamps, msgpack `undefined`), map keys
 * that are not strings, strings with lone surrogates, nesting deeper than
 * MAX_VALUE_DEPTH.
 *
 * No Node-only types.
 */

/** Deepest nesting of arrays and maps in a value (the value itself is depth 0). */
export const MAX_VALUE_DEPTH = 256
/** Smallest integer of the model (int64). */
export const INT_MIN = -(2n ** 63n)
/** Largest integer of the model (uint64). */
export const UINT_MAX = 2n ** 64n - 1n

const NUM_INT_MIN = -(2 ** 63)
const NUM_UINT_LIMIT = 2 ** 64

/** A value that the model refuses: `why` says what, `at` is a JSON Pointer inside the checked value. */
export class ValueError extends Error {
  constructor (readonly why: string, readonly at: string) {
    super(`${why}${at === '' ? '' : ` at ${at}`}`)
    this.name = 'ValueError'
  }
}

/** Escape one JSON Pointer reference token (RFC 6901 §3). */
export function pointerToken (k: string | number): string {
  return String(k).replace(/~/g, '~0').replace(/\//g, '~1')
}

/** Split a JSON Pointer into its reference tokens; throws Error when it does not start with '/' (and is not ''). */
export function parsePointer (p: string): string[] {
  if (p === '') return []
  if (!p.startsWith('/')) throw new Error(`JSON Pointer ${JSON.stringify(p)} does not start with '/'`)
  return p.slice(1).split('/').map(t => t.replace(/~1/g, '/').replace(/~0/g, '~'))
}

/** True when `s` has no lone surrogate (so it encodes to UTF-8 losslessly). */
export function isWellFormedString (s: string): boolean {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i)
    if (c >= 0xd800 && c <= 0xdbff) {
      const d = s.charCodeAt(i + 1)
      if (!(d >= 0xdc00 && d <= 0xdfff)) return false
      i++
    } else if (c >= 0xdc00 && c <= 0xdfff) return false
  }
  return true
}

function isPlainObject (x: object): x is Record<string, unknown> {
  const p = Object.getPrototypeOf(x)
  return p === Object.prototype || p === null
}

/**
 * Check a decoded data value against the model and normalise it in place:
 * a bigint within ±(2^53−1) becomes a number. Returns the value.
 * Throws ValueError (what is refused, and where) for anything outside the model.
 */
export function checkValue (x: unknown): unknown {
  return check(x, 0, '')
}

function check (x: unknown, depth: number, at: string): unknown {
  switch (typeof x) {
    case 'boolean': return x
    case 'string':
      if (!isWellFormedString(x)) throw new ValueError('a string with a lone surrogate (not valid UTF-8)', at)
      return x
    case 'number':
      if (!Number.isFinite(x)) throw new ValueError(`a number that is not finite (${x})`, at)
      return x
    case 'bigint':
      if (x < INT_MIN || x > UINT_MAX) throw new ValueError('an integer outside -2^63..2^64-1', at)
      return x >= BigInt(Number.MIN_SAFE_INTEGER) && x <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(x) : x
    case 'object': {
      if (x === null) return x
      if (x instanceof Uint8Array) return x
      if (depth >= MAX_VALUE_DEPTH) throw new ValueError(`nesting deeper than ${MAX_VALUE_DEPTH} arrays and maps`, at)
      if (Array.isArray(x)) {
        for (let i = 0; i < x.length; i++) x[i] = check(x[i], depth + 1, `${at}/${i}`)
        return x
      }
      if (x instanceof Date) throw new ValueError('a msgpack timestamp (ext -1); send the time as an integer or a string', at)
      if (!isPlainObject(x)) throw new ValueError(`a ${(x as { constructor?: { name?: string } }).constructor?.name ?? 'non-plain'} object`, at)
      for (const k of Object.keys(x)) {
        if (!isWellFormedString(k)) throw new ValueError('a map key with a lone surrogate (not valid UTF-8)', at)
        x[k] = check(x[k], depth + 1, `${at}/${pointerToken(k)}`)
      }
      return x
    }
    case 'undefined': throw new ValueError('undefined (msgpack ext 0); send null', at)
    default: throw new ValueError(`a ${typeof x} is not a value`, at)
  }
}

/** True for a number the model calls an integer that a 32-bit msgpack int cannot hold (so it must travel as int64/uint64). */
function isWideInteger (x: number): boolean {
  return Number.isInteger(x) && (x >= 2 ** 32 || x < -(2 ** 31)) && x >= NUM_INT_MIN && x < NUM_UINT_LIMIT
}

/**
 * Prepare a message for msgpack: every integral number beyond the 32-bit
 * range (within int64/uint64) becomes a bigint, so it is written as an
 * msgpack int64/uint64 rather than a float64. Copy-on-write: returns `x`
 * itself when nothing changes.
 */
export function toMsgpackValue (x: unknown): unknown {
  return mapLeaves(x, v => typeof v === 'number' && isWideInteger(v) ? BigInt(v) : v)
}

/**
 * A copy-on-write map over a value's leaves: arrays and plain objects are
 * walked, `f` is applied to everything else (numbers, bigints, strings,
 * bytes, null, other objects). Returns `x` itself when `f` changed nothing,
 * else copies of just the containers on the changed paths (an own
 * `__proto__` key stays a key). Recursion as deep as the value's nesting
 * (the value model bounds it at 256).
 */
export function mapLeaves (x: unknown, f: (leaf: unknown) => unknown): unknown {
  if (Array.isArray(x)) {
    let out: unknown[] | null = null
    for (let i = 0; i < x.length; i++) {
      const v = mapLeaves(x[i], f)
      if (v !== x[i]) { out ??= x.slice(); out[i] = v }
    }
    return out ?? x
  }
  if (typeof x !== 'object' || x === null || x instanceof Uint8Array || !isPlainObject(x)) return f(x)
  let out: Record<string, unknown> | null = null
  for (const k of Object.keys(x)) {
    const v = mapLeaves(x[k], f)
    if (v !== x[k]) { out ??= copyObject(x); setKey(out, k, v) }
  }
  return out ?? x
}

/** A shallow copy that keeps an own `__proto__` key as a key. */
function copyObject (x: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {}
  for (const k of Object.keys(x)) setKey(out, k, x[k])
  return out
}

/** `o[k] = v`, also for k === '__proto__' (an own property, as JSON.parse makes it). */
export function setKey (o: Record<string, unknown>, k: string, v: unknown): void {
  if (k === '__proto__') Object.defineProperty(o, k, { value: v, enumerable: true, writable: true, configurable: true })
  else o[k] = v
}
