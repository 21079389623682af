/**
 * Canonical JSON text of a value, for hashing (the effect ledger's hash
 * chain, store/effect-chain.ts) and for request identities
 * (effects/identity.ts): RFC 8785 (JSON Canonicalization Scheme; npm
 * `canonicalize`: map keys sorted by UTF-16 code units, no whitespace,
 * numbers in ECMAScript's shortest form), with one extension for the value
 * model (PROTOCOL.md "Values"): an integer beyond ±(2^53−1) within
 * -2^63..2^64−1 — a bigint, or an integral number that large — is written
 * with all its digits, as proto/json.ts writes it on the wire, where RFC
 * 8785 would round it to a float64. So two values that the value model
 * calls equal have the same text, and two that differ by one in the 64th
 * bit do not.
 *
 * No Node-only types.
 */
import canonicalize from 'canonicalize'
import { INT_MIN, UINT_MAX } from './values.js'

// a placeholder for an exact integer inside canonicalize: random per process, so
// no string inside a value can be taken for one by accident
const rand = new Uint32Array(4)
globalThis.crypto.getRandomValues(rand)
const PH = `rewindfs-cint-${[...rand].map(n => n.toString(16).padStart(8, '0')).join('')}:`
const PH_RE = new RegExp(`"${PH}(-?[0-9]+)"`, 'g')

function isPlainObject (x: object): x is Record<string, unknown> {
  const p = Object.getPrototypeOf(x)
  return p === Object.prototype || p === null
}

/** Copy-on-write walk: exact integers → placeholders. */
function prep (x: unknown): unknown {
  if (typeof x === 'bigint') {
    if (x < INT_MIN || x > UINT_MAX) throw new RangeError(`the integer ${x} is outside -2^63..2^64-1 (the value model)`)
    return PH + x.toString()
  }
  if (typeof x === 'number') return Number.isInteger(x) && !Number.isSafeInteger(x) && x >= -(2 ** 63) && x < 2 ** 64 ? PH + BigInt(x).toString() : x
  if (typeof x !== 'object' || x === null || x instanceof Uint8Array) return x
  if (Array.isArray(x)) {
    let out: unknown[] | null = null
    for (let i = 0; i < x.length; i++) {
      const v = prep(x[i])
      if (v !== x[i]) { out ??= x.slice(); out[i] = v }
    }
    return out ?? x
  }
  if (!isPlainObject(x)) return x
  let out: Record<string, unknown> | null = null
  for (const k of Object.keys(x)) {
    const v = prep(x[k])
    if (v !== x[k]) {
      if (out === null) { out = Object.create(null) as Record<string, unknown>; for (const j of Object.keys(x)) Object.defineProperty(out, j, { value: x[j], enumerable: true, writable: true, configurable: true }) }
      Object.defineProperty(out, k, { value: v, enumerable: true, writable: true, configurable: true })
    }
  }
  return out ?? x
}

/**
 * The canonical JSON text of `value` (see the module comment). Throws
 * TypeError when `value` is not JSON (undefined at the top, a function),
 * Error from `canonicalize` for NaN, Infinity, a lone surrogate or a cycle,
 * RangeError for an integer outside -2^63..2^64−1.
 */
export function canonicalJson (value: unknown): string {
  const text = canonicalize(prep(value))
  if (text === undefined) throw new TypeError('not a JSON value')
  return text.replace(PH_RE, '$1')
}
