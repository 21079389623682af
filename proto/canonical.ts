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
import { INT_MIN, UINT_MAX, mapLeaves } from './values.js'

// a placeholder for an exact integer inside canonicalize: random per process, so
// no string inside a value can be taken for one by accident
const rand = new Uint32Array(4)
globalThis.crypto.getRandomValues(rand)
const PH = `rewindfs-cint-${[...rand].map(n => n.toString(16).padStart(8, '0')).join('')}:`
const PH_RE = new RegExp(`"${PH}(-?[0-9]+)"`, 'g')

/** Copy-on-write walk: exact integers → placeholders. */
function prep (x: unknown): unknown {
  return mapLeaves(x, v => {
    if (typeof v === 'bigint') {
      if (v < INT_MIN || v > UINT_MAX) throw new RangeError(`the integer ${v} is outside -2^63..2^64-1 (the value model)`)
      return PH + v.toString()
    }
    if (typeof v === 'number') return Number.isInteger(v) && !Number.isSafeInteger(v) && v >= -(2 ** 63) && v < 2 ** 64 ? PH + BigInt(v).toString() : v
    return v
  })
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
