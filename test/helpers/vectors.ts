/**
 * The conformance vectors of proto/vectors/ (format: proto/vectors/README.md):
 * loading, expanding markers into request values, and matching replies.
 * The Python package implements the same (client/python/tests/test_vectors.py).
 */
import fs from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

/** The vectors file of protocol version 1. */
export const VECTORS_FILE = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../proto/vectors/v1.json')

/** One vector: a request and the result or error expected. */
export interface Vector {
  name: string
  request: Record<string, unknown>
  ok?: unknown
  error?: { code: string; details?: unknown }
  /** keep the result under this name for later `$var`s */
  save?: string
}

/** The vectors and the file's variables. */
export function loadVectors (file = VECTORS_FILE): { vectors: Vector[]; variables: Record<string, unknown> } {
  const j = JSON.parse(fs.readFileSync(file, 'utf8')) as { vectors: Vector[]; variables?: Record<string, unknown> }
  return { vectors: j.vectors, variables: j.variables ?? {} }
}

function isMap (x: unknown): x is Record<string, unknown> {
  return typeof x === 'object' && x !== null && !Array.isArray(x) && !(x instanceof Uint8Array)
}

/** The value of `$var` NAME or NAME.field.field… in `vars`; throws when absent. */
export function lookup (name: string, vars: Record<string, unknown>): unknown {
  const [head, ...rest] = name.split('.')
  if (!(head in vars)) throw new Error(`vector variable ${name}: no ${head}`)
  let x = vars[head]
  for (const k of rest) {
    if (!isMap(x) || !(k in x)) throw new Error(`vector variable ${name}: no ${k}`)
    x = x[k]
  }
  return x
}

/** An integer from `$int` digits: a number when safe, else a bigint (as the client decodes it). */
function int (digits: string): number | bigint {
  const b = BigInt(digits)
  return b >= BigInt(Number.MIN_SAFE_INTEGER) && b <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(b) : b
}

/** A request value with its markers replaced: `$var`, `$int` (number or bigint), `$bytes` (Uint8Array). */
export function expand (x: unknown, vars: Record<string, unknown>): unknown {
  if (Array.isArray(x)) return x.map(v => expand(v, vars))
  if (!isMap(x)) return x
  if (typeof x.$var === 'string') return expand(lookup(x.$var, vars), vars)
  if (typeof x.$int === 'string') return int(x.$int)
  if (typeof x.$bytes === 'string') return new Uint8Array(Buffer.from(x.$bytes, 'base64'))
  const out: Record<string, unknown> = {}
  for (const [k, v] of Object.entries(x)) out[k] = expand(v, vars)
  return out
}

function typeOf (x: unknown): string {
  if (x === null) return 'null'
  if (Array.isArray(x)) return 'array'
  if (x instanceof Uint8Array) return 'bytes'
  if (typeof x === 'bigint') return 'integer'
  if (typeof x === 'number') return Number.isInteger(x) ? 'integer' : 'number'
  return typeof x === 'object' ? 'object' : typeof x
}

function show (x: unknown): string {
  try { return JSON.stringify(x, (_k, v) => typeof v === 'bigint' ? `${v}n` : v instanceof Uint8Array ? `bytes(${Buffer.from(v).toString('base64')})` : v) } catch { return String(x) }
}

/** Null when `got` matches the expectation `exp` (markers as in README), else what differs and where. */
export function mismatch (exp: unknown, got: unknown, vars: Record<string, unknown>, at = ''): string | null {
  const here = at === '' ? 'the result' : at
  if (isMap(exp)) {
    if (typeof exp.$var === 'string') return mismatch(lookup(exp.$var, vars), got, vars, at)
    if (typeof exp.$int === 'string') {
      const ok = (typeof got === 'number' && Number.isInteger(got) && BigInt(got) === BigInt(exp.$int)) || (typeof got === 'bigint' && got === BigInt(exp.$int))
      return ok ? null : `${here}: expected the integer ${exp.$int}, got ${show(got)}`
    }
    if (typeof exp.$bytes === 'string') return mismatch(new Uint8Array(Buffer.from(exp.$bytes, 'base64')), got, vars, at)
    if (typeof exp.$type === 'string') {
      const t = typeOf(got)
      const ok = exp.$type === 'any' || t === exp.$type || (exp.$type === 'number' && t === 'integer')
      return ok ? null : `${here}: expected a value of type ${exp.$type}, got ${show(got)}`
    }
    if (!isMap(got)) return `${here}: expected a map, got ${show(got)}`
    const keys = Object.keys(exp).filter(k => k !== '$partial')
    if (exp.$partial !== true) {
      const extra = Object.keys(got).filter(k => !keys.includes(k))
      if (extra.length > 0) return `${here}: unexpected keys ${extra.join(', ')}`
    }
    for (const k of keys) {
      if (!(k in got)) return `${here}: missing key ${k}`
      const m = mismatch(exp[k], got[k], vars, `${at}/${k}`)
      if (m !== null) return m
    }
    return null
  }
  if (Array.isArray(exp)) {
    if (!Array.isArray(got) || got.length !== exp.length) return `${here}: expected an array of ${exp.length}, got ${show(got)}`
    for (let i = 0; i < exp.length; i++) {
      const m = mismatch(exp[i], got[i], vars, `${at}/${i}`)
      if (m !== null) return m
    }
    return null
  }
  if (exp instanceof Uint8Array) {
    return got instanceof Uint8Array && Buffer.from(got).equals(Buffer.from(exp)) ? null : `${here}: expected ${show(exp)}, got ${show(got)}`
  }
  if (typeof exp === 'number' || typeof exp === 'bigint') {
    const ok = typeof got === 'number' || typeof got === 'bigint'
      ? (Number.isInteger(Number(exp)) && (typeof got === 'bigint' || Number.isInteger(got)) ? BigInt(exp) === BigInt(got) : Number(exp) === Number(got))
      : false
    return ok ? null : `${here}: expected ${show(exp)}, got ${show(got)}`
  }
  return exp === got ? null : `${here}: expected ${show(exp)}, got ${show(got)}`
}
