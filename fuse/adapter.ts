/**
 * The FUSE adapter: kernel operations (through the patched fuse-native in
 * fuse/native) translated to Workspace calls. The only module that knows
 * FUSE besides fuse/binding.ts.
 *
 * Every handler is synchronous and answers exactly once with a number
 * (fuse-native kills the process on anything else): FsError becomes -errno,
 * any other exception is logged and becomes -EIO. The daemon never touches
 * its own mount.
 */
import fs from 'node:fs'
import { Fuse, type FuseInstance, type FuseOps, type Stat as FuseStat, type InvalidateItem } from './binding.js'
import { FsError } from '../daemon/errno.js'
import type { Workspace, Stat, Caller } from '../daemon/workspace.js'

/** Mount options that keep the binding near its ceiling and restores exact (fuse-native.md §6, §8). */
export const MOUNT_OPTIONS = [
  'big_writes', 'max_write=131072', 'use_ino', 'hard_remove', 'nonempty',
  'entry_timeout=60', 'attr_timeout=60', 'negative_timeout=0', 'default_permissions', 'allow_other'
]

export interface AdapterOptions {
  /** directory to mount on */
  mountpoint: string
  /** the live workspace; read on every request, so it may be replaced (restore swaps its tables, not the object) */
  workspace: Workspace
  /** directory whose filesystem statfs reports (the store) */
  statfsPath: string
  /** log sink for unexpected errors */
  log?: (msg: string) => void
}

function toFuseStat (s: Stat): FuseStat {
  return s as unknown as FuseStat
}

/** A mounted workspace. */
export class FuseMount {
  readonly fuse: FuseInstance
  private readonly ws: Workspace
  private readonly log: (msg: string) => void
  /** requests answered, by kind, for status and benchmarks */
  readonly counts = { ops: 0, errors: 0 }

  constructor (private readonly o: AdapterOptions) {
    this.ws = o.workspace
    this.log = o.log ?? ((m) => process.stderr.write(m + '\n'))
    this.fuse = new Fuse(o.mountpoint, this.ops(), {
      force: true,
      autoUnmount: true,
      fsname: 'rewindfs',
      timeout: { default: 30000, fsync: false, release: false },
      extraOptions: MOUNT_OPTIONS
    })
  }

  /** Mounts; rejects with the binding's error (mount point busy, no /dev/fuse, ...). */
  mount (): Promise<void> {
    return new Promise((resolve, reject) => this.fuse.mount(err => err ? reject(err) : resolve()))
  }

  /** Unmounts (lazy detach by fusermount -uz inside the binding). */
  unmount (): Promise<void> {
    return new Promise((resolve, reject) => this.fuse.unmount(err => err ? reject(err) : resolve()))
  }

  /** Drops kernel caches of the given paths, off the JavaScript thread. */
  async invalidate (items: InvalidateItem[]): Promise<void> {
    if (items.length === 0) return
    await this.fuse.invalidate(items)
  }

  private caller (): Caller {
    const c = this.fuse.context()
    return c ? { uid: c.uid, gid: c.gid } : { uid: process.getuid?.() ?? 0, gid: process.getgid?.() ?? 0 }
  }

  /** -errno for an exception. */
  private errno (e: unknown, op: string, path: string | null): number {
    this.counts.errors++
    if (e instanceof FsError) return -e.errno
    this.log(`rewindfs: ${op} ${path ?? ''} failed unexpectedly: ${(e as Error)?.stack ?? String(e)}`)
    return -5 // EIO
  }

  private ops (): FuseOps {
    const ws = this.ws
    const self = this
    // status-only op: cb(result)
    const st = (op: string, fn: (...a: any[]) => void) => (...args: any[]) => {
      const cb = args[args.length - 1] as (n: number) => void
      let r = 0
      try { self.counts.ops++; fn(...args.slice(0, -1)) } catch (e) { r = self.errno(e, op, args[0]) }
      cb(r)
    }
    // value op: cb(0, value) or cb(-errno)
    const val = (op: string, fn: (...a: any[]) => unknown) => (...args: any[]) => {
      const cb = args[args.length - 1] as (n: number, v?: unknown) => void
      let v: unknown
      try { self.counts.ops++; v = fn(...args.slice(0, -1)) } catch (e) { cb(self.errno(e, op, args[0])); return }
      cb(0, v)
    }
    // byte-count op: cb(n) or cb(-errno)
    const num = (op: string, fn: (...a: any[]) => number) => (...args: any[]) => {
      const cb = args[args.length - 1] as (n: number) => void
      let n: number
      try { self.counts.ops++; n = fn(...args.slice(0, -1)) } catch (e) { n = self.errno(e, op, args[0]) }
      cb(n)
    }
    return {
      init: (cb) => cb(0),
      statfs: val('statfs', () => {
        const s = fs.statfsSync(this.o.statfsPath)
        // fuse-native carries uint32 fields: scale the block size so counts fit
        let bsize = s.bsize; let blocks = s.blocks; let bfree = s.bfree; let bavail = s.bavail
        while (blocks > 0xffffffff) { bsize *= 2; blocks = Math.floor(blocks / 2); bfree = Math.floor(bfree / 2); bavail = Math.floor(bavail / 2) }
        return { bsize, frsize: bsize, blocks, bfree, bavail, files: Math.min(s.files, 0xffffffff), ffree: Math.min(s.ffree, 0xffffffff), favail: Math.min(s.ffree, 0xffffffff), fsid: 0x72776673, flag: 0, namemax: 255 }
      }) as any,
      getattr: val('getattr', (p: string) => toFuseStat(ws.getattr(p))) as any,
      fgetattr: val('fgetattr', (p: string | null, fh: number) => toFuseStat(ws.fgetattr(fh))) as any,
      readdir: (p: string, cb: (err: number, names?: string[], stats?: FuseStat[]) => void) => {
        let r
        try { self.counts.ops++; r = ws.readdir(p) } catch (e) { cb(self.errno(e, 'readdir', p)); return }
        cb(0, r.names, r.stats.map(toFuseStat))
      },
      opendir: val('opendir', (p: string) => { ws.resolve(p); return 0 }) as any,
      releasedir: st('releasedir', () => {}),
      readlink: val('readlink', (p: string) => ws.readlink(p)) as any,
      chmod: st('chmod', (p: string, mode: number) => ws.chmod(p, mode)),
      chown: st('chown', (p: string, uid: number, gid: number) => ws.chown(p, uid, gid)),
      utimens: st('utimens', (p: string, a: bigint | null, m: bigint | null) => ws.utimens(p, a, m)),
      truncate: st('truncate', (p: string, size: number) => ws.truncate(p, size)),
      ftruncate: st('ftruncate', (p: string | null, fh: number, size: number) => ws.ftruncate(fh, size)),
      mkdir: st('mkdir', (p: string, mode: number) => ws.mkdir(p, mode, self.caller())),
      rmdir: st('rmdir', (p: string) => ws.rmdir(p)),
      mknod: st('mknod', (p: string, mode: number, dev: number) => ws.mknod(p, mode, dev, self.caller())),
      symlink: st('symlink', (target: string, p: string) => ws.symlink(target, p, self.caller())),
      unlink: st('unlink', (p: string) => ws.unlink(p)),
      rename: st('rename', (a: string, b: string) => ws.rename(a, b)),
      link: st('link', (a: string, b: string) => ws.link(a, b)),
      open: val('open', (p: string, flags: number) => ws.open(p, flags)) as any,
      create: val('create', (p: string, mode: number, flags: number) => ws.create(p, mode, flags, self.caller())) as any,
      release: st('release', (p: string | null, fh: number) => ws.release(fh)),
      flush: st('flush', () => {}),
      fsync: st('fsync', () => {}),
      fsyncdir: st('fsyncdir', () => {}),
      read: num('read', (p: string | null, fh: number, buf: Buffer, len: number, pos: number) => ws.read(fh, buf, len, pos)),
      write: num('write', (p: string | null, fh: number, buf: Buffer, len: number, pos: number) => ws.write(fh, buf, len, pos)),
      setxattr: st('setxattr', (p: string, name: string, value: Buffer, position: number, flags: number) => ws.setxattr(p, name, value, flags)),
      getxattr: val('getxattr', (p: string, name: string) => Buffer.from(ws.getxattr(p, name))) as any,
      listxattr: val('listxattr', (p: string) => ws.listxattr(p)) as any,
      removexattr: st('removexattr', (p: string, name: string) => ws.removexattr(p, name))
    }
  }
}
