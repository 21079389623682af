/**
 * Shapes the low-level adapter answers with, shared by its live handlers
 * (fuse/ll-adapter.ts) and those of old incarnations (fuse/old-ops.ts):
 * a workspace Stat as the binding's Attr, setattr's bits as an AttrChange,
 * lseek's SEEK_DATA/SEEK_HOLE over data ranges, xattr names. No state.
 */
import os from 'node:os'
import { SETATTR, type Attr } from './ll/session.js'
import { FsError } from '../base/errno.js'
import { isByteName, nameOfBuffer } from '../base/names.js'
import type { AttrChange, Stat } from '../fs/api.js'

const E = os.constants.errno
const SEEK_DATA = 3
const SEEK_HOLE = 4

/** getxattr's answer for a name the file does not have (no stack trace on the hot path: the kernel asks before every write). */
export const NODATA = new FsError(E.ENODATA, 'no such xattr')

/**
 * An xattr name from the kernel; EILSEQ when it is not UTF-8: the store keeps
 * xattrs in a msgpack map keyed by str, which cannot carry such a name, so it
 * is refused rather than merged with another name.
 */
export function xattrNameOf (b: Buffer): string {
  const s = nameOfBuffer(b)
  if (isByteName(s)) throw new FsError(E.EILSEQ, `an xattr name that is not valid UTF-8 (${b.toString('hex')}) is not supported: refused rather than merged with another name`)
  return s
}

/** The binding's attributes of a workspace stat (st_ino: the inode number, for every incarnation). */
export function attrOf (s: Stat): Attr {
  return { mode: s.mode, nlink: s.nlink, uid: s.uid, gid: s.gid, rdev: s.rdev, size: s.size, blocks: s.blocks, blksize: s.blksize, atime: s.atime, mtime: s.mtime, ctime: s.ctime, ino: s.ino }
}

/** setattr's change (the FUSE_SET_ATTR_* bits) as the workspace's AttrChange. */
export function changeOf (set: { valid: number, mode?: number, uid?: number, gid?: number, size?: number, atime?: bigint, atimeNow?: boolean, mtime?: bigint, mtimeNow?: boolean }): AttrChange {
  const c: AttrChange = {}
  const v = set.valid
  if (v & SETATTR.MODE) c.mode = set.mode
  if (v & SETATTR.UID) c.uid = set.uid
  if (v & SETATTR.GID) c.gid = set.gid
  if (v & SETATTR.SIZE) c.size = set.size
  if (v & SETATTR.ATIME_NOW) c.atime = 'now'
  else if (v & SETATTR.ATIME) c.atime = set.atime
  if (v & SETATTR.MTIME_NOW) c.mtime = 'now'
  else if (v & SETATTR.MTIME) c.mtime = set.mtime
  return c
}

/** lseek with SEEK_DATA / SEEK_HOLE over a file of `size` bytes whose data ranges `rangesOf` gives (ENXIO at or past the end); the kernel answers the other whences itself. */
export function seekIn (size: number, rangesOf: () => Array<[number, number]>, offset: number, whence: number): number {
  if (whence !== SEEK_DATA && whence !== SEEK_HOLE) throw new FsError(E.EINVAL, `lseek whence ${whence} reaches the filesystem only for SEEK_DATA and SEEK_HOLE`)
  if (offset < 0 || offset >= size) throw new FsError(E.ENXIO, `offset ${offset} is at or past the end (${size} bytes)`)
  const ranges = rangesOf()
  if (whence === SEEK_DATA) {
    for (const [start, end] of ranges) if (end > offset) return Math.max(start, offset)
    throw new FsError(E.ENXIO, `no data at or after ${offset}`)
  }
  for (const [start, end] of ranges) {
    if (start > offset) return offset
    if (end > offset) return Math.min(end, size)
  }
  return offset
}
