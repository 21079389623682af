/**
 * Typed ESM wrapper around the vendored, patched fuse-native 2.2.6 binding
 * (fuse/native, CommonJS, MIT Mathias Buus). This is the ONLY module that may
 * load fuse-native; everything else imports `Fuse` from here.
 *
 * Conventions (all handlers):
 * - Every callback's first argument is a number: 0, a negative errno
 *   (`Fuse.ENOENT` is -2) or, for read/write, a byte count. Never pass
 *   null/undefined to ops other than getattr/fgetattr/readdir/statfs/getxattr:
 *   the binding throws "Expected number" in a nextTick and the daemon dies.
 * - Call back exactly once. A synchronous throw inside a handler crashes the
 *   process; wrap handlers.
 * - `path` is `null` when libfuse has no path for an open file (it was
 *   unlinked while open and the mount uses `hard_remove`; flag_nullpath_ok is
 *   set). This can happen for read, write, flush, fsync, release, ftruncate and
 *   fgetattr; use the fh then.
 * - fh values are int32 and 0 means "no handle".
 * - 64-bit offsets/sizes arrive as JS numbers (exact below 2^53).
 * - Stat fields mode, uid, gid, dev, nlink, ino, rdev, blksize are uint32;
 *   size and blocks are up to 2^53; times are BigInt ns since the epoch
 *   (full precision), a Date, or a number of ms since the epoch.
 */
import { createRequire } from 'node:module'
import { existsSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

/** A callback that only carries a status: 0 or a negative errno. */
export type StatusCb = (err: number) => void
/** A callback carrying a status and, on success (0), a value. */
export type ValueCb<T> = (err: number, value?: T) => void

/** Time accepted in stats: BigInt ns since the epoch, a Date, or ms since the epoch. */
export type StatTime = bigint | Date | number

/** What getattr/fgetattr/readdir return (missing fields become 0, nlink 1, times now). */
export interface Stat {
  /** file type + permission bits, e.g. 0o100644 (uint32) */
  mode: number
  uid?: number
  gid?: number
  /** bytes */
  size?: number
  dev?: number
  /** defaults to 1 */
  nlink?: number
  /** uint32; only reported to the kernel with the `use_ino` option (then REQUIRED in readdir stats, or entries vanish) */
  ino?: number
  rdev?: number
  blksize?: number
  /** 512-byte blocks */
  blocks?: number
  atime?: StatTime
  mtime?: StatTime
  ctime?: StatTime
}

/** statfs result; every field is truncated to uint32. */
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
  namemax?: number
}

/** The JS-side caller identity of the request being served. */
export interface FuseContext {
  uid: number
  gid: number
  pid: number
  /** umask of the calling process (libfuse >= 2.8) */
  umask: number
}

/**
 * Kernel-invalidation items (run by `Fuse.invalidate`):
 * - `[0, parentNodeid, name]`      inval_entry(parent, name)
 * - `[1, nodeid, off, len]`        inval_inode(nodeid, off, len); off -1 = attributes only, `0, 0` = attrs + all pages
 * - `[2, parentNodeid, childNodeid, name]` notify_delete
 * - `[3, path]`                    inval_entry(node(dirname(path)), basename(path)); use for paths whose existence/type changed
 * - `[4, path, off, len]`          inval_inode(node(path), off, len); use for survivors whose attrs/data changed
 * - `[5, path]`                    a new generation for libfuse's node of path: the kernel's next lookup of the name gets a fresh inode and marks the old one (held by open handles) bad; use for names a restore takes from a non-directory
 * - `[6]`                          inval_inode (attributes and all pages) of every node libfuse keeps without a name (files unlinked while open): no path reaches them
 * Node ids and offsets may be numbers or BigInts; paths are absolute mount paths ("/a/b").
 */
export type InvalidateItem =
  | [0, number | bigint, string]
  | [1, number | bigint, number | bigint, number | bigint]
  | [1, number | bigint]
  | [2, number | bigint, number | bigint, string]
  | [3, string]
  | [4, string, number | bigint, number | bigint]
  | [4, string]
  | [5, string]
  | [6]

export interface InvalidateResult {
  /** per item: 0 = done, 1 = skipped (libfuse has no node, so nothing is cached), <0 = -errno (-ENOENT: dentry not cached, -ENOTCONN: not mounted, -ENOSYS: layout check failed, -EINVAL: bad item) */
  results: number[]
  /** time the batch spent on the native notify thread, in ms */
  ms: number
}

/**
 * Operation handlers. Signatures are the patched ones (see fuse/native/index.cjs).
 * Implement only what you need: unimplemented ops return ENOSYS to the kernel
 * (getattr has a default that only knows "/").
 */
export interface FuseOps {
  init?(cb: StatusCb): void
  access?(path: string, mode: number, cb: StatusCb): void
  statfs?(path: string, cb: (err: number, st?: Statfs) => void): void
  getattr?(path: string, cb: (err: number, st?: Stat) => void): void
  /** fstat on an open file; `fh` is what open/create returned. path is null for an unlinked open file under hard_remove. When not implemented libfuse uses getattr(path). */
  fgetattr?(path: string | null, fh: number, cb: (err: number, st?: Stat) => void): void
  flush?(path: string | null, fh: number, cb: StatusCb): void
  /** NOTE the order: datasync before fh (the upstream README is wrong). datasync is 0/1. */
  fsync?(path: string | null, datasync: number, fh: number, cb: StatusCb): void
  fsyncdir?(path: string | null, datasync: number, fh: number, cb: StatusCb): void
  /** whole directory in one call; stats used only if stats.length === names.length (mode for d_type, ino with use_ino). Names <= 1023 UTF-8 bytes. */
  readdir?(path: string, cb: (err: number, names?: string[], stats?: Stat[]) => void): void
  /** size in bytes */
  truncate?(path: string, size: number, cb: StatusCb): void
  ftruncate?(path: string | null, fh: number, size: number, cb: StatusCb): void
  /**
   * atime/mtime: BigInt nanoseconds since the epoch, or null = leave unchanged
   * (UTIME_OMIT, e.g. `touch -m`). UTIME_NOW arrives as the current time in ns.
   */
  utimens?(path: string, atime: bigint | null, mtime: bigint | null, cb: StatusCb): void
  readlink?(path: string, cb: (err: number, target?: string) => void): void
  chown?(path: string, uid: number, gid: number, cb: StatusCb): void
  chmod?(path: string, mode: number, cb: StatusCb): void
  mknod?(path: string, mode: number, dev: number, cb: StatusCb): void
  /** position is always 0 on Linux */
  setxattr?(path: string, name: string, value: Buffer, position: number, flags: number, cb: StatusCb): void
  /** return null for ENODATA */
  getxattr?(path: string, name: string, position: number, cb: (err: number, value?: Buffer | null) => void): void
  listxattr?(path: string, cb: (err: number, names?: string[]) => void): void
  removexattr?(path: string, name: string, cb: StatusCb): void
  /** flags: Linux open(2) flags (O_TRUNC is stripped by the kernel; a truncate follows). Return an int32 fh (0 = none). */
  open?(path: string, flags: number, cb: (err: number, fh?: number) => void): void
  /** flags: the real open flags (patched; upstream passed fi->fh). */
  opendir?(path: string, flags: number, cb: (err: number, fh?: number) => void): void
  /** Fill `buf` (zero-copy view of libfuse memory, detached after cb) with up to len bytes at pos; cb(bytesRead or -errno). */
  read?(path: string | null, fh: number, buf: Buffer, len: number, pos: number, cb: (bytesOrErr: number) => void): void
  /** `buf` is detached after cb: copy it if you keep it. cb(bytesWritten or -errno). */
  write?(path: string | null, fh: number, buf: Buffer, len: number, pos: number, cb: (bytesOrErr: number) => void): void
  release?(path: string | null, fh: number, cb: StatusCb): void
  releasedir?(path: string | null, fh: number, cb: StatusCb): void
  /** Patched: flags are the open(2) flags of the creating open (O_EXCL, O_APPEND, O_WRONLY...). */
  create?(path: string, mode: number, flags: number, cb: (err: number, fh?: number) => void): void
  unlink?(path: string, cb: StatusCb): void
  /** no RENAME_* flags in libfuse2 */
  rename?(src: string, dest: string, cb: StatusCb): void
  link?(existing: string, newPath: string, cb: StatusCb): void
  symlink?(target: string, linkPath: string, cb: StatusCb): void
  mkdir?(path: string, mode: number, cb: StatusCb): void
  rmdir?(path: string, cb: StatusCb): void
}

/** Per-op timeout table: ms or false (no timeout); `default` applies to unlisted ops. */
export type TimeoutTable = { default?: number | false } & { [op in keyof FuseOps]?: number | false }

export interface FuseOptions {
  /** per-op timeout in ms (default 15000); false disables; after it the kernel request fails with ETIMEDOUT */
  timeout?: number | false | TimeoutTable
  /** run `fusermount -uz` first if the mountpoint is a dead FUSE mount (ENOTCONN) */
  force?: boolean
  /** create the mountpoint if missing */
  mkdir?: boolean
  debug?: boolean
  allowOther?: boolean
  allowRoot?: boolean
  /** recommended: libfuse's helper unmounts when the process dies */
  autoUnmount?: boolean
  defaultPermissions?: boolean
  blkdev?: boolean
  blksize?: number
  maxRead?: number
  fd?: number
  fsname?: string
  subtype?: string
  /** never use for rewindfs (restores would be invisible) */
  kernelCache?: boolean
  autoCache?: boolean
  umask?: number
  uid?: number
  gid?: number
  /** seconds; tested for truthiness, so 0 cannot be set here: use extraOptions ['entry_timeout=0'] */
  entryTimeout?: number
  attrTimeout?: number
  acAttrTimeout?: number
  noforget?: boolean
  remember?: number
  modules?: string
  /**
   * Raw libfuse -o options appended verbatim, one option per entry (no commas):
   * e.g. ['big_writes', 'max_write=131072', 'use_ino', 'hard_remove',
   * 'entry_timeout=60', 'attr_timeout=60', 'negative_timeout=0'].
   * The whole -o string must fit in 1023 bytes, else the constructor throws.
   */
  extraOptions?: string[]
}

/** The Fuse class (instance API). */
export interface FuseInstance {
  readonly mnt: string
  readonly opts: FuseOptions
  /** mount; cb fires once libfuse's init ran (the kernel connection is up) */
  mount(cb: (err: Error | null) => void): void
  /** `fusermount -uz` + native cleanup */
  unmount(cb: (err: (Error & { unmountFailure?: boolean }) | null) => void): void
  /** errno by name: fuse.errno('ENOENT') === -2 (-1 when unknown) */
  errno(code: string): number
  /**
   * Caller identity {uid, gid, pid, umask} of the request whose handler is
   * being invoked right now. Valid only synchronously inside a handler (read
   * it before any await/callback); null outside.
   */
  context(): FuseContext | null
  /**
   * Invalidate kernel caches. Runs on a dedicated native thread (never the JS
   * thread); batches are serialised (one at a time, the rest queued).
   * NEVER await this inside a FUSE handler (it can wait for that very request).
   * Protocol: swap the tree first, then invalidate; report "restored" only
   * when this resolves. Before mount / after unmount every result is -ENOTCONN.
   */
  invalidate(items: InvalidateItem[]): Promise<InvalidateResult>
  invalidate(items: InvalidateItem[], cb: (err: Error | null, r?: InvalidateResult) => void): Promise<InvalidateResult>
  /** libfuse node id of an absolute path: >0, 0 = not in libfuse's table (nothing cached), <0 = -errno (-ENOTCONN, -ENOSYS) */
  nodeid(path: string): number
  /** snapshot of libfuse's node table: [nodeid, parentId, name (null if unlinked), nlookup] */
  listNodes(): Array<[number, number, string | null, number]>
  /** true if the libfuse 2.9.9 private-struct mirror was verified at mount (path items work) */
  layoutOk(): boolean
}

/** Negative Linux errno constants (static properties of Fuse, as in fuse-native). */
export interface FuseErrnos {
  EPERM: -1;ENOENT: -2;ESRCH: -3;EINTR: -4;EIO: -5;ENXIO: -6;E2BIG: -7;ENOEXEC: -8;EBADF: -9;ECHILD: 
  -10;EAGAIN: -11;ENOMEM: -12;EACCES: -13;EFAULT: -14;ENOTBLK: -15;EBUSY: -16;EEXIST: -17;EXDEV: -18;ENODEV: 
  -19;ENOTDIR: -20;EISDIR: -21;EINVAL: -22;ENFILE: -23;EMFILE: -24;ENOTTY: -25;ETXTBSY: -26;EFBIG: -27;ENOSPC: 
  -28;ESPIPE: -29;EROFS: -30;EMLINK: -31;EPIPE: -32;EDOM: -33;ERANGE: -34;EDEADLK: -35;ENAMETOOLONG: 
  -36;ENOLCK: -37;ENOSYS: -38;ENOTEMPTY: -39;ELOOP: -40;EWOULDBLOCK: -11;ENOMSG: -42;EIDRM: -43;ECHRNG: 
  -44;EL2NSYNC: -45;EL3HLT: -46;EL3RST: -47;ELNRNG: -48;EUNATCH: -49;ENOCSI: -50;EL2HLT: -51;EBADE: -52;EBADR: 
  -53;EXFULL: -54;ENOANO: -55;EBADRQC: -56;EBADSLT: -57;EDEADLOCK: -35;EBFONT: -59;ENOSTR: -60;ENODATA: 
  -61;ETIME: -62;ENOSR: -63;ENONET: -64;ENOPKG: -65;EREMOTE: -66;ENOLINK: -67;EADV: -68;ESRMNT: -69;ECOMM: 
  -70;EPROTO: -71;EMULTIHOP: -72;EDOTDOT: -73;EBADMSG: -74;EOVERFLOW: -75;ENOTUNIQ: -76;EBADFD: -77;EREMCHG: 
  -78;ELIBACC: -79;ELIBBAD: -80;ELIBSCN: -81;ELIBMAX: -82;ELIBEXEC: -83;EILSEQ: -84;ERESTART: -85;ESTRPIPE: 
  -86;EUSERS: -87;ENOTSOCK: -88;EDESTADDRREQ: -89;EMSGSIZE: -90;EPROTOTYPE: -91;ENOPROTOOPT: 
  -92;EPROTONOSUPPORT: -93;ESOCKTNOSUPPORT: -94;EOPNOTSUPP: -95;EPFNOSUPPORT: -96;EAFNOSUPPORT: -97;EADDRINUSE: 
  -98;EADDRNOTAVAIL: -99;ENETDOWN: -100;ENETUNREACH: -101;ENETRESET: -102;ECONNABORTED: -103;ECONNRESET: 
  -104;ENOBUFS: -105;EISCONN: -106;ENOTCONN: -107;ESHUTDOWN: -108;ETOOMANYREFS: -109;ETIMEDOUT: 
  -110;ECONNREFUSED: -111;EHOSTDOWN: -112;EHOSTUNREACH: -113;EALREADY: -114;EINPROGRESS: -115;ESTALE: 
  -116;EUCLEAN: -117;ENOTNAM: -118;ENAVAIL: -119;EISNAM: -120;EREMOTEIO: -121;EDQUOT: -122;ENOMEDIUM: 
  -123;EMEDIUMTYPE: -124
}

export interface FuseConstructor extends FuseErrnos {
  new (mnt: string, ops: FuseOps, opts?: FuseOptions): FuseInstance
  /** `fusermount -uz <mnt>` */
  unmount(mnt: string, cb: (err: Error | null) => void): void
  /** rewindfs: see `lxattrs` below */
  lxattrs(path: string): Record<string, Buffer> | null
  /** rewindfs: see `lsetxattr` below */
  lsetxattr(path: string, name: string, value: Uint8Array, flags?: number): void
  /** rewindfs: see `lremovexattr` below */
  lremovexattr(path: string, name: string): void
  /** rewindfs: see `requestCounts` below */
  requestCounts(): Record<string, number>
}

function nativeEntry (): string {
  const here = dirname(fileURLToPath(import.meta.url))
  const candidates = [
    join(here, 'native', 'index.cjs'), // running from source (fuse/binding.ts)
    join(here, '..', '..', 'fuse', 'native', 'index.cjs') // running from dist/fuse/binding.js
  ]
  for (const c of candidates) if (existsSync(c)) return c
  throw new Error('rewindfs: fuse/native/index.cjs not found (looked in ' + candidates.join(', ') + ')')
}

const require = createRequire(import.meta.url)

/** The patched fuse-native class. Build the addon first: `node scripts/build-native.mjs`. */
export const Fuse: FuseConstructor = require(nativeEntry()) as FuseConstructor

/**
 * Error thrown by the xattr functions below: `code` is the errno name
 * ('ENOTSUP', 'EPERM', 'ENODATA', ...), `errno` the negative errno.
 */
export interface XattrError extends Error { code: string, errno: number, syscall: string, path: string }

/**
 * All extended attributes of `path` (llistxattr, then lgetxattr per name;
 * a symlink's own, never its target's), or null when it has none or the
 * filesystem does not support xattrs (ENOTSUP). Synchronous syscalls on the
 * backing filesystem: never call it on a path inside a mount this process
 * serves (the JS thread would wait for itself). Throws an XattrError
 * (e.g. ENOENT) otherwise.
 */
export function lxattrs (path: string): Record<string, Buffer> | null { return Fuse.lxattrs(path) }

/**
 * Sets xattr `name` of `path` to `value` (lsetxattr(2); `flags` 0,
 * XATTR_CREATE = 1 or XATTR_REPLACE = 2). Same rules as `lxattrs`; throws
 * an XattrError on failure.
 */
export function lsetxattr (path: string, name: string, value: Uint8Array, flags = 0): void { Fuse.lsetxattr(path, name, value, flags) }

/** Removes xattr `name` of `path` (lremovexattr(2)); throws an XattrError (ENODATA when absent). */
export function lremovexattr (path: string, name: string): void { Fuse.lremovexattr(path, name) }

/**
 * FUSE requests served by this process since the addon was loaded, by
 * operation name (`{ getattr: 1234, write: 56, ... }`; operations with no
 * request are absent). Counted in C on the libfuse worker thread, one
 * relaxed atomic increment per request, before JS sees it; process-wide (all
 * mounts of the process together). A contract the FUSE layer keeps (see
 * PROTOCOL.md, `status.requests`): a rewrite keeps one counter per opcode.
 */
export function requestCounts (): Record<string, number> { return Fuse.requestCounts() }

/** Linux open(2) flags as the kernel passes them to open/create. */
export const O = {
  RDONLY: 0, WRONLY: 1, RDWR: 2, ACCMODE: 3, CREAT: 0o100, EXCL: 0o200, NOCTTY: 0o400,
  TRUNC: 0o1000, APPEND: 0o2000, NONBLOCK: 0o4000, DIRECT: 0o40000, LARGEFILE: 0o100000,
  DIRECTORY: 0o200000, NOFOLLOW: 0o400000, NOATIME: 0o1000000, CLOEXEC: 0o2000000
} as const

export default Fuse
