/**
 * rewindfs's own FUSE binding on libfuse 3's low-level API (fuse/ll/fuse-ll.c),
 * typed. The only module that loads fuse/ll's native addon.
 *
 * A handler receives node ids split in two numbers, `(ino, incarnation)`
 * (layout: fuse/ll/nodeid.h, constants INO_BITS / INCARNATION_BITS below),
 * names and link targets as Buffers (bytes, never decoded), and answers by
 * RETURNING: a value, a Promise of one, a negative number (-errno), or by
 * throwing an error with a numeric `errno` (sign ignored, e.g. the daemon's
 * FsError). Anything else thrown, or a value of the wrong shape, answers the
 * request with EIO and logs one line saying why; the mount keeps working.
 * Each request is answered exactly once, by this module.
 *
 * Threads: handlers run on the JS thread, fed in batches by the binding's
 * loop thread; a handler may answer later (return a Promise) without holding
 * any libfuse thread. Notifications (`notify`) run on the binding's notify
 * thread; never await one inside a handler (the kernel may make it wait for
 * that very request). See fuse/ll/README.md.
 */
import { createRequire } from 'node:module'
import { existsSync, readFileSync, realpathSync, writeFileSync } from 'node:fs'
import { basename, dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'

/** The shape of the native addon (fuse/ll/fuse-ll.c); private to this module. */
interface Native {
  INO_BITS: number
  INCARNATION_BITS: number
  OP_NAMES: string[]
  LIBFUSE_VERSION: number
  mount(mnt: string, argv: string[], implemented: boolean[], config: number[],
    dispatch: (op: number, id: number, b1?: Buffer, b2?: Buffer, b3?: Buffer | ArrayBuffer) => void,
    events: (kind: number, a: any, b: any, c: any) => void,
    args: Float64Array, times: BigInt64Array, ans: Float64Array, ansTimes: BigInt64Array): object
  unmount(h: object): number
  counters(h: object): Record<string, number>
  stats(h: object): SessionStats
  notify(h: object, jobId: number, items: unknown[]): boolean
  replyErr(h: object, id: number, errno: number): number
  replyEntry(h: object, id: number, ino: number, inc: number, gen: number, et: number, at: number): number
  replyCreate(h: object, id: number, ino: number, inc: number, gen: number, et: number, at: number, fh: number, flags: number): number
  replyAttr(h: object, id: number, timeout: number, ino: number): number
  replyOpen(h: object, id: number, fh: number, flags: number): number
  replyBuf(h: object, id: number, b: Uint8Array): number
  replyReadlink(h: object, id: number, b: Uint8Array): number
  replyCount(h: object, id: number, n: number): number
  replyLseek(h: object, id: number, off: number): number
  replyStatfs(h: object, id: number): number
  replyXattr(h: object, id: number, b: Uint8Array): number
  dirAdd(h: object, id: number, name: Uint8Array, ino: number, mode: number, off: number): number
  dirPlusAdd(h: object, id: number, name: Uint8Array, ino: number, inc: number, gen: number, et: number, at: number, off: number): number
  dirEnd(h: object, id: number): number
  lxattrs(path: string | Uint8Array, raw: boolean): Record<string, Buffer> | Array<[Buffer, Buffer]> | null | number
  lsetxattr(path: string | Uint8Array, name: string | Uint8Array, value: Uint8Array, flags: number): number
  lremovexattr(path: string | Uint8Array, name: string | Uint8Array): number
}

function addonPath (): string {
  const here = dirname(fileURLToPath(import.meta.url))
  const candidates = [
    join(here, 'build', 'Release', 'fuse_ll.node'), // running from source (fuse/ll/session.ts)
    join(here, '..', '..', '..', 'fuse', 'll', 'build', 'Release', 'fuse_ll.node') // from dist/fuse/ll/session.js
  ]
  for (const c of candidates) if (existsSync(c)) return c
  throw new Error('rewindfs: the libfuse 3 binding is not built (looked for ' + candidates.join(', ') + '); run: node scripts/build-native.mjs')
}

const native = createRequire(import.meta.url)(addonPath()) as Native

/** Bits of a node id holding the filesystem's inode number (fuse/ll/nodeid.h): ino < 2^INO_BITS. */
export const INO_BITS: number = native.INO_BITS
/** Bits of a node id above the inode number holding the incarnation: incarnation < 2^INCARNATION_BITS. */
export const INCARNATION_BITS: number = native.INCARNATION_BITS
/** libfuse's version as fuse_version() reports it (314 for 3.14). */
export const LIBFUSE_VERSION: number = native.LIBFUSE_VERSION

/** The 64-bit kernel node id of (ino, incarnation), as a BigInt (for logs and tests; handlers never need it). */
export function nodeId (ino: number, incarnation = 0): bigint {
  return (BigInt(incarnation) << BigInt(INO_BITS)) | BigInt(ino)
}

/** Caller identity of a request (fuse_req_ctx): valid for the whole life of the handler. */
export interface Request {
  uid: number
  gid: number
  pid: number
  /** umask of the calling process (creating requests) */
  umask: number
}

/** Time in attributes: BigInt nanoseconds since the epoch, or a number of ms since the epoch. */
export type Time = bigint | number

/** Attributes of an inode (struct stat). Missing numbers are 0; nlink defaults to 1, blksize to 4096. */
export interface Attr {
  /** file type and permission bits, e.g. 0o100644; the type is required */
  mode: number
  nlink?: number
  uid?: number
  gid?: number
  rdev?: number
  /** bytes, < 2^53 */
  size?: number
  /** 512-byte blocks */
  blocks?: number
  blksize?: number
  atime?: Time
  mtime?: Time
  ctime?: Time
  /** st_ino the kernel reports; default: the entry's ino (issue 13 decides what an old incarnation reports) */
  ino?: number
}

/**
 * A lookup answer (also mknod, mkdir, symlink, link, and create with `Open`).
 * The kernel counts one lookup of (ino, incarnation) per entry it receives;
 * it gives them back with `forget`.
 * `ino: 0` (lookup only) is a negative entry: "no such name", cached for entryTimeout.
 */
export interface Entry {
  ino: number
  incarnation?: number
  /** the inode's generation (NFS export); 0 unless you know you need it */
  generation?: number
  /** required unless ino is 0 */
  attr?: Attr
  /** seconds the kernel may cache the name (default: the mount's entryTimeout) */
  entryTimeout?: number
  /** seconds the kernel may cache the attributes (default: the mount's attrTimeout) */
  attrTimeout?: number
}

/** getattr/setattr answer: the attributes, or them with their own timeout (seconds). */
export type AttrAnswer = Attr | { attr: Attr, attrTimeout: number }

/** What open/opendir answer: the handle (an integer < 2^53), with optional per-open flags. */
export interface Open {
  fh: number
  /** bypass the page cache for this open (kills mmap; see fuse-native.md §4) */
  directIo?: boolean
  /** keep the file's page cache from earlier opens (safe only while nothing changed it behind the kernel) */
  keepCache?: boolean
  nonseekable?: boolean
  /** opendir: let the kernel cache this directory's entries */
  cacheDir?: boolean
  /** no FLUSH on close */
  noflush?: boolean
}

/** A readdir entry. `off` is the offset of the NEXT entry (the filesystem's cookie, > 0). */
export interface DirEntry {
  name: Uint8Array
  ino: number
  /** file type bits suffice (d_type), e.g. 0o040000 */
  mode: number
  off: number
}

/** A readdirplus entry: a full Entry (counts as a lookup unless the name is "." or ".."). */
export interface DirPlusEntry {
  name: Uint8Array
  off: number
  entry: Entry
}

/** statfs answer; 64-bit counts (exact below 2^53). */
export interface Statfs {
  bsize?: number
  frsize?: number
  blocks?: number
  bfree?: number
  bavail?: number
  files?: number
  ffree?: number
  favail?: number
  fsid?: number
  flag?: number
  /** longest name, bytes (default 255) */
  namemax?: number
}

/** setattr's changes: only the fields present are to be set. */
export interface SetAttr {
  /** the raw FUSE_SET_ATTR_* bits (fuse_lowlevel.h) */
  valid: number
  mode?: number
  uid?: number
  gid?: number
  /** new size, bytes (truncate) */
  size?: number
  /** ns since the epoch; with atimeNow the kernel's current time (UTIME_NOW) */
  atime?: bigint
  atimeNow?: boolean
  mtime?: bigint
  mtimeNow?: boolean
  ctime?: bigint
}

/** A handler's answer: the value, -errno, or a Promise of either. */
export type Answer<T> = T | number | Promise<T | number>
/** The answer of operations without a value (unlink, flush, ...): undefined/0 = success. */
export type Done = Answer<void | undefined>

/**
 * The operations. Implement what the filesystem supports; the kernel gets
 * ENOSYS for the rest without reaching JS (and then stops asking for some,
 * e.g. getxattr, access, fallocate, lseek, copy_file_range).
 * `fh` is what open/opendir/create answered; getattr/setattr get `null`
 * when the request came without a handle.
 */
export interface LowLevelOps {
  lookup?(req: Request, parent: number, parentInc: number, name: Buffer): Answer<Entry>
  /** the kernel dropped `nlookup` lookups of (ino, incarnation); no answer (forget and batch_forget) */
  forget?(ino: number, incarnation: number, nlookup: number): void
  getattr?(req: Request, ino: number, inc: number, fh: number | null): Answer<AttrAnswer>
  setattr?(req: Request, ino: number, inc: number, set: SetAttr, fh: number | null): Answer<AttrAnswer>
  readlink?(req: Request, ino: number, inc: number): Answer<Uint8Array>
  mknod?(req: Request, parent: number, parentInc: number, name: Buffer, mode: number, rdev: number): Answer<Entry>
  mkdir?(req: Request, parent: number, parentInc: number, name: Buffer, mode: number): Answer<Entry>
  unlink?(req: Request, parent: number, parentInc: number, name: Buffer): Done
  rmdir?(req: Request, parent: number, parentInc: number, name: Buffer): Done
  symlink?(req: Request, parent: number, parentInc: number, name: Buffer, target: Buffer): Answer<Entry>
  /** flags: 0, RENAME_NOREPLACE (1), RENAME_EXCHANGE (2) */
  rename?(req: Request, parent: number, parentInc: number, name: Buffer, newParent: number, newParentInc: number, newName: Buffer, flags: number): Done
  link?(req: Request, ino: number, inc: number, newParent: number, newParentInc: number, newName: Buffer): Answer<Entry>
  /** flags: open(2) flags; with atomicOTrunc (default) O_TRUNC arrives here and must be honoured */
  open?(req: Request, ino: number, inc: number, flags: number): Answer<Open | number>
  /** answer at most `size` bytes (fewer only at end of file) */
  read?(req: Request, ino: number, inc: number, fh: number, size: number, offset: number): Answer<Uint8Array>
  /** `data` is the filesystem's to keep (a copy made for it), unless MountOptions.borrowWriteData; answer the bytes written */
  write?(req: Request, ino: number, inc: number, fh: number, data: Buffer, offset: number, flags: number): Answer<number>
  flush?(req: Request, ino: number, inc: number, fh: number): Done
  release?(req: Request, ino: number, inc: number, fh: number, flags: number): Done
  fsync?(req: Request, ino: number, inc: number, fh: number, datasync: boolean): Done
  opendir?(req: Request, ino: number, inc: number, flags: number): Answer<Open | number>
  /** entries from `offset` (0 = start, else an `off` you gave); the binding sends as many as fit in `size` bytes; [] = end */
  readdir?(req: Request, ino: number, inc: number, fh: number, offset: number, size: number): Answer<DirEntry[]>
  /** like readdir with full entries; `readdirplusSent` learns how many reached the kernel (each one is a lookup) */
  readdirplus?(req: Request, ino: number, inc: number, fh: number, offset: number, size: number): Answer<DirPlusEntry[]>
  /** the first `sent` entries of a readdirplus answer reached the kernel (one lookup each, "." and ".." excepted) */
  readdirplusSent?(ino: number, inc: number, entries: DirPlusEntry[], sent: number): void
  releasedir?(req: Request, ino: number, inc: number, fh: number): Done
  fsyncdir?(req: Request, ino: number, inc: number, fh: number, datasync: boolean): Done
  statfs?(req: Request, ino: number, inc: number): Answer<Statfs>
  /** flags: XATTR_CREATE (1), XATTR_REPLACE (2) */
  setxattr?(req: Request, ino: number, inc: number, name: Buffer, value: Buffer, flags: number): Done
  /** answer the whole value; the binding applies the size probe (size 0) and ERANGE */
  getxattr?(req: Request, ino: number, inc: number, name: Buffer): Answer<Uint8Array>
  /** answer every name; the binding joins them, probes and answers ERANGE */
  listxattr?(req: Request, ino: number, inc: number): Answer<Uint8Array[]>
  removexattr?(req: Request, ino: number, inc: number, name: Buffer): Done
  /** only sent without default_permissions */
  access?(req: Request, ino: number, inc: number, mask: number): Done
  create?(req: Request, parent: number, parentInc: number, name: Buffer, mode: number, flags: number): Answer<Entry & Open>
  fallocate?(req: Request, ino: number, inc: number, fh: number, mode: number, offset: number, length: number): Done
  /** whence: SEEK_SET 0, SEEK_CUR 1, SEEK_END 2, SEEK_DATA 3, SEEK_HOLE 4; answer the new offset (ENXIO past the data) */
  lseek?(req: Request, ino: number, inc: number, fh: number, offset: number, whence: number): Answer<number>
  copyFileRange?(req: Request, inIno: number, inInc: number, inFh: number, inOffset: number,
    outIno: number, outInc: number, outFh: number, outOffset: number, length: number, flags: number): Answer<number>
}

/** FUSE_CAP_* bits (fuse_common.h, libfuse 3.14). */
export const CAP = {
  ASYNC_READ: 1 << 0, POSIX_LOCKS: 1 << 1, ATOMIC_O_TRUNC: 1 << 3, EXPORT_SUPPORT: 1 << 4, DONT_MASK: 1 << 6,
  SPLICE_WRITE: 1 << 7, SPLICE_MOVE: 1 << 8, SPLICE_READ: 1 << 9, FLOCK_LOCKS: 1 << 10, IOCTL_DIR: 1 << 11,
  AUTO_INVAL_DATA: 1 << 12, READDIRPLUS: 1 << 13, READDIRPLUS_AUTO: 1 << 14, ASYNC_DIO: 1 << 15,
  WRITEBACK_CACHE: 1 << 16, NO_OPEN_SUPPORT: 1 << 17, PARALLEL_DIROPS: 1 << 18, POSIX_ACL: 1 << 19,
  HANDLE_KILLPRIV: 1 << 20, CACHE_SYMLINKS: 1 << 23, NO_OPENDIR_SUPPORT: 1 << 24, EXPLICIT_INVAL_DATA: 1 << 25,
  EXPIRE_ONLY: 1 << 26
} as const

/** FUSE_SET_ATTR_* bits of SetAttr.valid (fuse_lowlevel.h). */
export const SETATTR = {
  MODE: 1 << 0, UID: 1 << 1, GID: 1 << 2, SIZE: 1 << 3, ATIME: 1 << 4, MTIME: 1 << 5,
  ATIME_NOW: 1 << 7, MTIME_NOW: 1 << 8, FORCE: 1 << 9, CTIME: 1 << 10, KILL_SUID: 1 << 11, KILL_SGID: 1 << 12
} as const

/**
 * Mount options. Each capability default is a decision documented in
 * fuse/ll/README.md ("Capabilities"); all timeouts are seconds and may be 0.
 */
export interface MountOptions {
  /** default seconds an entry may be cached (lookup answers without entryTimeout); default 1 */
  entryTimeout?: number
  /** default seconds attributes may be cached; default 1 */
  attrTimeout?: number
  /** mount option allow_other (root, or user_allow_other in /etc/fuse.conf); default false */
  allowOther?: boolean
  /** mount option default_permissions: the kernel checks mode bits; default true */
  defaultPermissions?: boolean
  /** fsname shown in /proc/mounts; default "rewindfs" */
  fsname?: string
  /** subtype ("fuse.<subtype>" in /proc/mounts); default "rewindfs" */
  subtype?: string
  /** libfuse's auto_unmount (fusermount3 unmounts when the process dies); default false: a dead daemon leaves an ENOTCONN mount that says so */
  autoUnmount?: boolean
  /** mount read-only */
  readOnly?: boolean
  /** libfuse debug output on stderr */
  debug?: boolean
  /** largest WRITE request, bytes (max_pages follows); default 1 MiB, libfuse's ceiling */
  maxWrite?: number
  /** largest readahead, bytes, sent in the INIT answer (it can only lower the kernel's window: see `readahead`); default: the kernel's */
  maxReadahead?: number
  /**
   * The kernel's readahead window on this mount, bytes (whole KiB). A new
   * FUSE mount starts at the kernel's default of 128 KiB (VM_READAHEAD_PAGES),
   * and the INIT answer can only lower it, so a sequential read reaches the
   * filesystem in 128 KiB requests whatever max_pages allows. The session
   * raises it after INIT through the mount's backing device,
   * /sys/class/bdi/MAJOR:MINOR/read_ahead_kb (as mergerfs's `readahead`
   * option does); the kernel then asks for up to max_pages per request
   * (1 MiB with the default maxWrite). Needs root; when it cannot be set the
   * log says why and the mount keeps the kernel's window
   * (`LowLevelSession.readahead` says what is in force). Default: the kernel's.
   */
  readahead?: number
  /** kernel background request limit (readahead, async direct I/O); default libfuse's 12 */
  maxBackground?: number
  /** O_TRUNC handled by open (FUSE_CAP_ATOMIC_O_TRUNC); default true */
  atomicOTrunc?: boolean
  /** kernel writeback cache; default false (a mark would have to flush dirty pages first: see README) */
  writebackCache?: boolean
  /** lookups and readdirs of one directory in parallel; default true */
  parallelDirops?: boolean
  /** kernel drops cached data when it sees mtime/size change; default false (the daemon invalidates explicitly) */
  autoInvalData?: boolean
  /** the filesystem, not the kernel, clears suid/sgid on write/chown/truncate; default false */
  handleKillpriv?: boolean
  /** when readdirplus is implemented: 'auto' (kernel picks, default), 'always', or 'never' */
  readdirplus?: 'auto' | 'always' | 'never'
  /** kernel caches symlink targets; default false */
  cacheSymlinks?: boolean
  /** asynchronous reads (readahead in parallel); default true */
  asyncRead?: boolean
  /**
   * answer getxattr("security.capability") with ENODATA in the binding and
   * refuse to set it (EOPNOTSUPP), without JS: the kernel asks for it before
   * every write. Default false (then getxattr decides).
   */
  noSecurityCapability?: boolean
  /**
   * Lets the binding answer the kernel's getxattr("security.capability")
   * itself (ENODATA, no JS) for inodes known to have none. The kernel asks it
   * before every write to a regular file (25,000 requests in one npm ci).
   * Called for the regular file of every entry answered (lookup, create,
   * mknod, link, readdirplus): true when inode `ino` has no
   * security.capability xattr now. The binding also remembers the handler's
   * own ENODATA answers to that getxattr. It forgets an inode when a setxattr
   * or removexattr of it reaches JS, and everything at every `notify` batch.
   * So give it only when the filesystem's xattrs change through
   * setxattr/removexattr requests alone, or with a `notify` right after
   * (before the next request is handled), as a restore does. Default: none
   * (every such getxattr reaches the handler).
   */
  capabilityFree?: (ino: number) => boolean
  /**
   * The write handler answers synchronously and keeps no reference to its
   * `data` (a filesystem that copies what it stores): the binding then hands
   * it a view of the request's bytes instead of memory of its own, empties
   * that view (detaches it: length 0) when the handler returns, and reuses
   * the memory for the next write. Without it each write is a new allocation
   * the garbage collector frees later (for 1 MiB requests: a fresh mmap per
   * request, its pages faulted in, then GC work). A handler that answers
   * with a Promise still works, but finds `data` empty once it resumes.
   * Default false.
   */
  borrowWriteData?: boolean
  /** raw extra -o options for libfuse 3 (each one option, no commas); libfuse refuses unknown ones (big_writes, use_ino, ...) */
  extraOptions?: string[]
  /** log sink for handler failures; default console.error */
  log?: (line: string) => void
}

/** Negotiated connection (from libfuse's init). */
export interface InitInfo {
  protoMinor: number
  /** FUSE_CAP_* the kernel offers */
  capable: number
  /** FUSE_CAP_* in force */
  want: number
  maxWrite: number
  maxReadahead: number
}

/** Counts the binding keeps beside the per-opcode counters. */
export interface SessionStats {
  /** requests handed to JS and not yet answered */
  pending: number
  /** answers refused as malformed (the request got EIO) */
  badAnswers: number
  /** replies the kernel did not take (request interrupted, connection gone) */
  failedReplies: number
  /** answers for requests already answered or torn down */
  lateReplies: number
  /** requests answered EIO because the session was ending */
  eioTeardown: number
  /** getxattr("security.capability") answered ENODATA by the binding (MountOptions.capabilityFree) */
  capabilityAnswers: number
  /** inodes the binding knows have no security.capability now */
  capabilityKnown: number
}

/** One kernel notification (run off the JS thread by `notify`). Names are bytes. */
export type NotifyItem =
  /** drop the cached name parent/name (and its unused subtree); -ENOENT when not cached */
  | { kind: 'entry', parent: number, parentInc?: number, name: Uint8Array }
  /** mark the name expired but keep it (kernel 6.2+): the next use looks it up again */
  | { kind: 'expire', parent: number, parentInc?: number, name: Uint8Array }
  /** drop cached attributes; offset >= 0 also drops cached data from offset for length bytes (0 = to the end); default offset -1: attributes only */
  | { kind: 'inode', ino: number, incarnation?: number, offset?: number, length?: number }
  /** the name parent/name of child is gone: like entry, plus the dentry is deleted (a cwd inside shows "(deleted)") */
  | { kind: 'delete', parent: number, parentInc?: number, child: number, childInc?: number, name: Uint8Array }
  /** put data into the kernel's page cache of the inode */
  | { kind: 'store', ino: number, incarnation?: number, offset: number, data: Uint8Array }

/** A batch's outcome: per item 0 or -errno (-ENOENT: nothing cached, -ENOTCONN: not mounted, -EINVAL: malformed), and the time the notify thread spent, ms. */
export interface NotifyResult { results: number[], ms: number }

/** Error whose errno (positive) answers a request without a log line. */
export class FuseError extends Error {
  readonly errno: number
  constructor (errno: number, message?: string) {
    super(message ?? `errno ${errno}`)
    this.errno = Math.abs(errno)
  }
}

/** Errors of the lower layer's xattr calls: code is the errno name, errno the negative errno. */
export interface XattrError extends Error { code: string, errno: number, syscall: string, path: string }

const ERRNO_NAMES: Record<number, string> = {
  1: 'EPERM', 2: 'ENOENT', 5: 'EIO', 7: 'E2BIG', 12: 'ENOMEM', 13: 'EACCES', 17: 'EEXIST', 20: 'ENOTDIR',
  22: 'EINVAL', 28: 'ENOSPC', 30: 'EROFS', 34: 'ERANGE', 36: 'ENAMETOOLONG', 40: 'ELOOP', 61: 'ENODATA', 95: 'ENOTSUP', 122: 'EDQUOT'
}

function xattrError (r: number, syscall: string, path: string | Uint8Array): XattrError {
  const code = ERRNO_NAMES[-r] ?? `E${-r}`
  const p = typeof path === 'string' ? path : Buffer.from(path).toString()
  return Object.assign(new Error(`${code}: ${syscall} ${p}`), { code, errno: r, syscall, path: p }) as XattrError
}

/**
 * All xattrs of `path` on the backing filesystem (llistxattr + lgetxattr;
 * a symlink's own), name (UTF-8) → value, or null when none / ENOTSUP.
 * Synchronous syscalls: never point it at a mount this process serves.
 * Throws an XattrError otherwise.
 */
export function lxattrs (path: string | Uint8Array): Record<string, Buffer> | null {
  const r = native.lxattrs(path, false)
  if (typeof r === 'number') { if (r === -95) return null; throw xattrError(r, 'llistxattr', path) }
  return r as Record<string, Buffer> | null
}

/** Like lxattrs, names as bytes: [name, value] pairs, or null. */
export function lxattrList (path: string | Uint8Array): Array<[Buffer, Buffer]> | null {
  const r = native.lxattrs(path, true)
  if (typeof r === 'number') { if (r === -95) return null; throw xattrError(r, 'llistxattr', path) }
  return r as Array<[Buffer, Buffer]> | null
}

/** lsetxattr(2) on the backing filesystem; flags 0, XATTR_CREATE 1, XATTR_REPLACE 2. Throws an XattrError. */
export function lsetxattr (path: string | Uint8Array, name: string | Uint8Array, value: Uint8Array, flags = 0): void {
  const r = native.lsetxattr(path, name, value, flags)
  if (r !== 0) throw xattrError(r, 'lsetxattr', path)
}

/** lremovexattr(2) on the backing filesystem; throws an XattrError (ENODATA when absent). */
export function lremovexattr (path: string | Uint8Array, name: string | Uint8Array): void {
  const r = native.lremovexattr(path, name)
  if (r !== 0) throw xattrError(r, 'lremovexattr', path)
}

const OP = Object.fromEntries(native.OP_NAMES.map((n, i) => [n, i])) as Record<string, number>
const OPS_WITH_HANDLER = native.OP_NAMES as Array<keyof LowLevelOps>

// argument scratch layout (fuse-ll.c A_*)
const A_UID = 0; const A_GID = 1; const A_PID = 2; const A_UMASK = 3
const A_INO = 4; const A_INC = 5; const A_INO2 = 6; const A_INC2 = 7; const A_N = 8
// answer scratch layout (fuse-ll.c R_*)
const R_MODE = 0; const R_NLINK = 1; const R_UID = 2; const R_GID = 3; const R_RDEV = 4
const R_SIZE = 5; const R_BLOCKS = 6; const R_BLKSIZE = 7; const R_INO = 8
/** entry answers: 1 when the inode has no security.capability (MountOptions.capabilityFree) */
const R_NOCAP = 12
const S_IFMT = 0o170000; const S_IFREG = 0o100000

const EV_INIT = 0; const EV_NOTIFY = 1; const EV_GONE = 2; const EV_EXIT = 3
const EIO = 5

function isPromise (v: unknown): v is Promise<unknown> {
  return v !== null && typeof v === 'object' && typeof (v as any).then === 'function'
}

/** errno carried by a thrown value, or 0 when it carries none (then: EIO and a log line). */
function errnoOf (e: unknown): number {
  const n = (e as any)?.errno
  return typeof n === 'number' && Number.isInteger(n) && n !== 0 && Math.abs(n) < 4096 ? Math.abs(n) : 0
}

function timeNs (t: Time | undefined, what: string): bigint {
  if (t === undefined) return 0n
  if (typeof t === 'bigint') return t
  if (typeof t === 'number' && Number.isFinite(t)) return BigInt(Math.round(t * 1e6))
  throw new TypeError(`${what} must be a BigInt (ns) or a number (ms)`)
}

/**
 * A mounted low-level session. Create with `LowLevelSession.mount`.
 * Lifetime: mounted → `unmount()` (or the kernel ends the connection:
 * `fusermount3 -u`, abort) → closed; `closed` resolves once libfuse's session
 * is destroyed and the mountpoint released.
 */
export class LowLevelSession {
  readonly mountpoint: string
  /** the negotiated connection */
  readonly init: InitInfo
  /** resolves when the session has ended (after unmount(), or when the kernel ended it: `gone` is then true) */
  readonly closed: Promise<void>
  /** true when the kernel ended the connection before unmount() was called */
  gone = false
  /** the kernel's readahead window on this mount after INIT, bytes (MountOptions.readahead); NaN when it could not be read */
  readonly readahead: number

  private readonly h: object
  private readonly core: Core
  private constructor (mountpoint: string, h: object, core: Core, init: InitInfo, readahead: number) {
    this.mountpoint = mountpoint
    this.h = h
    this.core = core
    this.init = init
    this.readahead = readahead
    this.closed = core.closed
    core.onGone = () => { this.gone = true }
  }

  /**
   * Mounts `ops` on `mountpoint` (an existing directory) and resolves once
   * the kernel's INIT was answered. Throws an Error with libfuse's message
   * when libfuse 3 refuses an option (e.g. big_writes) or the mount fails.
   */
  static async mount (mountpoint: string, ops: LowLevelOps, opts: MountOptions = {}): Promise<LowLevelSession> {
    const core = new Core(ops, opts)
    const o: string[] = []
    if (opts.allowOther) o.push('allow_other')
    if (opts.defaultPermissions ?? true) o.push('default_permissions')
    if (opts.autoUnmount) o.push('auto_unmount')
    if (opts.readOnly) o.push('ro')
    o.push('fsname=' + (opts.fsname ?? 'rewindfs'), 'subtype=' + (opts.subtype ?? 'rewindfs'))
    for (const x of opts.extraOptions ?? []) {
      if (x.includes(',')) throw new TypeError(`extraOptions: one option per entry, no commas: ${x}`)
      o.push(x)
    }
    for (const x of o) if (/[\\,]/.test(x.replace(/^fsname=|^subtype=/, ''))) throw new TypeError(`mount option with a comma or backslash: ${x}`)
    const argv = ['-o', o.join(',')]
    if (opts.debug) argv.push('-d')
    const implemented = OPS_WITH_HANDLER.map((n) => typeof ops[n] === 'function')
    const want = wantBits(opts, implemented[OP.readdirplus])
    const config = [want.on, want.off, opts.maxWrite ?? 0, opts.maxReadahead ?? 0, opts.maxBackground ?? 0, 0, opts.noSecurityCapability ? 1 : 0,
      opts.capabilityFree !== undefined ? 1 : 0, opts.borrowWriteData ? 1 : 0]
    const initP = new Promise<InitInfo>((resolve) => { core.onInit = resolve })
    const h = native.mount(mountpoint, argv, implemented, config,
      core.dispatch, core.events, core.A, core.T, core.R, core.RT)
    core.h = h
    const init = await Promise.race([initP, core.closed.then(() => { throw new Error(`mount of ${mountpoint} ended before the kernel's INIT`) })])
    return new LowLevelSession(mountpoint, h, core, init, setReadahead(mountpoint, opts.readahead, opts.log ?? ((l) => console.error(l))))
  }

  /**
   * Ends the session: pending requests get EIO, queued notifications
   * -ENOTCONN, then libfuse unmounts (umount2 as root, else fusermount3 -u)
   * and destroys the session. Resolves when done. Safe to call twice.
   */
  async unmount (): Promise<void> {
    native.unmount(this.h)
    await this.closed
  }

  /** Requests received per kernel opcode name ("lookup", "getattr", "batch_forget", ...), counted on the loop thread. */
  counters (): Record<string, number> { return native.counters(this.h) }

  /** The binding's own counts: pending requests, refused answers, failed and late replies. */
  stats (): SessionStats { return native.stats(this.h) }

  /**
   * Runs a batch of kernel notifications on the notify thread (never the
   * JS thread), in order; resolves with each item's result. Batches run one
   * at a time. NEVER await this inside a handler: the kernel may make an
   * item wait for that very request. After unmount every result is -ENOTCONN.
   */
  notify (items: NotifyItem[]): Promise<NotifyResult> { return this.core.notify(items) }
}

/**
 * The backing device ("MAJOR:MINOR") of the FUSE mount on `mountpoint`, from
 * /proc/self/mountinfo (never a stat of the mount: the process serving it
 * must not touch it); the last such mount when several are stacked; null
 * when there is none.
 */
export function fuseDeviceOf (mountpoint: string, mountinfo = readFileSync('/proc/self/mountinfo', 'utf8')): string | null {
  // fields: id parent MAJOR:MINOR root mountpoint options [optional...] - fstype source superoptions; octal escapes (\040) in paths
  const unescape = (s: string): string => s.replace(/\\([0-7]{3})/g, (_m, o: string) => String.fromCharCode(parseInt(o, 8)))
  let dev: string | null = null
  for (const line of mountinfo.split('\n')) {
    const f = line.split(' ')
    const dash = f.indexOf('-')
    if (dash < 0 || f.length < 5) continue
    const type = f[dash + 1] ?? ''
    if (unescape(f[4]) === mountpoint && (type === 'fuse' || type.startsWith('fuse.'))) dev = f[2]
  }
  return dev
}

/**
 * Sets the readahead window of the FUSE mount on `mountpoint` to `bytes`
 * (MountOptions.readahead) when given, and returns the window in force,
 * bytes (NaN when unreadable). A failure is logged, never thrown: the mount
 * works with the kernel's window.
 */
function setReadahead (mountpoint: string, bytes: number | undefined, log: (line: string) => void): number {
  // mountinfo names the real path; resolve the parent only (a stat of the mount itself would wait for this very process)
  let real = resolve(mountpoint)
  try { real = join(realpathSync(dirname(real)), basename(real)) } catch {}
  const dev = fuseDeviceOf(real)
  if (dev === null) { if (bytes !== undefined) log(`fuse-ll: readahead: no FUSE mount on ${mountpoint} in /proc/self/mountinfo; the kernel's window stays`); return NaN }
  const file = `/sys/class/bdi/${dev}/read_ahead_kb`
  if (bytes !== undefined) {
    if (!(Number.isInteger(bytes) && bytes >= 0)) throw new TypeError('readahead must be a whole number of bytes >= 0')
    try { writeFileSync(file, String(Math.floor(bytes / 1024))) } catch (e) { log(`fuse-ll: readahead: cannot set ${file} (${(e as Error).message}); the kernel's window stays`) }
  }
  try { return Number(readFileSync(file, 'utf8').trim()) * 1024 } catch { return NaN }
}

/** conn->want bits to set and clear, from the options (README "Capabilities"). */
function wantBits (o: MountOptions, hasReaddirplus: boolean): { on: number, off: number } {
  let on = 0; let off = 0
  const pick = (flag: boolean, cap: number): void => { if (flag) on |= cap; else off |= cap }
  pick(o.atomicOTrunc ?? true, CAP.ATOMIC_O_TRUNC)
  pick(o.writebackCache ?? false, CAP.WRITEBACK_CACHE)
  pick(o.parallelDirops ?? true, CAP.PARALLEL_DIROPS)
  pick(o.autoInvalData ?? false, CAP.AUTO_INVAL_DATA)
  pick(o.handleKillpriv ?? false, CAP.HANDLE_KILLPRIV)
  pick(o.cacheSymlinks ?? false, CAP.CACHE_SYMLINKS)
  pick(o.asyncRead ?? true, CAP.ASYNC_READ)
  pick(true, CAP.ASYNC_DIO)
  // never: splice (we copy request data anyway), export, dont_mask, posix_acl, explicit_inval_data;
  // locks stay kernel-local because no lock op is registered (libfuse then never asks for them).
  off |= CAP.SPLICE_READ | CAP.SPLICE_WRITE | CAP.SPLICE_MOVE | CAP.EXPORT_SUPPORT | CAP.DONT_MASK |
    CAP.POSIX_ACL | CAP.EXPLICIT_INVAL_DATA | CAP.POSIX_LOCKS | CAP.FLOCK_LOCKS
  const rdp = hasReaddirplus ? (o.readdirplus ?? 'auto') : 'never'
  if (rdp === 'never') off |= CAP.READDIRPLUS | CAP.READDIRPLUS_AUTO
  else if (rdp === 'always') { on |= CAP.READDIRPLUS; off |= CAP.READDIRPLUS_AUTO } else on |= CAP.READDIRPLUS | CAP.READDIRPLUS_AUTO
  return { on, off: off & ~on }
}

/** The JS half of a session: dispatch, answers, events. */
class Core {
  readonly A = new Float64Array(16)
  readonly T = new BigInt64Array(3)
  readonly R = new Float64Array(16)
  readonly RT = new BigInt64Array(3)
  h: object | null = null
  onInit: (i: InitInfo) => void = () => {}
  onGone: () => void = () => {}
  readonly closed: Promise<void>
  private resolveClosed!: () => void
  private readonly jobs = new Map<number, (r: NotifyResult) => void>()
  private nextJob = 1
  private readonly et: number
  private readonly at: number
  private readonly log: (line: string) => void
  private readonly capFree: ((ino: number) => boolean) | undefined

  constructor (private readonly ops: LowLevelOps, opts: MountOptions) {
    this.et = opts.entryTimeout ?? 1
    this.at = opts.attrTimeout ?? 1
    this.capFree = opts.capabilityFree
    for (const t of [this.et, this.at]) if (!(t >= 0)) throw new TypeError('entryTimeout/attrTimeout must be seconds >= 0')
    this.log = opts.log ?? ((l) => console.error(l))
    this.closed = new Promise((resolve) => { this.resolveClosed = resolve })
  }

  readonly events = (kind: number, a: any, b: any, c: any): void => {
    if (kind === EV_INIT) this.onInit(a as InitInfo)
    else if (kind === EV_NOTIFY) {
      const done = this.jobs.get(a as number)
      this.jobs.delete(a as number)
      done?.({ results: Array.from(b as Int32Array), ms: c as number })
    } else if (kind === EV_GONE) this.onGone()
    else if (kind === EV_EXIT) {
      for (const [, done] of this.jobs) done({ results: [], ms: 0 })
      this.jobs.clear()
      this.resolveClosed()
    }
  }

  notify (items: NotifyItem[]): Promise<NotifyResult> {
    const enc = items.map((it): unknown[] => {
      switch (it?.kind) {
        case 'entry': return [0, it.parent, it.parentInc ?? 0, it.name]
        case 'expire': return [4, it.parent, it.parentInc ?? 0, it.name]
        case 'inode': return [1, it.ino, it.incarnation ?? 0, it.offset ?? -1, it.length ?? 0]
        case 'delete': return [2, it.parent, it.parentInc ?? 0, it.child, it.childInc ?? 0, it.name]
        case 'store': return [3, it.ino, it.incarnation ?? 0, it.offset, it.data]
        default: return [-1]
      }
    })
    const id = this.nextJob++
    return new Promise((resolve) => {
      const fail = (): void => resolve({ results: items.map(() => -107), ms: 0 })
      if (this.h === null) { fail(); return }
      this.jobs.set(id, resolve)
      if (!native.notify(this.h, id, enc)) { this.jobs.delete(id); fail() }
    })
  }

  private req (): Request {
    const A = this.A
    return { uid: A[A_UID], gid: A[A_GID], pid: A[A_PID], umask: A[A_UMASK] }
  }

  private describe (op: number): string {
    return `${native.OP_NAMES[op]}(ino ${this.A[A_INO]}${this.A[A_INC] ? '.' + this.A[A_INC] : ''})`
  }

  /** Called by the binding for every request (and forget batch), on the JS thread. */
  readonly dispatch = (op: number, id: number, b1?: Buffer, b2?: Buffer, b3?: Buffer | ArrayBuffer): void => {
    const A = this.A
    const ops = this.ops as any
    if (op === OP.forget) {
      const f = new Float64Array(b3 as ArrayBuffer)
      for (let i = 0; i + 2 < f.length; i += 3) {
        try { this.ops.forget?.(f[i], f[i + 1], f[i + 2]) } catch (e) { this.log(`fuse-ll: forget(ino ${f[i]}) threw: ${(e as Error)?.stack ?? e}`) }
      }
      return
    }
    const what = this.describe(op)
    let answer: unknown
    try {
      const r = this.req()
      const ino = A[A_INO]; const inc = A[A_INC]; const N = A_N
      switch (op) {
        case OP.lookup: answer = ops.lookup(r, ino, inc, b1); break
        case OP.getattr: answer = ops.getattr(r, ino, inc, A[N] < 0 ? null : A[N]); break
        case OP.setattr: answer = ops.setattr(r, ino, inc, this.setAttr(), A[N + 5] < 0 ? null : A[N + 5]); break
        case OP.readlink: answer = ops.readlink(r, ino, inc); break
        case OP.mknod: answer = ops.mknod(r, ino, inc, b1, A[N], A[N + 1]); break
        case OP.mkdir: answer = ops.mkdir(r, ino, inc, b1, A[N]); break
        case OP.unlink: answer = ops.unlink(r, ino, inc, b1); break
        case OP.rmdir: answer = ops.rmdir(r, ino, inc, b1); break
        case OP.symlink: answer = ops.symlink(r, ino, inc, b1, b2); break
        case OP.rename: answer = ops.rename(r, ino, inc, b1, A[A_INO2], A[A_INC2], b2, A[N]); break
        case OP.link: answer = ops.link(r, ino, inc, A[A_INO2], A[A_INC2], b1); break
        case OP.open: answer = ops.open(r, ino, inc, A[N]); break
        case OP.read: answer = ops.read(r, ino, inc, A[N], A[N + 1], A[N + 2]); break
        case OP.write: answer = ops.write(r, ino, inc, A[N], b3, A[N + 1], A[N + 2]); break
        case OP.flush: answer = ops.flush(r, ino, inc, A[N]); break
        case OP.release: answer = ops.release(r, ino, inc, A[N], A[N + 1]); break
        case OP.fsync: answer = ops.fsync(r, ino, inc, A[N], A[N + 1] !== 0); break
        case OP.opendir: answer = ops.opendir(r, ino, inc, A[N]); break
        case OP.readdir: answer = ops.readdir(r, ino, inc, A[N], A[N + 2], A[N + 1]); break
        case OP.readdirplus: {
          const dino = ino; const dinc = inc
          answer = ops.readdirplus(r, ino, inc, A[N], A[N + 2], A[N + 1])
          this.settle(op, id, answer, what, (v) => this.answerDirPlus(id, v, dino, dinc))
          return
        }
        case OP.releasedir: answer = ops.releasedir(r, ino, inc, A[N]); break
        case OP.fsyncdir: answer = ops.fsyncdir(r, ino, inc, A[N], A[N + 1] !== 0); break
        case OP.statfs: answer = ops.statfs(r, ino, inc); break
        case OP.setxattr: answer = ops.setxattr(r, ino, inc, b1, b3, A[N]); break
        case OP.getxattr: answer = ops.getxattr(r, ino, inc, b1); break
        case OP.listxattr: answer = ops.listxattr(r, ino, inc); break
        case OP.removexattr: answer = ops.removexattr(r, ino, inc, b1); break
        case OP.access: answer = ops.access(r, ino, inc, A[N]); break
        case OP.create: answer = ops.create(r, ino, inc, b1, A[N], A[N + 1]); break
        case OP.fallocate: answer = ops.fallocate(r, ino, inc, A[N], A[N + 1], A[N + 2], A[N + 3]); break
        case OP.lseek: answer = ops.lseek(r, ino, inc, A[N], A[N + 1], A[N + 2]); break
        case OP.copyFileRange: answer = ops.copyFileRange(r, ino, inc, A[N], A[N + 1], A[A_INO2], A[A_INC2], A[N + 2], A[N + 3], A[N + 4], A[N + 5]); break
        default: this.fail(id, EIO, `${what}: no handler for op ${op}`); return
      }
    } catch (e) {
      this.thrown(id, e, what)
      return
    }
    this.settle(op, id, answer, what, undefined, A[A_INO])
  }

  private setAttr (): SetAttr {
    const A = this.A; const N = A_N; const v = A[N]
    const s: SetAttr = { valid: v }
    if (v & SETATTR.MODE) s.mode = A[N + 1]
    if (v & SETATTR.UID) s.uid = A[N + 2]
    if (v & SETATTR.GID) s.gid = A[N + 3]
    if (v & SETATTR.SIZE) s.size = A[N + 4]
    if (v & (SETATTR.ATIME | SETATTR.ATIME_NOW)) { s.atime = this.T[0]; if (v & SETATTR.ATIME_NOW) s.atimeNow = true }
    if (v & (SETATTR.MTIME | SETATTR.MTIME_NOW)) { s.mtime = this.T[1]; if (v & SETATTR.MTIME_NOW) s.mtimeNow = true }
    if (v & SETATTR.CTIME) s.ctime = this.T[2]
    return s
  }

  /** `ino`: the request's inode number, kept here because the argument scratch is overwritten by the next request before a Promise settles */
  private settle (op: number, id: number, answer: unknown, what: string, custom?: (v: unknown) => void, ino = 0): void {
    if (isPromise(answer)) {
      answer.then((v) => this.answer(op, id, v, what, custom, ino), (e) => this.thrown(id, e, what))
      return
    }
    this.answer(op, id, answer, what, custom, ino)
  }

  private thrown (id: number, e: unknown, what: string): void {
    const n = errnoOf(e)
    if (n) { this.reply(() => native.replyErr(this.h!, id, n), id, what); return }
    this.fail(id, EIO, `${what} threw: ${(e as Error)?.stack ?? String(e)}`)
  }

  private fail (id: number, errno: number, line: string): void {
    this.log(`fuse-ll: ${line} (answered ${errno === EIO ? 'EIO' : 'errno ' + errno})`)
    try { native.replyErr(this.h!, id, errno) } catch {}
  }

  /** Runs one native reply; a TypeError from the binding (bad value) was answered EIO there: log it. */
  private reply (f: () => number, id: number, what: string): void {
    try {
      f()
    } catch (e) {
      this.log(`fuse-ll: ${what} answered with a bad value: ${(e as Error).message} (answered EIO)`)
      try { native.replyErr(this.h!, id, EIO) } catch {}
    }
  }

  private answer (op: number, id: number, v: unknown, what: string, custom: ((v: unknown) => void) | undefined, ino: number): void {
    const h = this.h!
    if (typeof v === 'number' && v < 0) {
      if (Number.isInteger(v) && v > -4096) { native.replyErr(h, id, -v); return }
      this.fail(id, EIO, `${what} answered ${v}, not an errno`)
      return
    }
    if (custom !== undefined) { this.reply(() => { custom(v); return 0 }, id, what); return }
    this.reply(() => this.answerValue(op, id, v, what, ino), id, what)
  }

  private putAttr (a: Attr): void {
    if (a === null || typeof a !== 'object') throw new TypeError('attributes must be an object with a mode')
    const R = this.R
    R[R_MODE] = a.mode; R[R_NLINK] = a.nlink ?? 1; R[R_UID] = a.uid ?? 0; R[R_GID] = a.gid ?? 0
    R[R_RDEV] = a.rdev ?? 0; R[R_SIZE] = a.size ?? 0; R[R_BLOCKS] = a.blocks ?? 0; R[R_BLKSIZE] = a.blksize ?? 4096
    R[R_INO] = a.ino ?? 0
    this.RT[0] = timeNs(a.atime, 'atime'); this.RT[1] = timeNs(a.mtime, 'mtime'); this.RT[2] = timeNs(a.ctime, 'ctime')
  }

  private entryArgs (e: Entry): [number, number, number, number, number] {
    if (e === null || typeof e !== 'object') throw new TypeError('an entry must be an object { ino, attr }')
    if (e.ino !== 0) this.putAttr(e.attr as Attr)
    this.R[R_NOCAP] = e.ino !== 0 && this.capFree !== undefined && (this.R[R_MODE] & S_IFMT) === S_IFREG && this.noCapability(e.ino) ? 1 : 0
    return [e.ino, e.incarnation ?? 0, e.generation ?? 0, e.entryTimeout ?? this.et, e.attrTimeout ?? this.at]
  }

  /** MountOptions.capabilityFree; false when it throws (then the handler answers). */
  private noCapability (ino: number): boolean {
    try { return this.capFree!(ino) === true } catch { return false }
  }

  private answerValue (op: number, id: number, v: any, what: string, ino: number): number {
    const h = this.h!
    switch (op) {
      case OP.lookup: case OP.mknod: case OP.mkdir: case OP.symlink: case OP.link: {
        const [ino, inc, gen, et, at] = this.entryArgs(v)
        return native.replyEntry(h, id, ino, inc, gen, et, at)
      }
      case OP.create: {
        const [ino, inc, gen, et, at] = this.entryArgs(v)
        return native.replyCreate(h, id, ino, inc, gen, et, at, v.fh, openFlags(v))
      }
      case OP.getattr: case OP.setattr: {
        const has = v !== null && typeof v === 'object' && typeof v.attr === 'object'
        this.putAttr(has ? v.attr : v)
        return native.replyAttr(h, id, has ? v.attrTimeout : this.at, ino)
      }
      case OP.open: case OP.opendir:
        if (typeof v === 'number') return native.replyOpen(h, id, v, 0)
        if (v === null || typeof v !== 'object') throw new TypeError('open must answer a handle number or { fh }')
        return native.replyOpen(h, id, v.fh, openFlags(v))
      case OP.read: return native.replyBuf(h, id, v)
      case OP.readlink: return native.replyReadlink(h, id, v)
      case OP.write: case OP.copyFileRange: return native.replyCount(h, id, v)
      case OP.lseek: return native.replyLseek(h, id, v)
      case OP.statfs: {
        if (v === null || typeof v !== 'object') throw new TypeError('statfs must answer an object')
        const R = this.R
        R[0] = v.bsize ?? 4096; R[1] = v.frsize ?? v.bsize ?? 4096; R[2] = v.blocks ?? 0; R[3] = v.bfree ?? 0
        R[4] = v.bavail ?? v.bfree ?? 0; R[5] = v.files ?? 0; R[6] = v.ffree ?? 0; R[7] = v.favail ?? v.ffree ?? 0
        R[8] = v.fsid ?? 0; R[9] = v.flag ?? 0; R[10] = v.namemax ?? 255
        return native.replyStatfs(h, id)
      }
      case OP.getxattr: return native.replyXattr(h, id, v)
      case OP.listxattr: {
        if (!Array.isArray(v)) throw new TypeError('listxattr must answer an array of names (Buffers)')
        const parts: Uint8Array[] = []
        for (const n of v) {
          if (!(n instanceof Uint8Array) || n.length === 0 || n.includes(0)) throw new TypeError('an xattr name is a non-empty Buffer without NUL')
          parts.push(n, ZERO)
        }
        return native.replyXattr(h, id, Buffer.concat(parts))
      }
      case OP.readdir: {
        if (!Array.isArray(v)) throw new TypeError('readdir must answer an array of { name, ino, mode, off }')
        for (const e of v as DirEntry[]) {
          if (e === null || typeof e !== 'object') throw new TypeError('a readdir entry must be an object')
          if (native.dirAdd(h, id, e.name, e.ino, e.mode, e.off) !== 1) break
        }
        return native.dirEnd(h, id)
      }
      default:
        if (v === undefined || v === 0) return native.replyErr(h, id, 0)
        throw new TypeError(`${what} answers nothing (undefined or 0), got ${typeof v}`)
    }
  }

  private answerDirPlus (id: number, v: unknown, ino: number, inc: number): void {
    const h = this.h!
    if (!Array.isArray(v)) throw new TypeError('readdirplus must answer an array of { name, off, entry }')
    let sent = 0
    for (const e of v as DirPlusEntry[]) {
      if (e === null || typeof e !== 'object') throw new TypeError('a readdirplus entry must be an object')
      const [eino, einc, gen, et, at] = this.entryArgs(e.entry)
      const r = native.dirPlusAdd(h, id, e.name, eino, einc, gen, et, at, e.off)
      if (r !== 1) break
      sent++
    }
    native.dirEnd(h, id)
    try { this.ops.readdirplusSent?.(ino, inc, v as DirPlusEntry[], sent) } catch (e) { this.log(`fuse-ll: readdirplusSent threw: ${(e as Error)?.stack ?? e}`) }
  }
}

const ZERO = new Uint8Array(1)

function openFlags (v: Open): number {
  return (v.directIo ? 1 : 0) | (v.keepCache ? 2 : 0) | (v.nonseekable ? 4 : 0) | (v.cacheDir ? 8 : 0) | (v.noflush ? 16 : 0)
}
