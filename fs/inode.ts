/**
 * The inode record: everything the workspace versions about one file,
 * directory, symlink or special file. Records inside a sealed generation are
 * immutable; the live generation clones a record before its first change
 * (copy-on-write, see daemon/live.ts).
 */
import type { Ino } from '../base/types.js'
import { BlockList } from './blocklist.js'
import { decodeName, encodeName, isByteName } from '../base/names.js'

/** File type bits of st_mode (Linux values, <sys/stat.h>). */
export const S_IFMT = 0o170000
export const S_IFREG = 0o100000
export const S_IFDIR = 0o040000
export const S_IFLNK = 0o120000
export const S_IFIFO = 0o010000
export const S_IFSOCK = 0o140000
export const S_IFCHR = 0o020000
export const S_IFBLK = 0o060000

/** Inode number of the workspace root (FUSE convention). */
export const ROOT_INO: Ino = 1

/**
 * Where content that has not been copied into the store still lives: the
 * workspace directory as it was when mount session `s` started, at
 * workspace-relative path `p` ('' is the root). A file with `lower` has no
 * `blocks` yet; a directory with `lower` has not been listed yet.
 */
export interface LowerRef {
  s: number
  p: string
}

/** One name of an inode: the directory that holds it and the entry name. */
export type Link = [parent: Ino, name: string]

/** Versioned state of one inode. Times are nanoseconds since the Unix epoch. */
export interface InodeRecord {
  ino: Ino
  /** full st_mode: type bits and all 12 permission bits */
  mode: number
  uid: number
  gid: number
  /** device number for character and block devices, else 0 */
  rdev: number
  /** bytes for files, target length for symlinks, 0 for the rest (directories report a computed size) */
  size: number
  atime: bigint
  mtime: bigint
  ctime: bigint
  /** names of this inode; a directory has exactly one (the root has none), a hard-linked file several */
  links: Link[]
  /** extended attributes, name → value; absent when there are none */
  xattrs?: Record<string, Uint8Array>
  /** number of subdirectories (directories only; st_nlink is 2 + subdirs) */
  subdirs?: number
  /** directory entries, name → ino; absent on a directory whose listing is still lower */
  entries?: Map<string, Ino>
  /** symlink target */
  target?: string
  /** file content, one BlockId per BLOCK_SIZE bytes, holes not stored (fs/blocklist.ts); absent while content is lower */
  blocks?: BlockList
  /** content or listing still in the lower layer */
  lower?: LowerRef
  /** identity of the lower file this inode came from ("dev:ino"), to join hard links of the lower layer */
  lowerKey?: string
  /**
   * names of a lower hard link not seen yet: in directories not listed yet,
   * or outside the workspace; st_nlink counts them (as the directory did)
   */
  unseen?: number
}

/** Type of an inode from its mode. */
export function isDir (r: InodeRecord): boolean { return (r.mode & S_IFMT) === S_IFDIR }
export function isFile (r: InodeRecord): boolean { return (r.mode & S_IFMT) === S_IFREG }
export function isSymlink (r: InodeRecord): boolean { return (r.mode & S_IFMT) === S_IFLNK }

/** Name of a type for messages and the protocol. */
export function typeName (mode: number): 'file' | 'dir' | 'symlink' | 'fifo' | 'socket' | 'chardev' | 'blockdev' {
  switch (mode & S_IFMT) {
    case S_IFREG: return 'file'
    case S_IFDIR: return 'dir'
    case S_IFLNK: return 'symlink'
    case S_IFIFO: return 'fifo'
    case S_IFSOCK: return 'socket'
    case S_IFCHR: return 'chardev'
    default: return 'blockdev'
  }
}

/**
 * A shallow copy that the live generation may change without touching the
 * sealed original: the entries map, links, blocks and xattrs are copied too
 * (O(entries + blocks holding data) once per inode per generation).
 */
export function cloneRecord (r: InodeRecord): InodeRecord {
  const c: InodeRecord = { ...r, links: r.links.map(l => [l[0], l[1]] as Link) }
  if (r.entries) c.entries = new Map(r.entries)
  if (r.blocks) c.blocks = r.blocks.clone()
  if (r.xattrs) c.xattrs = { ...r.xattrs }
  return c
}

const clockBase = BigInt(Date.now()) * 1000000n - process.hrtime.bigint()

/** Current time in ns since the epoch (wall clock at start-up plus the monotonic clock since). */
export function nowNs (): bigint {
  return clockBase + process.hrtime.bigint()
}

/**
 * A name (entry name, symlink target, lower path) in the store's form: the
 * string when it is valid UTF-8, else a msgpack bin of its exact bytes
 * (issue 18: msgpack str is UTF-8, and msgpackr turns a lone surrogate into
 * U+FFFD). FORMAT.md "Names that are not UTF-8".
 */
export function storedName (s: string): string | Uint8Array {
  return isByteName(s) ? encodeName(s) : s
}

/** Inverse of storedName: a str as it is, a bin decoded losslessly (base/names.ts). */
export function nameOfStored (v: string | Uint8Array): string {
  return typeof v === 'string' ? v : decodeName(v)
}

/** Plain-object form of a record for msgpack (Maps become [name, ino] pairs; names not valid UTF-8 become bin, see storedName). */
export function encodeRecord (r: InodeRecord): Record<string, unknown> {
  const o: Record<string, unknown> = { ...r }
  if (r.links.some(l => isByteName(l[1]))) o.links = r.links.map(l => [l[0], storedName(l[1])])
  if (r.entries) {
    const e: Array<[string | Uint8Array, Ino]> = [...r.entries]
    for (const x of e) if (isByteName(x[0] as string)) x[0] = encodeName(x[0] as string)
    o.entries = e
  }
  if (r.target !== undefined && isByteName(r.target)) o.target = encodeName(r.target)
  if (r.lower && isByteName(r.lower.p)) o.lower = { s: r.lower.s, p: encodeName(r.lower.p) }
  if (r.blocks) o.blocks = r.blocks.encode()
  return o
}

/** Inverse of encodeRecord; reads format-2 block lists too. Throws TypeError for a malformed block list. */
export function decodeRecord (o: any): InodeRecord {
  const r = o as InodeRecord
  if (Array.isArray(o.links)) for (const l of o.links) if (typeof l[1] !== 'string') l[1] = decodeName(l[1])
  if (Array.isArray(o.entries)) {
    for (const e of o.entries) if (typeof e[0] !== 'string') e[0] = decodeName(e[0])
    r.entries = new Map(o.entries as [string, Ino][])
  }
  if (o.target !== undefined && typeof o.target !== 'string') r.target = decodeName(o.target)
  if (o.lower !== undefined && typeof o.lower.p !== 'string') r.lower = { s: o.lower.s, p: decodeName(o.lower.p) }
  if (o.blocks !== undefined) r.blocks = BlockList.decode(o.blocks)
  for (const k of ['atime', 'mtime', 'ctime'] as const) if (typeof r[k] !== 'bigint') r[k] = BigInt(r[k] as any)
  if (r.xattrs) for (const n of Object.keys(r.xattrs)) r.xattrs[n] = new Uint8Array(r.xattrs[n])
  return r
}
