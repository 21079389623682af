/**
 * POSIX errors of workspace operations, in one place. Workspace code throws
 * FsError with a positive Linux errno; the FUSE adapter turns it into the
 * negative number the kernel expects (see fuse/adapter.ts).
 */
import { constants } from 'node:os'

const E = constants.errno
export const ENOENT = E.ENOENT
export const EEXIST = E.EEXIST
export const ENOTDIR = E.ENOTDIR
export const EISDIR = E.EISDIR
export const ENOTEMPTY = E.ENOTEMPTY
export const EINVAL = E.EINVAL
export const EPERM = E.EPERM
export const EACCES = E.EACCES
export const EBADF = E.EBADF
export const EIO = E.EIO
export const ENOSPC = E.ENOSPC
export const ENODATA = E.ENODATA
export const ERANGE = E.ERANGE
export const ENAMETOOLONG = E.ENAMETOOLONG
export const EXDEV = E.EXDEV
export const EMLINK = E.EMLINK
export const ESTALE = E.ESTALE
export const EFBIG = E.EFBIG
export const ENOSYS = E.ENOSYS
export const ENOTSUP = E.ENOTSUP
export const E2BIG = E.E2BIG
export const EBUSY = E.EBUSY
export const EILSEQ = E.EILSEQ

/** A failed filesystem operation: `errno` is positive (ENOENT = 2). */
export class FsError extends Error {
  constructor (readonly errno: number, message: string) {
    super(message)
    this.name = 'FsError'
  }
}

/** Throws FsError(errno, message). */
export function fail (errno: number, message: string): never {
  throw new FsError(errno, message)
}

/** True when `err` says a filesystem is full: the store's E_NO_SPACE (store/errors.ts StoreNoSpaceError), or a raw ENOSPC/EDQUOT. */
export function isNoSpace (err: unknown): boolean {
  const code = (err as { code?: unknown })?.code
  return code === 'E_NO_SPACE' || code === 'ENOSPC' || code === 'EDQUOT'
}
