/**
 * Names as bytes at the Node boundary (issue 18; the mapping is
 * proto/names.ts, PEP 383 surrogateescape). Inside, a name is a string;
 * wherever it reaches the operating system (fs calls, the kernel through
 * FUSE) it goes as its exact bytes, and whatever comes back is decoded
 * losslessly. Strings of valid UTF-8 take the fast paths and stay what they
 * were.
 */
import fs from 'node:fs'
import { decodeName, encodeName, isByteName } from '../proto/names.js'

export { decodeName, encodeName, isByteName, NameEncodingError } from '../proto/names.js'

/** The bytes of a name (or path) as a Buffer. Throws NameEncodingError (see encodeName). */
export function nameBuffer (s: string): Buffer {
  if (!isByteName(s)) return Buffer.from(s, 'utf8')
  const b = encodeName(s)
  return Buffer.from(b.buffer, b.byteOffset, b.byteLength)
}

/** The string of a name's bytes (decodeName), with Node's fast path for valid UTF-8. */
export function nameOfBuffer (b: Buffer): string {
  const s = b.toString('utf8')
  // U+FFFD is either in the name or stands for bytes that are not UTF-8: only then look closer
  return s.includes('\ufffd') ? decodeName(b) : s
}

/**
 * A path for Node's fs calls: the string itself when it is valid UTF-8 (Node
 * encodes it to the same bytes), else a Buffer of its exact bytes.
 */
export function osPath (p: string): string | Buffer {
  return isByteName(p) ? nameBuffer(p) : p
}

/** The names of a directory on a native filesystem (readdir), decoded losslessly. */
export function readdirNames (dir: string): string[] {
  return fs.readdirSync(osPath(dir), { encoding: 'buffer' }).map(nameOfBuffer)
}

/** The target of a symlink on a native filesystem (readlink), decoded losslessly. */
export function readlinkName (p: string): string {
  return nameOfBuffer(fs.readlinkSync(osPath(p), { encoding: 'buffer' }))
}

/** Length in bytes of a name on disk (an escaped byte counts 1, not the 3 of Buffer.byteLength). */
export function nameByteLength (s: string): number {
  return isByteName(s) ? encodeName(s).length : Buffer.byteLength(s)
}
