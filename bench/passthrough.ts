/**
 * A minimal synchronous fuse-native passthrough, the "what the binding
 * itself costs" peer of bench/throughput.ts: same binding (fuse/binding.ts),
 * same mount options as the rewindfs adapter (MOUNT_OPTIONS, force,
 * autoUnmount, same timeouts), the same set of implemented ops (so the same
 * kernel round trips: opendir, flush, getxattr, ...), every handler answered
 * synchronously with fs.*Sync on the backing directory. It never touches its
 * own mount: every path is resolved under the source directory.
 *
 *   node dist/bench/passthrough.js SOURCE MOUNTPOINT
 *
 * Prints "ready" on stdout once mounted. Unmounts and exits on SIGTERM/SIGINT
 * or when stdin closes (so it never outlives the bench that started it).
 * Differences from rewindfs: fsync really fsyncs the backing file (the
 * rewindfs adapter answers fsync without work); xattrs are not stored
 * (getxattr answers ENODATA, setxattr EOPNOTSUPP); inode numbers are the
 * backing ones truncated to 32 bits.
 */
import fs from 'node:fs'
import path from 'node:path'
import { Fuse, type FuseOps, type Stat } from '../fuse/binding.js'
import { MOUNT_OPTIONS } from '../fuse/adapter.js'

const [src, mnt] = process.argv.slice(2).map(p => p && path.resolve(p))
if (!src || !mnt) { process.stderr.write('usage: passthrough SOURCE MOUNTPOINT\n'); process.exit(2) }
process.umask(0)

const P = (p: string): string => src + (p === '/' ? '' : p)
const EIO = -5

function errno (e: unknown): number {
  const n = (e as { errno?: unknown })?.errno
  return typeof n === 'number' && n < 0 ? n : EIO
}

function toStat (s: fs.BigIntStats): Stat {
  return {
    mode: Number(s.mode), uid: Number(s.uid), gid: Number(s.gid), size: Number(s.size), dev: Number(s.dev & 0xffffffffn),
    nlink: Number(s.nlink), ino: Number(s.ino & 0xffffffffn), rdev: Number(s.rdev & 0xffffffffn), blksize: Number(s.blksize),
    blocks: Number(s.blocks), atime: s.atimeNs, mtime: s.mtimeNs, ctime: s.ctimeNs
  }
}

/** status handler: fn's return value is ignored, exceptions become -errno */
function st<A extends unknown[]> (fn: (...a: A) => void): (...a: [...A, (e: number) => void]) => void {
  return (...a) => {
    const cb = a.pop() as (e: number) => void
    let r = 0
    try { fn(...(a as unknown as A)) } catch (e) { r = errno(e) }
    cb(r)
  }
}

/** value handler: cb(0, value) or cb(-errno) */
function val<A extends unknown[], T> (fn: (...a: A) => T): (...a: [...A, (e: number, v?: T) => void]) => void {
  return (...a) => {
    const cb = a.pop() as (e: number, v?: T) => void
    let v: T
    try { v = fn(...(a as unknown as A)) } catch (e) { cb(errno(e)); return }
    cb(0, v)
  }
}

/** byte-count handler: cb(n) or cb(-errno) */
function num<A extends unknown[]> (fn: (...a: A) => number): (...a: [...A, (n: number) => void]) => void {
  return (...a) => {
    const cb = a.pop() as (n: number) => void
    let n: number
    try { n = fn(...(a as unknown as A)) } catch (e) { n = errno(e) }
    cb(n)
  }
}

const sec = (ns: bigint): number => Number(ns) / 1e9

const ops: FuseOps = {
  init: (cb) => cb(0),
  statfs: val((_p: string) => {
    const s = fs.statfsSync(src)
    return { bsize: s.bsize, frsize: s.bsize, blocks: s.blocks, bfree: s.bfree, bavail: s.bavail, files: s.files, ffree: s.ffree, favail: s.ffree, namemax: 255 }
  }) as FuseOps['statfs'],
  getattr: val((p: string) => toStat(fs.lstatSync(P(p), { bigint: true }))) as FuseOps['getattr'],
  fgetattr: val((_p: string | null, fh: number) => toStat(fs.fstatSync(fh, { bigint: true }))) as FuseOps['fgetattr'],
  readdir: (p, cb) => {
    let names: string[]; let stats: Stat[]
    try {
      const dir = P(p)
      names = fs.readdirSync(dir)
      stats = names.map(n => toStat(fs.lstatSync(path.join(dir, n), { bigint: true })))
    } catch (e) { cb(errno(e)); return }
    cb(0, names, stats)
  },
  opendir: val((p: string, _flags: number) => { fs.accessSync(P(p)); return 0 }) as FuseOps['opendir'],
  releasedir: st((_p: string | null, _fh: number) => {}),
  readlink: val((p: string) => fs.readlinkSync(P(p))) as FuseOps['readlink'],
  chmod: st((p: string, mode: number) => fs.chmodSync(P(p), mode & 0o7777)),
  chown: st((p: string, uid: number, gid: number) => fs.lchownSync(P(p), uid, gid)),
  utimens: st((p: string, a: bigint | null, m: bigint | null) => {
    let s: fs.BigIntStats | null = null
    if (a === null || m === null) s = fs.lstatSync(P(p), { bigint: true })
    fs.lutimesSync(P(p), sec(a ?? s!.atimeNs), sec(m ?? s!.mtimeNs))
  }),
  truncate: st((p: string, size: number) => fs.truncateSync(P(p), size)),
  ftruncate: st((_p: string | null, fh: number, size: number) => fs.ftruncateSync(fh, size)),
  mkdir: st((p: string, mode: number) => fs.mkdirSync(P(p), mode & 0o7777)),
  rmdir: st((p: string) => fs.rmdirSync(P(p))),
  symlink: st((target: string, p: string) => fs.symlinkSync(target, P(p))),
  unlink: st((p: string) => fs.unlinkSync(P(p))),
  rename: st((a: string, b: string) => fs.renameSync(P(a), P(b))),
  link: st((a: string, b: string) => fs.linkSync(P(a), P(b))),
  open: val((p: string, flags: number) => fs.openSync(P(p), flags)) as FuseOps['open'],
  create: val((p: string, mode: number, flags: number) => fs.openSync(P(p), flags | fs.constants.O_CREAT, mode & 0o7777)) as FuseOps['create'],
  release: st((_p: string | null, fh: number) => fs.closeSync(fh)),
  flush: st((_p: string | null, _fh: number) => {}),
  fsync: st((_p: string | null, datasync: number, fh: number) => { if (datasync) fs.fdatasyncSync(fh); else fs.fsyncSync(fh) }),
  fsyncdir: st((_p: string | null, _d: number, _fh: number) => {}),
  read: num((_p: string | null, fh: number, buf: Buffer, len: number, pos: number) => fs.readSync(fh, buf, 0, len, pos)),
  write: num((_p: string | null, fh: number, buf: Buffer, len: number, pos: number) => fs.writeSync(fh, buf, 0, len, pos)),
  setxattr: (_p, _n, _v, _pos, _f, cb) => cb(-95),
  getxattr: (_p, _n, _pos, cb) => cb(0, null),
  listxattr: (_p, cb) => cb(0, []),
  removexattr: (_p, _n, cb) => cb(-61)
}

const fuse = new Fuse(mnt, ops, {
  force: true,
  autoUnmount: true,
  fsname: 'passthrough',
  timeout: { default: 30000, fsync: false, release: false },
  extraOptions: MOUNT_OPTIONS
})

let stopping = false
function stop (): void {
  if (stopping) return
  stopping = true
  fuse.unmount(() => process.exit(0))
  setTimeout(() => process.exit(0), 10000).unref()
}
for (const sig of ['SIGTERM', 'SIGINT', 'SIGHUP'] as const) process.on(sig, stop)
process.stdin.on('end', stop)
process.stdin.on('error', stop)
process.stdin.resume()

fuse.mount(err => {
  if (err) { process.stderr.write(`passthrough: mount failed: ${err.message}\n`); process.exit(1) }
  process.stdout.write('ready\n')
})
