/**
 * File names are bytes (issue 18). Inside rewindfs a name or path is a
 * JavaScript string decoded from its bytes losslessly, the way Python's
 * PEP 383 "surrogateescape" error handler does
 * (https://peps.python.org/pep-0383/):
 *
 * - valid UTF-8 decodes as usual, so every name that is valid UTF-8 is the
 *   string it always was (stores, map keys and protocol paths unchanged);
 * - each byte 0x80..0xff of a sequence that is not valid UTF-8 (Unicode
 *   Table 3-7: no overlong forms, no surrogates, nothing above U+10FFFF)
 *   becomes the lone surrogate U+DC80..U+DCFF.
 *
 * `encodeName` is the exact inverse, so two different byte strings never
 * decode to the same string and a name reaches the disk, the kernel, the
 * store and the wire with the bytes it came with. Python's os.fsdecode and
 * os.fsencode on Linux use the same mapping, so a decoded path handed to a
 * python3 helper as JSON reaches the same bytes.
 *
 * No Node types here (proto/ is implemented by other languages from
 * PROTOCOL.md): bytes are Uint8Array.
 */

const strict = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true })
const utf8 = new TextEncoder()
/** a lone surrogate (with the u flag a valid pair is one code point and does not match) */
const LONE_SURROGATE = /[\ud800-\udfff]/u

/**
 * True when `s` is a name that is not valid UTF-8 on disk: it holds an
 * escaped byte (a lone surrogate). False for every string decoded from valid
 * UTF-8.
 */
export function isByteName (s: string): boolean {
  return LONE_SURROGATE.test(s)
}

/**
 * Length in bytes of the valid UTF-8 sequence starting at `b[i]`, or 0 when
 * none starts there (Unicode 15, Table 3-7 "Well-Formed UTF-8 Byte
 * Sequences").
 */
function validAt (b: Uint8Array, i: number): number {
  const c = b[i]!
  if (c < 0x80) return 1
  const n = b.length - i
  const cont = (k: number, lo = 0x80, hi = 0xbf): boolean => k < n && b[i + k]! >= lo && b[i + k]! <= hi
  if (c >= 0xc2 && c <= 0xdf) return cont(1) ? 2 : 0
  if (c === 0xe0) return cont(1, 0xa0) && cont(2) ? 3 : 0
  if ((c >= 0xe1 && c <= 0xec) || c === 0xee || c === 0xef) return cont(1) && cont(2) ? 3 : 0
  if (c === 0xed) return cont(1, 0x80, 0x9f) && cont(2) ? 3 : 0
  if (c === 0xf0) return cont(1, 0x90) && cont(2) && cont(3) ? 4 : 0
  if (c >= 0xf1 && c <= 0xf3) return cont(1) && cont(2) && cont(3) ? 4 : 0
  if (c === 0xf4) return cont(1, 0x80, 0x8f) && cont(2) && cont(3) ? 4 : 0
  return 0
}

/**
 * The string of a name's (or path's, or symlink target's) bytes: UTF-8 where
 * valid, each byte of an invalid sequence as U+DC80 + (byte - 0x80)
 * (PEP 383). Never throws; O(bytes).
 */
export function decodeName (b: Uint8Array): string {
  try { return strict.decode(b) } catch {}
  let out = ''
  let i = 0
  while (i < b.length) {
    const n = validAt(b, i)
    if (n === 0) { out += String.fromCharCode(0xdc00 + b[i]!); i++; continue }
    out += strict.decode(b.subarray(i, i + n))
    i += n
  }
  return out
}

/** Thrown by encodeName for a string no byte string decodes to (a lone surrogate outside U+DC80..U+DCFF). */
export class NameEncodingError extends RangeError {
  constructor (s: string, readonly at: number) {
    super(`not a file name: a lone surrogate U+${s.charCodeAt(at).toString(16).toUpperCase()} at index ${at} (only U+DC80..U+DCFF stand for bytes 0x80..0xff that are not UTF-8)`)
  }
}

/**
 * The bytes of a name decoded by decodeName (its exact inverse). Throws
 * NameEncodingError for a lone surrogate that is not an escaped byte
 * (U+D800..U+DC7F, U+DD00..U+DFFF): no byte string decodes to it. O(length).
 */
export function encodeName (s: string): Uint8Array {
  if (!LONE_SURROGATE.test(s)) return utf8.encode(s)
  const out: number[] = []
  let start = 0
  const flush = (end: number): void => { if (end > start) for (const x of utf8.encode(s.slice(start, end))) out.push(x) }
  for (let i = 0; i < s.length; i++) {
    const u = s.charCodeAt(i)
    if (u < 0xd800 || u > 0xdfff) continue
    if (u <= 0xdbff) {
      const v = i + 1 < s.length ? s.charCodeAt(i + 1) : 0
      if (v >= 0xdc00 && v <= 0xdfff) { i++; continue } // a valid pair: encoded with the run
      throw new NameEncodingError(s, i)
    }
    if (u < 0xdc80 || u > 0xdcff) throw new NameEncodingError(s, i)
    flush(i)
    out.push(u - 0xdc00)
    start = i + 1
  }
  flush(s.length)
  return Uint8Array.from(out)
}

/** Operations whose replies carry workspace paths or symlink targets (PROTOCOL.md "Paths that are not UTF-8"). */
export const OPS_WITH_PATHS: ReadonlySet<string> = new Set(['diff', 'stat', 'readdir', 'history', 'restore', 'undo'])

/**
 * A reply value with every string that holds an escaped byte (a path or
 * symlink target that is not UTF-8, see isByteName) replaced by its bytes,
 * which the codec sends as msgpack bin or, in JSON, as base64 named in the
 * message's `bytes` field. Copy-on-write: returns `v` itself when nothing
 * needs it. Map keys are left alone (paths are never keys in replies).
 */
export function namesAsBytes (v: unknown): unknown {
  if (typeof v === 'string') return isByteName(v) ? encodeName(v) : v
  if (v === null || typeof v !== 'object' || v instanceof Uint8Array) return v
  if (Array.isArray(v)) {
    let out: unknown[] | undefined
    for (let i = 0; i < v.length; i++) {
      const x = namesAsBytes(v[i])
      if (x !== v[i]) (out ??= v.slice())[i] = x
    }
    return out ?? v
  }
  let out: Record<string, unknown> | undefined
  for (const [k, x] of Object.entries(v as Record<string, unknown>)) {
    const y = namesAsBytes(x)
    if (y !== x) (out ??= { ...(v as Record<string, unknown>) })[k] = y
  }
  return out ?? v
}

/** Fields of replies (and events) that hold a path or a list of paths, or a symlink target. */
const PATH_FIELDS: ReadonlySet<string> = new Set(['path', 'paths', 'laterPath', 'skipped', 'from', 'to', 'target'])

/**
 * The inverse of namesAsBytes for a client that keeps paths as strings: in
 * a reply of an operation of OPS_WITH_PATHS (or a restore event), each path
 * field (`path`, `paths`, `laterPath`, `skipped`, `from`, `to`, `target`)
 * that arrived as bytes becomes the string decodeName gives (lone surrogates
 * U+DC80..U+DCFF for bytes that are not UTF-8), which such a client sends
 * back as bytes (pathsForWire). Segment metadata (`meta`) is left as it is.
 * Copy-on-write.
 */
export function namesFromBytes (v: unknown, inPath = false): unknown {
  if (v instanceof Uint8Array) return inPath ? decodeName(v) : v
  if (v === null || typeof v !== 'object') return v
  if (Array.isArray(v)) {
    let out: unknown[] | undefined
    for (let i = 0; i < v.length; i++) {
      const x = namesFromBytes(v[i], inPath)
      if (x !== v[i]) (out ??= v.slice())[i] = x
    }
    return out ?? v
  }
  let out: Record<string, unknown> | undefined
  for (const [k, x] of Object.entries(v as Record<string, unknown>)) {
    if (k === 'meta') continue
    const y = namesFromBytes(x, PATH_FIELDS.has(k))
    if (y !== x) (out ??= { ...(v as Record<string, unknown>) })[k] = y
  }
  return out ?? v
}

/** A request's `path` and `paths` with each path that holds an escaped byte as its bytes (the form the server reads). */
export function pathsForWire<T extends object> (args: T): T {
  const a = args as Record<string, unknown>
  let out: Record<string, unknown> | undefined
  if (typeof a.path === 'string' && isByteName(a.path)) (out ??= { ...a }).path = encodeName(a.path)
  if (Array.isArray(a.paths) && a.paths.some(p => typeof p === 'string' && isByteName(p))) {
    (out ??= { ...a }).paths = a.paths.map(p => typeof p === 'string' && isByteName(p) ? encodeName(p) : p)
  }
  return (out ?? a) as T
}
