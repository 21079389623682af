/**
 * The low-level adapter's answers to requests that name an old incarnation
 * (issue 13: a file's node id from before a restore that changed it;
 * fuse/old-incarnation.ts holds its content, fuse/incarnations.ts the
 * table). fuse/ll-adapter.ts routes a request here when its node id is an
 * old incarnation the kernel still holds.
 */
import fs from 'node:fs'
import os from 'node:os'
import type { LowLevelOps, Open, Request } from './ll/session.js'
import { FsError } from '../base/errno.js'
import { nameBuffer } from '../base/names.js'
import type { Incarnations } from './incarnations.js'
import type { OldIncarnation } from './old-incarnation.js'
import { attrOf, changeOf, seekIn, xattrNameOf, NODATA } from './ll-answers.js'

const E = os.constants.errno

/**
 * The handlers of requests that name an old incarnation (a file's node id
 * from before a restore that changed it: fuse/old-incarnation.ts), by
 * operation name; each gets the incarnation, then the request's own
 * arguments. Nothing here reads or changes the workspace, and nothing is
 * attributed to a tool call (the live file is not changed). An operation
 * not listed is one on a directory: ENOTDIR (old incarnations are never
 * directories).
 */
export function oldIncarnationOps (table: Incarnations, readBuf: Buffer, raw: LowLevelOps): Record<string, (o: OldIncarnation, ...a: any[]) => unknown> {
  return {
    getattr: (o) => attrOf(o.stat()),
    setattr: (o, _r, _ino, _inc, set) => attrOf(o.setattr(changeOf(set), nowNs())),
    readlink: (o) => nameBuffer(o.readlink()),
    open: (o, _r: Request, ino: number, inc: number, flags: number): Open => {
      const fh = table.oldHandle()
      if ((flags & fs.constants.O_TRUNC) !== 0) o.setattr({ size: 0 }, nowNs())
      table.opened(fh, ino, inc)
      return { fh, keepCache: true, noflush: true }
    },
    read: (o, _r, _ino, _inc, _fh, size: number, offset: number) => {
      const b = size <= readBuf.length ? readBuf.subarray(0, size) : Buffer.allocUnsafe(size)
      return b.subarray(0, o.read(b, size, offset))
    },
    write: (o, _r, _ino, _inc, _fh, data: Buffer, offset: number, flags: number) => o.write(data, offset, (flags & fs.constants.O_APPEND) !== 0, nowNs()),
    release: (_o, ...a: any[]) => (raw.release as (...x: any[]) => unknown)(...a),
    // nothing of it is durable: its writes are dropped with it, as those to a file unlinked while open are
    fsync: () => undefined,
    getxattr: (o, _r, _ino, _inc, name: Buffer) => {
      const v = o.xattr(xattrNameOf(name))
      if (v === undefined) throw NODATA
      return v
    },
    listxattr: (o, r: Request) => o.listxattr().filter((n) => r.uid === 0 || !n.startsWith('trusted.')).map((n) => Buffer.from(n)),
    setxattr: (o, _r, _ino, _inc, name: Buffer, value: Buffer, flags: number) => { o.setxattr(xattrNameOf(name), value, flags, nowNs()) },
    removexattr: (o, _r, _ino, _inc, name: Buffer) => { o.removexattr(xattrNameOf(name), nowNs()) },
    lseek: (o, _r, _ino, _inc, _fh, offset: number, whence: number) => seekIn(o.stat().size, () => o.dataRanges(), offset, whence),
    // as for a file unlinked while open: no new name for it (the kernel refuses too once it has seen nlink 0)
    link: () => { throw new FsError(E.ENOENT, 'a file a restore replaced cannot be linked back into the workspace') },
    statfs: (_o, ...a: any[]) => (raw.statfs as (...x: any[]) => unknown)(...a)
  }
}

/** A request on an old incarnation that only a directory could take (lookup, mkdir, opendir, ...). */
export function notADirectory (): never { throw new FsError(E.ENOTDIR, 'not a directory (a file as it was before a restore)') }

/** Now in ns since the epoch (times an old incarnation's own changes set). */
function nowNs (): bigint { return BigInt(Date.now()) * 1000000n }
