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
import os from 'node:os'
import { Fuse, type FuseInstance, type FuseOps, type Stat as FuseStat, type InvalidateItem } from './binding.js'
import { FsError, isNoSpace } from '../base/errno.js'
import type { ChangeAttribution, FsOps, InodeOps, Stat, Caller, InvalidationPlan, RestoreAnnouncer } from '../fs/api.js'
import { HandleCalls } from './handle-calls.js'

/** Mount options that keep the binding near its ceiling and restores exact (fuse-native.md §6, §8). */
export const MOUNT_OPTIONS = [
  'big_writes', 'max_write=131072', 'use_ino', 'hard_remove', 'nonempty',
  'entry_timeout=60', 'attr_timeout=60', 'negative_timeout=0', 'default_permissions', 'allow_other'
]

export interface AdapterOptions {
  /** directory to mount on */
  mountpoint: string
  /** the live workspace; read on every request, so it may be replaced (restore swaps its tables, not the object) */
  workspace: FsOps & Pick<InodeOps, 'lookupAt'>
  /** directory whose filesystem statfs reports (the store) */
  statfsPath: string
  /** makes the live state durable (fsync, fsyncdir: the inode is passed for the record); absent: fsync only answers */
  durable?: (ino: number) => Promise<void>
  /** log sink for unexpected errors */
  log?: (msg: string) => void
  /** attribution of changes to tool calls (daemon/calls.ts); absent: none */
  attribution?: ChangeAttribution
}

/** What a change makes stale in the kernel beyond the node it came through (see answerAfterSiblings). */
interface Refresh {
  /** the inode's other names */
  paths: string[]
  /** a handle is open on the inode by a name that is gone (its node has no name) */
  nameless: boolean
}
const NOTHING: Refresh = { paths: [], nameless: false }

/** The binding's items for a plan, in the order the plan says (fuse/binding.ts InvalidateItem). */
export function invalidateItems (plan: InvalidationPlan): InvalidateItem[] {
  const items: InvalidateItem[] = []
  for (const p of plan.inodes) items.push([4, p, 0, 0])
  for (const p of plan.renew) items.push([5, p])
  if (plan.nameless) items.push([6])
  for (const p of plan.entries) items.push([3, p])
  items.push([1, 1, 0, 0])
  return items
}

function toFuseStat (s: Stat): FuseStat {
  return s as unknown as FuseStat
}

/**
 * Longest wait for the kernel to drop hard-link siblings' attributes before a
 * request is answered, ms. The notification normally lands in well under a
 * millisecond; the bound only matters when the notify thread is late. 50 ms
 * expired once in about fifteen runs of the conformance suite (its hard-link
 * cases: test/posix/conformance/namespace.ts) on 2 cores at a
 * load average of 10 (stat through the first name right after link() showed
 * the old ctime), so the bound is generous: it costs nothing when the thread
 * is on time.
 */
const SIBLING_WAIT_MS = 1000

/** A mounted workspace. */
export class FuseMount {
  readonly fuse: FuseInstance
  private readonly ws: FsOps
  private readonly log: (msg: string) => void
  /** requests answered, by kind, for status and benchmarks */
  readonly counts = { ops: 0, errors: 0 }
  /** a restore's announcement while its helper runs (announceWith), else null */
  private announcer: RestoreAnnouncer | null = null
  /** attribution of changes to tool calls (handle-calls.ts) */
  private readonly calls: HandleCalls

  constructor (private readonly o: AdapterOptions) {
    this.ws = o.workspace
    this.calls = new HandleCalls(o.attribution, (parent, name) => o.workspace.lookupAt(parent, name).ino)
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

  /**
   * Drops the kernel caches a restore made stale, off the JavaScript thread:
   * the plan's inodes, then renewed names, then nameless nodes, then entries
   * (deepest first), then the root always (fuse-invalidation.md §6).
   */
  async invalidate (plan: InvalidationPlan): Promise<void> {
    await this.fuse.invalidate(invalidateItems(plan))
  }

  /**
   * Routes the requests of the restore announcement's helper process
   * (`a.pid`) to `a` while it runs; null stops (fs/api.ts RestoreAnnouncer).
   */
  announceWith (a: RestoreAnnouncer | null): void { this.announcer = a }

  /** The announcement when the current request comes from its helper, else null (one compare while none runs). */
  private announcing (): RestoreAnnouncer | null {
    const a = this.announcer
    if (a === null || a.pid === 0) return null
    return this.fuse.context()?.pid === a.pid ? a : null
  }

  private caller (): Caller {
    const c = this.fuse.context()
    return c ? { uid: c.uid, gid: c.gid } : { uid: process.getuid?.() ?? 0, gid: process.getgid?.() ?? 0 }
  }

  /**
   * Hard links: libfuse2's high-level API gives every NAME its own kernel
   * inode (node ids are per parent+name), so after a change made through one
   * name the kernel keeps serving the other names' cached attributes (nlink,
   * mode, size, times) for attr_timeout (60 s). This drops the attributes of
   * the given paths and then answers the request, so that when the syscall
   * returns, a stat through any name is fresh (as natively).
   *
   * A descriptor whose name is gone (unlinked, or replaced by a rename) keeps
   * a kernel inode of its own that libfuse holds without a name, so no path
   * reaches it; its cached attributes (filled by an ftruncate through it, for
   * one) would show the old nlink, size or mode for attr_timeout where fstat
   * natively shows the change (fuzz case nameless-fd-hardlink-attrs).
   * `nameless` (Workspace.namelessOpen: such a handle is open on the changed
   * inode) adds [6], which drops every nameless node's attributes and pages.
   *
   * Only hard-linked inodes get here (otherNames is [] otherwise), so the
   * usual path stays synchronous. Attribute-only notifications take no
   * sleeping kernel lock and libfuse only holds its f->lock briefly, so
   * waiting for them cannot deadlock against requests waiting for
   * JavaScript; the wait is still bounded (SIBLING_WAIT_MS) in case the
   * notify queue is busy behind a restore's batch. With `data` (the content
   * changed: writes, truncates) the other names' pages go in the same
   * notification, so that an fd held open on another name cannot read bytes
   * cached before the change (the kernel reads from its page cache without
   * asking below the cached size). Page invalidation may wait for page locks
   * of reads in flight; libfuse's multithreaded loop and the free JavaScript
   * thread answer those, and the wait is bounded all the same.
   */
  private answerAfterSiblings (r: Refresh, data: boolean, answer: () => void): void {
    if (r.paths.length === 0 && !r.nameless) { answer(); return }
    let done = false
    const finish = (): void => { if (done) return; done = true; clearTimeout(timer); answer() }
    const timer = setTimeout(finish, SIBLING_WAIT_MS)
    const items = r.paths.map(p => [4, p, data ? 0 : -1, 0] as InvalidateItem)
    if (r.nameless) items.push([6])
    this.fuse.invalidate(items).then(finish, finish)
  }

  /** ms since the epoch when "the store's disk is full" was last logged */
  private noSpaceLogged = 0

  /**
   * -errno for an exception: FsError carries its own; a full store disk
   * (E_NO_SPACE, ENOSPC, EDQUOT) is ENOSPC / EDQUOT to the caller, logged at
   * most once a minute; anything else is logged and becomes EIO (a corrupt
   * block included: never wrong bytes).
   */
  private errno (e: unknown, op: string, path: string | null): number {
    this.counts.errors++
    if (e instanceof FsError) return -e.errno
    if (isNoSpace(e)) {
      const now = Date.now()
      if (now - this.noSpaceLogged > 60000) { this.noSpaceLogged = now; this.log(`rewindfs: ${op} ${path ?? ''}: ${(e as Error).message}`) }
      return (e as { code?: string }).code === 'EDQUOT' ? -os.constants.errno.EDQUOT : -os.constants.errno.ENOSPC
    }
    this.log(`rewindfs: ${op} ${path ?? ''} failed unexpectedly: ${(e as Error)?.stack ?? String(e)}`)
    return -os.constants.errno.EIO
  }

  private ops (): FuseOps {
    const ws = this.ws
    const self = this
    // attribution (handle-calls.ts): paths become (directory inode, name) only while a call is active
    const calls = this.calls
    const pid = (): number => self.fuse.context()?.pid ?? 0
    const dirOf = (p: string): [number, string] => { const i = p.lastIndexOf('/'); return [ws.resolve(i <= 0 ? '/' : p.slice(0, i)), p.slice(i + 1)] }
    const touched = (p: string): void => { if (calls.active) calls.changed(calls.of(pid()), ws.resolve(p)) }
    const made = (p: string): void => { if (calls.active) calls.created(pid(), dirOf(p)[0], ws.resolve(p)) }
    const removed = (p: string, rm: () => void): void => { if (!calls.active) { rm(); return } const [d, n] = dirOf(p); calls.remove(pid(), d, n, rm) }
    // status-only op: cb(result)
    const st = (op: string, fn: (...a: any[]) => void) => (...args: any[]) => {
      const cb = args[args.length - 1] as (n: number) => void
      let r = 0
      try { self.counts.ops++; fn(...args.slice(0, -1)) } catch (e) { r = self.errno(e, op, args[0]) }
      cb(r)
    }
    // status op that may change what other hard-link names (or nameless nodes) of an inode show:
    // fn returns what to refresh (see answerAfterSiblings)
    // (data: the op changes content, so the other names' cached pages go too)
    const stl = (op: string, fn: (...a: any[]) => Refresh, data = false) => (...args: any[]) => {
      const cb = args[args.length - 1] as (n: number) => void
      let r = 0
      let stale = NOTHING
      try { self.counts.ops++; stale = fn(...args.slice(0, -1)) } catch (e) { r = self.errno(e, op, args[0]) }
      self.answerAfterSiblings(stale, data, () => cb(r))
    }
    // after writes to a hard-linked inode, refresh the other names (write does it at once; flush,
    // fsync and release drain what is left)
    const afterWrites = (fh: number, p: string | null): Refresh => {
      let ino: number
      try { ino = ws.handleIno(fh) } catch { return NOTHING }
      if (!ws.linkedWrites.delete(ino)) return NOTHING
      return { paths: ws.otherNames(ino, p), nameless: ws.namelessOpen(ino, fh) }
    }
    const closeLike = (op: string, fn: (fh: number) => void) => (p: string | null, ...args: any[]) => {
      const cb = args[args.length - 1] as (n: number) => void
      const fh = args[args.length - 2] as number
      let r = 0
      let stale = NOTHING
      try { self.counts.ops++; stale = afterWrites(fh, p); fn(fh) } catch (e) { r = self.errno(e, op, p) }
      self.answerAfterSiblings(stale, true, () => cb(r))
    }
    // names of the inode at p other than p itself (before or after a change of it), and its nameless nodes
    const others = (p: string): Refresh => { const ino = ws.resolve(p); return { paths: ws.otherNames(ino, p), nameless: ws.namelessOpen(ino) } }
    // value op: cb(0, value) or cb(-errno)
    const val = (op: string, fn: (...a: any[]) => unknown) => (...args: any[]) => {
      const cb = args[args.length - 1] as (n: number, v?: unknown) => void
      let v: unknown
      try { self.counts.ops++; v = fn(...args.slice(0, -1)) } catch (e) { cb(self.errno(e, op, args[0])); return }
      cb(0, v)
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
      getattr: val('getattr', (p: string) => toFuseStat(self.announcing()?.getattr(p) ?? ws.getattr(p))) as any,
      fgetattr: val('fgetattr', (p: string | null, fh: number) => toFuseStat(ws.fgetattr(fh))) as any,
      readdir: (p: string, cb: (err: number, names?: string[], stats?: FuseStat[]) => void) => {
        let r
        try { self.counts.ops++; r = ws.readdir(p) } catch (e) { cb(self.errno(e, 'readdir', p)); return }
        cb(0, r.names, r.stats.map(toFuseStat))
      },
      opendir: val('opendir', (p: string) => { ws.resolve(p); return 0 }) as any,
      releasedir: st('releasedir', () => {}),
      readlink: val('readlink', (p: string) => ws.readlink(p)) as any,
      // the restore's helper (announcing) changes nothing: its chown and truncate only make the kernel emit IN_ATTRIB, IN_MODIFY
      chmod: stl('chmod', (p: string, mode: number) => { if (self.announcing()) return NOTHING; ws.chmod(p, mode); touched(p); return others(p) }),
      chown: stl('chown', (p: string, uid: number, gid: number) => { if (self.announcing()) return NOTHING; ws.chown(p, uid, gid); touched(p); return others(p) }),
      utimens: stl('utimens', (p: string, a: bigint | null, m: bigint | null) => { if (self.announcing()) return NOTHING; ws.utimens(p, a, m); touched(p); return others(p) }),
      truncate: stl('truncate', (p: string, size: number) => { if (self.announcing()) return NOTHING; ws.truncate(p, size); touched(p); return others(p) }, true),
      ftruncate: stl('ftruncate', (p: string | null, fh: number, size: number) => {
        if (self.announcing()) return NOTHING
        ws.ftruncate(fh, size)
        const ino = ws.handleIno(fh)
        if (calls.tracking) calls.wrote(pid(), fh, ino)
        return { paths: ws.otherNames(ino, p), nameless: ws.namelessOpen(ino, fh) }
      }, true),
      // the restore's helper creates and removes names the swap already added and removed (RestoreAnnouncer)
      mkdir: st('mkdir', (p: string, mode: number) => { if (self.announcing()?.appear(p) !== true) { ws.mkdir(p, mode, self.caller()); made(p) } }),
      rmdir: st('rmdir', (p: string) => { if (self.announcing()?.remove(p) !== true) removed(p, () => { ws.rmdir(p) }) }),
      mknod: st('mknod', (p: string, mode: number, dev: number) => { if (self.announcing()?.appear(p) !== true) { ws.mknod(p, mode, dev, self.caller()); made(p) } }),
      symlink: st('symlink', (target: string, p: string) => { if (self.announcing()?.appear(p) !== true) { ws.symlink(target, p, self.caller()); made(p) } }),
      // the names left of an unlinked hard-linked file show nlink - 1, and so do the nodes of
      // descriptors whose name was already gone (taken before: the kernel updates the node of p itself)
      unlink: stl('unlink', (p: string) => {
        if (self.announcing()?.remove(p) === true) return NOTHING
        const ino = ws.resolve(p)
        const nameless = ws.namelessOpen(ino)
        removed(p, () => { ws.unlink(p) })
        return { paths: ws.otherNames(ino, null), nameless }
      }),
      // a replaced target loses a name (its other names and nameless nodes show nlink - 1); the moved inode's ctime changes
      rename: stl('rename', (a: string, b: string) => {
        const src = ws.resolve(a)
        let dst: number | undefined
        try { dst = ws.resolve(b) } catch {}
        let nameless = ws.namelessOpen(src)
        if (dst !== undefined && dst !== src) nameless ||= ws.namelessOpen(dst)
        if (calls.active) { const [da, na] = dirOf(a); const [db, nb] = dirOf(b); calls.renaming(pid(), da, na, db, nb, () => { ws.rename(a, b) }) } else ws.rename(a, b)
        const paths = ws.otherNames(src, b)
        if (dst !== undefined && dst !== src) paths.push(...ws.otherNames(dst, null))
        return { paths, nameless }
      }),
      // the existing names (and nameless nodes) show nlink + 1
      link: stl('link', (a: string, b: string) => {
        ws.link(a, b)
        made(b)
        const ino = ws.resolve(b)
        return { paths: ws.otherNames(ino, b), nameless: ws.namelessOpen(ino) }
      }),
      // the restore's helper opens for writing only to make the kernel emit IN_CLOSE_WRITE: it gets a read-only handle
      open: val('open', (p: string, flags: number) => {
        if (self.announcing()) return ws.open(p, 0)
        const fh = ws.open(p, flags)
        if (calls.active) calls.opened(pid(), ws.handleIno(fh), fh, flags)
        return fh
      }) as any,
      create: val('create', (p: string, mode: number, flags: number) => {
        if (self.announcing()?.appear(p) === true) return ws.open(p, 0)
        const fh = ws.create(p, mode, flags, self.caller())
        if (calls.active) calls.created(pid(), dirOf(p)[0], ws.handleIno(fh), fh)
        return fh
      }) as any,
      release: closeLike('release', (fh) => { calls.released(fh); ws.release(fh) }),
      flush: closeLike('flush', () => {}),
      // fsync/fsyncdir: the record (and sealed blocks) becomes durable before the answer
      fsync: (p: string | null, _datasync: number, fh: number, cb: (n: number) => void) => {
        self.counts.ops++
        let ino: number
        let stale = NOTHING
        try { ino = ws.handleIno(fh); stale = afterWrites(fh, p) } catch (e) { cb(self.errno(e, 'fsync', p)); return }
        const answer = (r: number): void => self.answerAfterSiblings(stale, true, () => cb(r))
        if (!this.o.durable) { answer(0); return }
        this.o.durable(ino).then(() => answer(0), (e) => answer(self.errno(e, 'fsync', p)))
      },
      fsyncdir: (p: string | null, _datasync: number, _fh: number, cb: (n: number) => void) => {
        self.counts.ops++
        let ino: number
        try { ino = ws.resolve(p ?? '/') } catch (e) { cb(self.errno(e, 'fsyncdir', p)); return }
        if (!this.o.durable) { cb(0); return }
        this.o.durable(ino).then(() => cb(0), (e) => cb(self.errno(e, 'fsyncdir', p)))
      },
      // read and write are the hottest path: no argument copying, no wrapper
      read: (p: string | null, fh: number, buf: Buffer, len: number, pos: number, cb: (n: number) => void) => {
        let n: number
        try { self.counts.ops++; n = ws.read(fh, buf, len, pos) } catch (e) { n = self.errno(e, 'read', p) }
        cb(n)
      },
      // a write to a hard-linked inode (the set is empty otherwise) makes the other names' cached
      // size, times and pages stale at once: drop them before answering, as for truncate
      write: (p: string | null, fh: number, buf: Buffer, len: number, pos: number, cb: (n: number) => void) => {
        let n: number
        try { self.counts.ops++; n = ws.write(fh, buf, len, pos) } catch (e) { n = self.errno(e, 'write', p) }
        if (calls.tracking && n > 0) { try { calls.wrote(pid(), fh, ws.handleIno(fh)) } catch {} }
        if (ws.linkedWrites.size !== 0 && n >= 0) {
          const stale = afterWrites(fh, p)
          if (stale.paths.length !== 0 || stale.nameless) { self.answerAfterSiblings(stale, true, () => cb(n)); return }
        }
        cb(n)
      },
      // the restore's helper changes no xattr either: the kernel removes security.capability at its truncate and chown
      setxattr: st('setxattr', (p: string, name: string, value: Buffer, position: number, flags: number) => { if (!self.announcing()) { ws.setxattr(p, name, value, flags); touched(p) } }),
      // the kernel asks for security.capability before every write: a miss answers ENODATA (null) without throwing
      getxattr: val('getxattr', (p: string, name: string) => { const v = ws.xattr(p, name); return v === undefined ? null : Buffer.from(v) }) as any,
      // trusted.* names are listed to root only, as native filesystems do for
      // callers without CAP_SYS_ADMIN (the kernel passes FUSE's list through
      // unfiltered; getting or setting them is refused by the kernel itself)
      listxattr: val('listxattr', (p: string) => {
        const names = ws.listxattr(p)
        return self.caller().uid === 0 ? names : names.filter(n => !n.startsWith('trusted.'))
      }) as any,
      removexattr: st('removexattr', (p: string, name: string) => { if (!self.announcing()) { ws.removexattr(p, name); touched(p) } })
    }
  }
}
