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

/**
 * Attribution of changes to tool calls (DECISIONS.md "Attribution of
 * changes to tool calls"): the low-level FUSE adapter asks it which open
 * tool call the requesting process belongs to, at the requests that carry
 * a live requester (create, mknod, mkdir, symlink, link, unlink, rmdir,
 * rename, setattr, open, xattr changes), keeps that call on an open handle,
 * and reports every inode a call changed (writes through the handle
 * included, writeback or not). The daemon implements it (daemon/calls.ts);
 * the live generation's record of it is fs/history/attribution.ts.
 */
export interface ChangeAttribution {
  /** false while no tool call is open and no call's cgroup still holds processes: the adapter then asks nothing (no cost per request) */
  readonly active: boolean
  /** the tool call process `pid` (a thread id, as FUSE gives it) belongs to, or 0 for none; reads /proc, never the mount */
  callOf(pid: number): number
  /** inode `ino` was changed (created, written, renamed, unlinked, its attributes or entries changed) by call `call` (> 0) */
  changed(ino: Ino, call: number): void
  /** name `name` of directory `dir` was removed or renamed away by call `call` (a lower file deleted has no inode in the parent checkpoint to key it by) */
  removedName(dir: Ino, name: string, call: number): void
}

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
  /**
   * The same plan by inode number, for the low-level adapter (kernel node
   * ids derive from inode numbers, fuse/ll-adapter.ts): inodes of the live
   * state before the swap whose attributes and pages the kernel must drop,
   * and names (parent inode before the swap, name) that disappear, change
   * type or stop naming their inode, deepest first. Absent in plans made
   * before this field existed: the adapter then drops the root's names.
   */
  byIno?: {
    inodes: Ino[]
    entries: Array<[Ino, string]>
    /**
     * Non-directory inodes of the live state before the swap whose content
     * or type differs in the restored state, or that it does not have
     * (issue 13): each gets a new node id where the kernel holds the old
     * one, and every name it had is in `entries` (hard links included).
     * Absent in plans made before this field existed.
     */
    renewed?: Ino[]
    /**
     * The inode of `renewed` as it was before the swap, readable (and its
     * blocks kept live for gc) until its release(); undefined for any other
     * inode. Call it at most once per inode, synchronously after the swap
     * (before the next FUSE request is answered).
     */
    frozen?: (ino: Ino) => FrozenInode | undefined
  }
}

/**
 * What became of the kernel's view of the files a restore replaced
 * (InvalidationPlan.byIno.renewed), as the low-level adapter reports it:
 * `files` inodes whose old node id the kernel still held (each keeps
 * answering from its content before the restore until the kernel forgets
 * it), `handles` open file handles on them (open file descriptions:
 * descriptors, and mappings made through them).
 */
export interface InvalidationOutcome { files: number, handles: number }

/** Drops the kernel caches a restore's plan names, called in the tick of the swap; resolves when the kernel has taken them (the low-level adapter with an InvalidationOutcome). */
export type Invalidate = (plan: InvalidationPlan) => Promise<InvalidationOutcome | undefined | void>

/**
 * A non-directory inode as it was just before a restore replaced or removed
 * it (issue 13): the content an old incarnation of it answers from. Sealed
 * state, so immutable: no unsealed buffer is involved (a restore seals the
 * live state before it swaps). Reads are synchronous and throw FsError (EIO
 * for a block that fails its check). Its blocks count as live for gc until
 * release() (fs/maint/gc.ts); release twice is harmless.
 */
export interface FrozenInode {
  /** its stat before the restore (nlink as it was then) */
  readonly stat: Stat
  /** its names before the restore: (directory inode, name); a hard-linked file has several */
  readonly links: ReadonlyArray<readonly [Ino, string]>
  /** symlink target, else undefined */
  readonly target: string | undefined
  /** extended attributes, name → value (a copy) */
  readonly xattrs: Record<string, Uint8Array>
  /** reads up to `len` bytes at byte offset `pos` into buf from offset 0; returns the count (0 at or past the end) */
  read(buf: Buffer, len: number, pos: number): number
  /** byte ranges [start, end) that may hold data, increasing (SEEK_DATA / SEEK_HOLE) */
  dataRanges(): Array<[number, number]>
  /** no longer needed: gc may collect its blocks */
  release(): void
}

/** What setattr changes: only the fields present. Times in ns since the epoch; 'now' is the current time (UTIME_NOW). */
export interface AttrChange {
  mode?: number
  uid?: number
  gid?: number
  /** new size, bytes (truncate) */
  size?: number
  atime?: bigint | 'now'
  mtime?: bigint | 'now'
}

/** renameAt flags (renameat2(2)). */
export const RENAME_NOREPLACE = 1
export const RENAME_EXCHANGE = 2

/**
 * The operations by inode number the low-level FUSE adapter
 * (fuse/ll-adapter.ts) calls: the kernel names a file by node id (derived
 * from the inode number) and a new name by (parent inode, name). Names are
 * single path components (no '/'), at most 255 bytes. Every operation is
 * synchronous and throws FsError with a positive errno; an inode number
 * the live state no longer holds fails with ESTALE.
 */
export interface InodeOps {
  /** the stat of `name` in directory `parent` (ENOENT, ENOTDIR) */
  lookupAt(parent: Ino, name: string): Stat
  /** the stat of an inode (open files whose names are gone included) */
  statIno(ino: Ino): Stat
  /** changes attributes (chmod, chown, truncate, utimens in one call, in that order); `fh` is the handle it came through, if any; returns the new stat */
  setattrIno(ino: Ino, change: AttrChange, fh: number | null): Stat
  /** a directory's entries with their stats, '.' and '..' excluded, in a stable order */
  readdirIno(ino: Ino): Array<[string, Stat]>
  /** the directory holding a directory (the root: itself), for '..' */
  parentIno(ino: Ino): Ino
  readlinkIno(ino: Ino): string
  mknodAt(parent: Ino, name: string, mode: number, rdev: number, caller: Caller): Stat
  mkdirAt(parent: Ino, name: string, mode: number, caller: Caller): Stat
  symlinkAt(parent: Ino, name: string, target: string, caller: Caller): Stat
  /** a new name for an existing inode (EPERM for a directory); returns its stat (nlink + 1) */
  linkAt(ino: Ino, parent: Ino, name: string): Stat
  unlinkAt(parent: Ino, name: string): void
  rmdirAt(parent: Ino, name: string): void
  /** rename(2), or renameat2(2) with RENAME_NOREPLACE (EEXIST when the target exists) or RENAME_EXCHANGE (both must exist; they swap) */
  renameAt(parent: Ino, name: string, newParent: Ino, newName: string, flags: number): void
  /** opens an inode (O_TRUNC honoured); returns a handle (> 0) */
  openAt(ino: Ino, flags: number): number
  /** creates and opens (O_EXCL honoured; an existing file is opened, O_TRUNC honoured) */
  createAt(parent: Ino, name: string, mode: number, flags: number, caller: Caller): { fh: number, stat: Stat }
  setxattrIno(ino: Ino, name: string, value: Uint8Array, flags: number): void
  /** an xattr's value, or undefined when absent */
  xattrIno(ino: Ino, name: string): Uint8Array | undefined
  listxattrIno(ino: Ino): string[]
  removexattrIno(ino: Ino, name: string): void
  /** byte ranges [start, end) that may hold data, increasing (the rest are holes): SEEK_DATA / SEEK_HOLE */
  dataRangesOf(fh: number): Array<[number, number]>
  /** the open handle's stat */
  fgetattr(fh: number): Stat
  read(fh: number, buf: Buffer, len: number, pos: number): number
  write(fh: number, buf: Buffer, len: number, pos: number): number
  release(fh: number): void
  /** the inode a handle is open on */
  handleIno(fh: number): Ino
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

/**
 * A restore's announcement to watchers (fs/history/announce.ts, DECISIONS.md
 * "Watchers see a restore"): after the swap, a helper process outside the
 * daemon repeats through the mount the restore's removals (unlink, rmdir),
 * additions (mknod, mkdir, symlink) and changes (an open for writing, a
 * truncate to the same size, a chown to the same owner), so that the kernel
 * itself emits IN_DELETE, IN_CREATE, IN_MODIFY, IN_ATTRIB and
 * IN_CLOSE_WRITE. The adapters route that process's requests (and only
 * those: `pid`) here, and the answers change nothing: a removed name stays
 * visible to it alone until it unlinks it, an added name stays invisible to
 * it alone until it creates it, and its opens, truncates and chowns are
 * answered with the record as it is. Everyone else sees the restored state
 * from the swap on. Every method is synchronous; `undefined` (or false)
 * means "not the restore's: answer as usual".
 */
export interface RestoreAnnouncer {
  /** pid of the helper process while it runs, else 0 (then nothing is routed here) */
  readonly pid: number
  /** path-based (libfuse 2.9 high-level): the stat of a removed path not yet unlinked, or throws ENOENT for an added one not yet created */
  getattr(path: string): Stat | undefined
  /** unlink or rmdir of a removed path: true when it was one (nothing changes) */
  remove(path: string): boolean
  /** mknod, mkdir, symlink or create of an added path: true when it was one (it is visible to the helper from now on) */
  appear(path: string): boolean
  /** by inode (libfuse 3 low-level): lookup of a removed name (parent inode before the restore) or of an added one not yet created (ENOENT) */
  lookupAt(parent: Ino, name: string): Stat | undefined
  /** the stat of an inode only a removed name still reaches */
  statIno(ino: Ino): Stat | undefined
  removeAt(parent: Ino, name: string): boolean
  appearAt(parent: Ino, name: string): boolean
}
