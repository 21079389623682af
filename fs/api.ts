/**
 * What the FUSE adapter may see of the versioned filesystem: the shapes it
 * hands to the kernel, the operations it calls, and the plan of kernel
 * caches to drop after a restore. No logic. `fuse/` imports this file (and
 * base/) only, never the workspace or history themselves (README "Layout").
 *
 * Paths are workspace paths ('/' is the root). Every operation is
 * synchronous and throws FsError (base/errno.ts) with a positive errno.
 */
import type { Ino } from '../base/types.js'

/** Who is asking: from the FUSE request context. */
export interface Caller { uid: number, gid: number }

/** The stat the adapter hands to the kernel. Times in ns since the epoch; size and blocks in bytes and 512-byte units. */
export interface Stat {
  mode: number; uid: number; gid: number; size: number; nlink: number; ino: number; rdev: number
  blksize: number; blocks: number; atime: bigint; mtime: bigint; ctime: bigint
}

/**
 * The kernel caches a restore makes stale, computed by the core
 * (fs/history/invalidation.ts) and turned into binding calls by the adapter
 * only, in this order: inodes, renew, nameless, entries, root.
 */
export interface InvalidationPlan {
  /** paths whose inode attributes and pages the kernel must drop (the inode survives, or an fd/mmap is still open on it) */
  inodes: string[]
  /** paths of non-directories that vanish or move away: their kernel node is renewed, so a file there later gets its own */
  renew: string[]
  /** true when handles whose name is gone are open: drop what the kernel caches for them (no path reaches them) */
  nameless: boolean
  /** names that disappear or change type, deepest first */
  entries: string[]
}

/** The operations the FUSE adapter calls on the live workspace (fs/workspace.ts implements them). */
export interface FsOps {
  getattr(path: string): Stat
  /** stat through an open handle */
  fgetattr(fh: number): Stat
  /** a directory's names with their stats (inode numbers included), '.' and '..' excluded */
  readdir(path: string): { names: string[], stats: Stat[] }
  readlink(path: string): string
  chmod(path: string, mode: number): void
  chown(path: string, uid: number, gid: number): void
  /** times in ns; null leaves that time as it is (UTIME_OMIT) */
  utimens(path: string, atime: bigint | null, mtime: bigint | null): void
  mkdir(path: string, mode: number, caller: Caller): void
  mknod(path: string, mode: number, rdev: number, caller: Caller): void
  symlink(target: string, path: string, caller: Caller): void
  unlink(path: string): void
  rmdir(path: string): void
  link(existing: string, path: string): void
  /** rename over an existing target as rename(2) does */
  rename(from: string, to: string): void
  setxattr(path: string, name: string, value: Uint8Array, flags: number): void
  getxattr(path: string, name: string): Uint8Array
  /** an xattr's value, or undefined when absent (no throw on the hot path) */
  xattr(path: string, name: string): Uint8Array | undefined
  listxattr(path: string): string[]
  removexattr(path: string, name: string): void
  /** opens a file; returns a handle number (> 0) */
  open(path: string, flags: number): number
  create(path: string, mode: number, flags: number, caller: Caller): number
  release(fh: number): void
  /** reads up to `len` bytes at byte offset `pos` into buf; returns the count */
  read(fh: number, buf: Buffer, len: number, pos: number): number
  /** writes `len` bytes of buf at byte offset `pos` (the end with O_APPEND); returns the count */
  write(fh: number, buf: Buffer, len: number, pos: number): number
  truncate(path: string, size: number): void
  ftruncate(fh: number, size: number): void

  // ---- what libfuse 2.9's path-based API needs (one kernel node per name) ----

  /** the inode a path names (throws ENOENT) */
  resolve(path: string): Ino
  /** the inode a handle is open on */
  handleIno(fh: number): Ino
  /** the inode's names other than `except`, as paths */
  otherNames(ino: Ino, except: string | null): string[]
  /** true when a handle other than `exceptFh` is open on the inode by a name that is gone */
  namelessOpen(ino: Ino, exceptFh?: number): boolean
  /**
   * Inodes written while they have names other than the writing handle's;
   * the adapter drains the set at write, flush, fsync and release to drop
   * the kernel's cached attributes and pages of those names.
   */
  readonly linkedWrites: Set<Ino>
}
