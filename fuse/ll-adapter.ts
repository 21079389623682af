/**
 * The low-level FUSE adapter: the live workspace served through rewindfs's
 * own binding on libfuse 3's low-level API (fuse/ll/session.ts), by inode
 * number. The daemon picks it with REWINDFS_FUSE=ll (README "Running";
 * DECISIONS.md "The FUSE layer on libfuse 3's low-level API").
 *
 * Node ids: a kernel node id is (incarnation << INO_BITS) | ino
 * (fuse/ll/nodeid.h), ino being the workspace's inode number. So there is
 * no path resolution and no node table: a request names the inode itself.
 * A restore that changes a file's content or type gives it a new
 * incarnation; the old node id keeps answering from the file as it was
 * until the kernel forgets it (issue 13: fuse/incarnations.ts,
 * fuse/old-incarnation.ts).
 *
 * Lookup counting: every answer that hands the kernel a node (lookup,
 * create, mknod, mkdir, symlink, link, and each readdirplus entry that
 * reached it) adds one to that node id's count; forget takes counts back,
 * and a node id whose count reaches 0 is dropped (`nodes()` tells how many
 * are known).
 *
 * Every handler is synchronous (the workspace answers from memory) except
 * fsync/fsyncdir, which wait for durability. The session answers each
 * request exactly once: a thrown FsError becomes its errno, a full store
 * disk ENOSPC/EDQUOT (logged at most once a minute), anything else EIO
 * with a log line; no request can end the daemon.
 *
 * Restores: `invalidate(plan)` first renews the plan's replaced files (in
 * the same tick as the swap, before any request is answered from the new
 * state), then turns the plan's inodes and names (by inode number,
 * InvalidationPlan.byIno) into notify calls that run on the binding's
 * notify thread, never on the JS thread and never awaited inside a handler
 * (fuse-invalidation.md §2 rules 1-4); the tree is swapped before.
 *
 * Names cross as bytes (Buffers) and are decoded losslessly here
 * (base/names.ts, PEP 383 surrogateescape: a byte that is not UTF-8 becomes a
 * lone surrogate), and encoded back to the same bytes on the way out
 * (readdir, readlink, entry invalidation; issue 18). xattr names that are not
 * UTF-8 are refused with EILSEQ (the store cannot carry them).
 */
import fs from 'node:fs'
import os from 'node:os'
import { execFile } from 'node:child_process'
import {
  LowLevelSession, FuseError,
  type LowLevelOps, type Request, type Entry, type DirEntry, type DirPlusEntry, type NotifyItem, type Open
} from './ll/session.js'
import { FsError, isNoSpace } from '../base/errno.js'
import { nameBuffer, nameOfBuffer } from '../base/names.js'
import type { InodeOps, Stat, Caller, InvalidationPlan, InvalidationOutcome, RestoreAnnouncer, ChangeAttribution } from '../fs/api.js'
import { HandleCalls } from './handle-calls.js'
import { Incarnations, OLD_FH_BASE, type IncarnationCounts } from './incarnations.js'
import { oldIncarnationOps, notADirectory } from './old-ops.js'
import { attrOf, changeOf, seekIn, xattrNameOf, NODATA } from './ll-answers.js'

const E = os.constants.errno
const ROOT = 1

export interface LowLevelAdapterOptions {
  /** directory to mount on */
  mountpoint: string
  /** the live workspace (a restore swaps its tables, not the object) */
  workspace: InodeOps
  /** directory whose filesystem statfs reports (the store) */
  statfsPath: string
  /** makes the live state durable (fsync, fsyncdir); absent: they only answer */
  durable?: (ino: number) => Promise<void>
  /** log sink for unexpected errors */
  log?: (msg: string) => void
  /** seconds the kernel may cache names and attributes; default 60 (a restore invalidates what it changes) */
  cacheTimeout?: number
  /** mount with allow_other (default true: tools run as other users, e.g. the tests' unprivileged user) */
  allowOther?: boolean
  /** attribution of changes to tool calls (daemon/calls.ts); absent: none */
  attribution?: ChangeAttribution
}

/** The kernel's node ids as the adapter counts them (status.kernelNodes), with what became of old incarnations (fuse/incarnations.ts). */
export interface KernelNodes extends IncarnationCounts {
  /** node ids looked up and not yet forgotten (old incarnations included) */
  nodes: number
  /** their lookup counts summed */
  lookups: number
  /** forgets of node ids not held (0 when exact) */
  forgetUnknown: number
  /** requests naming a node id not held, the root excepted (0 when exact) */
  afterForget: number
}

/**
 * An open directory: its entries as they were at opendir (readdir offsets
 * index into it: offset i+1 follows entry i), and the number of restores
 * done before it was opened (an entry a later restore removed or moved is
 * skipped).
 */
interface DirHandle { ino: number, names: Buffer[], inos: number[], modes: number[], restores: number }

/** A mounted workspace on the low-level binding. */
export class LowLevelMount {
  private session: LowLevelSession | null = null
  private readonly ws: InodeOps
  private readonly log: (msg: string) => void
  private readonly timeout: number
  /** requests answered and errors, for status */
  readonly counts = { ops: 0, errors: 0 }
  /** the node ids the kernel holds, their lookup counts, old incarnations and which node id each open handle is on (fuse/incarnations.ts) */
  private readonly inc: Incarnations
  /** restores whose invalidation has begun (directory handles opened before one check their entries) */
  private restores = 0
  /** forgets of node ids the daemon never handed out or had already dropped (each one is a bug; tests read it) */
  forgetUnknown = 0
  /** requests that named a node id (other than the root) after its last forget, or never handed out (each one is a bug; tests read it) */
  afterForget = 0
  /**
   * Negative entries the kernel may cache: "parent ino/name" → when the
   * kernel drops it (ms, Date.now). A lookup that finds no name answers a
   * negative entry for NEGATIVE_TIMEOUT seconds (the next stat or create of
   * that name skips a LOOKUP); a restore that brings such a name back drops
   * it from the kernel by name (invalidate), so the record is exact.
   */
  private readonly negatives = new Map<string, number>()
  private negativesSweepAt = 4096
  private readonly dirs = new Map<number, DirHandle>()
  private nextDirFh = 1
  /** a restore's announcement while its helper runs (announceWith), else null */
  private announcer: RestoreAnnouncer | null = null
  private noSpaceLogged = 0
  /** the answer buffer of every read (the largest READ request: max_pages of 4 KiB) */
  private readonly readBuf = Buffer.allocUnsafeSlow(LARGEST_READ)
  /** attribution of changes to tool calls (handle-calls.ts) */
  private readonly calls: HandleCalls

  constructor (private readonly o: LowLevelAdapterOptions) {
    this.ws = o.workspace
    this.log = o.log ?? ((m) => process.stderr.write(m + '\n'))
    this.timeout = o.cacheTimeout ?? 60
    this.calls = new HandleCalls(o.attribution, (parent, name) => this.ws.lookupAt(parent, name).ino)
    this.inc = new Incarnations(this.log)
  }

  /** Mounts; rejects with libfuse's message (mount point busy, no /dev/fuse, refused option). */
  async mount (): Promise<void> {
    this.session = await LowLevelSession.mount(this.o.mountpoint, this.ops(), {
      entryTimeout: this.timeout,
      attrTimeout: this.timeout,
      allowOther: this.o.allowOther ?? true,
      defaultPermissions: true,
      autoUnmount: true,
      fsname: 'rewindfs',
      subtype: 'rewindfs',
      // the kernel asks for security.capability before every write: the binding answers ENODATA itself for
      // files known to have none (their xattrs change only through this mount, or by a restore, which notifies)
      capabilityFree: (ino) => this.ws.xattrIno(ino, CAPABILITY) === undefined,
      // sequential reads in requests of up to 1 MiB (max_pages 256) instead of the kernel's default window of 128 KiB
      readahead: READAHEAD,
      // the workspace copies what a write brings (into a block or an unsealed buffer) before it answers
      borrowWriteData: true,
      log: (l) => this.log(`rewindfs: ${l}`)
    })
  }

  /**
   * Unmounts: first a lazy detach (fusermount3 -uz, as the old layer did),
   * so that what opens the directory from now on sees the directory below
   * instead of an error, then the requests in flight are answered, then
   * the session ends (a request that arrives later through a reference
   * still held, a cwd inside, gets EIO) and the call resolves. Rejects when the
   * kernel refused the detach (the mount stays served).
   */
  async unmount (): Promise<void> {
    const s = this.session
    if (s === null) return
    if (!s.gone) {
      await new Promise<void>((resolve, reject) => {
        execFile('fusermount3', ['-uz', this.o.mountpoint], { cwd: '/' }, (e, _out, err) => {
          if (e && mounted(this.o.mountpoint)) reject(new Error(`fusermount3 -uz ${this.o.mountpoint} failed: ${String(err).trim() || e.message}`))
          else resolve()
        })
      })
    }
    // requests already in flight on the detached mount (a readdir begun just before) are answered, not failed:
    // wait until none is pending twice in a row, at most 1 s
    for (let calm = 0, t = 0; calm < 2 && t < 100; t++) {
      await new Promise((resolve) => setTimeout(resolve, 10))
      calm = s.stats().pending === 0 ? calm + 1 : 0
    }
    const answered = s.stats().capabilityAnswers
    if (answered > 0) this.log(`rewindfs: the binding answered ${answered} of the mount's ${s.counters().getxattr ?? 0} getxattr requests itself (security.capability of files known to have none)`)
    await s.unmount()
  }

  /** Requests received by kernel opcode name (the binding's counters; bench/ reads them through `status`). */
  requestCounts (): Record<string, number> { return this.session?.counters() ?? {} }

  /**
   * Node ids the kernel holds (looked up and not yet forgotten), their
   * lookup counts summed, and the two accounting faults (forgetUnknown,
   * afterForget: both stay 0 when the accounting is exact).
   */
  nodes (): KernelNodes {
    const h = this.inc.held()
    return { nodes: h.nodes, lookups: h.lookups, forgetUnknown: this.forgetUnknown, afterForget: this.afterForget, ...this.inc.counted() }
  }

  /**
   * Drops the kernel caches a restore made stale, after the swap, on the
   * binding's notify thread. First, synchronously (call it in the tick of
   * the swap): every renewed inode the kernel holds gets a new incarnation,
   * its old node id becomes an old incarnation (fuse/incarnations.ts).
   * Then: the attributes of those old node ids (they now say nlink 0; their
   * pages stay, they are the content old descriptors and mappings read)
   * and a delete of each of their names by node id (the kernel clears the
   * old inode's nlink: watches on it hear IN_DELETE_SELF), attributes and
   * pages of the plan's other inodes, its other names deepest first (the
   * renewed inodes the kernel did not hold among them), then the root's
   * attributes. Resolves when the kernel has taken them (-ENOENT items:
   * nothing was cached), with how many files and open handles stayed on old
   * incarnations.
   */
  async invalidate (plan: InvalidationPlan): Promise<InvalidationOutcome> {
    const outcome = { files: 0, handles: 0 }
    this.restores++
    // until the batch is done, no inode goes back to incarnation 0: an item may name one of its old node ids
    const resume = this.inc.deferResets()
    try { return await this.notifyRestore(plan, outcome) } finally { resume() }
  }

  /** The body of invalidate (see there): renews, then sends the batch; resolves with `outcome` filled in. */
  private async notifyRestore (plan: InvalidationPlan, outcome: InvalidationOutcome): Promise<InvalidationOutcome> {
    const items: NotifyItem[] = []
    const frozen = plan.byIno?.frozen
    // names of old incarnations: deleted (not only dropped), so that the kernel too takes the old inode for unlinked
    // (nlink 0) and a watch on it hears IN_DELETE_SELF; first, before any directory's entry drops them unseen
    const deleted = new Set<string>()
    for (const ino of plan.byIno?.renewed ?? []) {
      const r = frozen !== undefined ? this.inc.renew(ino, () => frozen(ino)) : null
      if (r === null) continue
      outcome.files++
      outcome.handles += r.handles
      items.push({ kind: 'inode', ino, incarnation: r.old.inc, offset: -1 })
      for (const [parent, name] of r.old.links) {
        items.push({ kind: 'delete', parent, parentInc: this.inc.incarnation(parent), child: ino, childInc: r.old.inc, name: nameBuffer(name) })
        deleted.add(`${parent}/${name}`)
      }
    }
    const s = this.session
    if (s === null) return outcome
    if (plan.byIno !== undefined) {
      for (const ino of plan.byIno.inodes) items.push({ kind: 'inode', ino, incarnation: this.inc.incarnation(ino), offset: 0, length: 0 })
      for (const [parent, name] of plan.byIno.entries) if (!deleted.has(`${parent}/${name}`)) items.push({ kind: 'entry', parent, parentInc: this.inc.incarnation(parent), name: nameBuffer(name) })
    }
    // negative entries the kernel may still hold for names that exist after the swap
    const now = Date.now()
    for (const [key, until] of this.negatives) {
      if (until <= now) { this.negatives.delete(key); continue }
      const cut = key.indexOf('/')
      const parent = Number(key.slice(0, cut)); const name = key.slice(cut + 1)
      if (this.exists(parent, name)) {
        items.push({ kind: 'entry', parent, name: Buffer.from(name) })
        this.negatives.delete(key)
      }
    }
    items.push({ kind: 'inode', ino: ROOT, offset: 0, length: 0 })
    const r = await s.notify(items)
    const bad = r.results.filter((x) => x !== 0 && x !== -E.ENOENT && x !== -E.ENOTCONN)
    if (bad.length > 0) this.log(`rewindfs: ${bad.length} of ${items.length} kernel invalidations after a restore failed (errno ${-bad[0]})`)
    return outcome
  }

  /** True unless `parent` is a directory without `name` (a parent that is gone counts as existing: its entry is dropped anyway). */
  private exists (parent: number, name: string): boolean {
    try { this.ws.lookupAt(parent, name); return true } catch (e) { return !(e instanceof FsError && e.errno === E.ENOENT && this.isDir(parent)) }
  }

  private isDir (ino: number): boolean {
    try { return (this.ws.statIno(ino).mode & 0o170000) === 0o040000 } catch { return false }
  }

  /**
   * Name `name` of `parent` was made through the mount (mknod, mkdir,
   * symlink, link, create, a rename's target): the kernel turned its
   * negative entry, if it had one, into the new positive one, so the record
   * goes. Kept, a restore would drop that positive entry by name, and a
   * process whose working directory it is would lose its path (getcwd
   * ENOENT: seen as git's "Unable to read current working directory" in
   * test/restore/open-files-git.test.ts). O(1).
   */
  private made (parent: number, name: Buffer): void {
    if (this.negatives.size > 0) this.negatives.delete(`${parent}/${nameOf(name)}`)
  }

  /** The lookup answer for a name that does not exist: a negative entry the kernel caches, recorded (see `negatives`). */
  private negative (parent: number, name: string): Entry {
    const now = Date.now()
    if (this.negatives.size >= this.negativesSweepAt) {
      for (const [k, until] of this.negatives) if (until <= now) this.negatives.delete(k)
      this.negativesSweepAt = Math.max(4096, 2 * this.negatives.size)
    }
    const secs = Math.min(NEGATIVE_TIMEOUT, this.timeout)
    // kept 1 s past the kernel's expiry: the kernel starts its clock when it receives the answer, a little later
    this.negatives.set(`${parent}/${name}`, now + secs * 1000 + 1000)
    return { ino: 0, entryTimeout: secs }
  }

  /**
   * Routes the requests of the restore announcement's helper process
   * (`a.pid`) to `a` while it runs; null stops (fs/api.ts RestoreAnnouncer).
   */
  async announceWith (a: RestoreAnnouncer | null): Promise<void> {
    this.announcer = a
    const s = this.session
    if (a === null || s === null) return
    // The helper shares the kernel's dentry cache with every other process. A negative entry another
    // process was answered for a removed name (after the swap, before now) would make the helper's
    // unlink or rmdir of it fail with ENOENT without asking: drop those (the helper then looks the name
    // up and sees it); while the announcement runs, others get uncached negatives (lookup above)
    const now = Date.now()
    const items: NotifyItem[] = []
    for (const [key, until] of this.negatives) {
      if (until <= now) continue
      const cut = key.indexOf('/')
      const parent = Number(key.slice(0, cut)); const name = key.slice(cut + 1)
      if (a.lookupAt(parent, name) !== undefined) { items.push({ kind: 'entry', parent, name: Buffer.from(name) }); this.negatives.delete(key) }
    }
    if (items.length > 0) await s.notify(items)
  }

  /** The announcement when request `r` comes from its helper, else null (one compare while none runs). */
  private announcing (r: Request): RestoreAnnouncer | null {
    const a = this.announcer
    return a !== null && a.pid !== 0 && r.pid === a.pid ? a : null
  }

  // ---- lookup counting ---------------------------------------------------

  /** The entry answer for `st`, made as name `name` of `parent` (see `made`), counted as one lookup. */
  private madeEntry (parent: number, name: Buffer, st: Stat): Entry {
    this.made(parent, name)
    return this.counted(st)
  }

  /** The entry answer for `st`, counted as one lookup of its current node id. */
  private counted (st: Stat): Entry {
    return { ino: st.ino, incarnation: this.inc.lookedUp(st.ino), attr: attrOf(st) }
  }

  // ---- handlers ------------------------------------------------------------

  /** -errno for an exception (see the module comment). */
  private errno (e: unknown, what: string): number {
    this.counts.errors++
    if (e instanceof FsError || e instanceof FuseError) return -e.errno
    if (isNoSpace(e)) {
      const now = Date.now()
      if (now - this.noSpaceLogged > 60000) { this.noSpaceLogged = now; this.log(`rewindfs: ${what}: ${(e as Error).message}`) }
      return (e as { code?: string }).code === 'EDQUOT' ? -E.EDQUOT : -E.ENOSPC
    }
    this.log(`rewindfs: ${what} failed unexpectedly: ${(e as Error)?.stack ?? String(e)}`)
    return -E.EIO
  }

  private ops (): LowLevelOps {
    const ws = this.ws
    const caller = (r: Request): Caller => ({ uid: r.uid, gid: r.gid })
    const calls = this.calls // attribution (handle-calls.ts)
    const raw: LowLevelOps = {
      // the restore's helper (announcing) sees removed names until it unlinks them and added ones
      // only once it creates them; its creations, removals, opens and setattrs change nothing (RestoreAnnouncer)
      lookup: (r, parent, _pi, name) => {
        const n = nameOf(name)
        const a = this.announcing(r)
        if (a !== null) return this.counted(a.lookupAt(parent, n) ?? ws.lookupAt(parent, n)) // never a cached negative: the helper's view is its own
        let st: Stat
        try { st = ws.lookupAt(parent, n) } catch (e) {
          // no cached negative while a restore is announced: its helper may still have to see the name (announceWith)
          if (e instanceof FsError && e.errno === E.ENOENT && this.timeout > 0 && this.announcer === null) return this.negative(parent, n)
          throw e
        }
        return this.counted(st)
      },
      forget: (ino, inc, n) => { if (!this.inc.forget(ino, inc, n)) this.forgetUnknown++ },
      getattr: (r, ino, _inc, fh) => attrOf(fh !== null ? ws.fgetattr(fh) : (this.announcing(r)?.statIno(ino) ?? ws.statIno(ino))),
      setattr: (r, ino, _inc, set, fh) => {
        if (this.announcing(r) !== null) return attrOf(this.announcer!.statIno(ino) ?? (fh !== null ? ws.fgetattr(fh) : ws.statIno(ino)))
        const st = ws.setattrIno(ino, changeOf(set), fh)
        calls.changed(calls.via(r.pid, fh), ino)
        return attrOf(st)
      },
      readlink: (_r, ino) => nameBuffer(ws.readlinkIno(ino)),
      mknod: (r, parent, _pi, name, mode, rdev) => this.madeEntry(parent, name, this.announcing(r)?.appearAt(parent, nameOf(name)) === true ? ws.lookupAt(parent, nameOf(name)) : calls.made(r.pid, parent, ws.mknodAt(parent, nameOf(name), mode, rdev, caller(r)))),
      mkdir: (r, parent, _pi, name, mode) => this.madeEntry(parent, name, this.announcing(r)?.appearAt(parent, nameOf(name)) === true ? ws.lookupAt(parent, nameOf(name)) : calls.made(r.pid, parent, ws.mkdirAt(parent, nameOf(name), mode, caller(r)))),
      symlink: (r, parent, _pi, name, target) => this.madeEntry(parent, name, this.announcing(r)?.appearAt(parent, nameOf(name)) === true ? ws.lookupAt(parent, nameOf(name)) : calls.made(r.pid, parent, ws.symlinkAt(parent, nameOf(name), nameOf(target), caller(r)))),
      link: (r, ino, _inc, parent, _pi, name) => this.madeEntry(parent, name, calls.made(r.pid, parent, ws.linkAt(ino, parent, nameOf(name)))),
      unlink: (r, parent, _pi, name) => { const n = nameOf(name); if (this.announcing(r)?.removeAt(parent, n) !== true) calls.remove(r.pid, parent, n, () => { ws.unlinkAt(parent, n) }) },
      rmdir: (r, parent, _pi, name) => { const n = nameOf(name); if (this.announcing(r)?.removeAt(parent, n) !== true) calls.remove(r.pid, parent, n, () => { ws.rmdirAt(parent, n) }) },
      rename: (r, parent, _pi, name, np, _npi, newName, flags) => {
        calls.renaming(r.pid, parent, nameOf(name), np, nameOf(newName), () => { ws.renameAt(parent, nameOf(name), np, nameOf(newName), flags) })
        this.made(np, newName)
        if ((flags & 2) !== 0) this.made(parent, name) // RENAME_EXCHANGE: both names are positive
      },
      // keep_cache: the kernel's pages of a file change only through this mount, and a restore drops them (invalidate);
      // noflush: close sends no FLUSH (the workspace has nothing to do at close: writes reached it as they were made,
      // and locks are kernel-local), which saves one request per close (17,000 in an npm ci)
      open: (r, ino, inc, flags): Open => {
        const fh = this.announcing(r) !== null ? ws.openAt(ino, 0) : ws.openAt(ino, flags)
        this.inc.opened(fh, ino, inc)
        if (this.announcing(r) === null) calls.opened(r.pid, ino, fh, flags)
        return { fh, keepCache: true, noflush: true }
      },
      create: (r, parent, _pi, name, mode, flags) => {
        if (this.announcing(r)?.appearAt(parent, nameOf(name)) === true) {
          const st = ws.lookupAt(parent, nameOf(name))
          const e = this.counted(st)
          const fh = ws.openAt(st.ino, 0)
          this.inc.opened(fh, st.ino, e.incarnation!)
          return { ...e, fh, keepCache: true }
        }
        const c = ws.createAt(parent, nameOf(name), mode, flags, caller(r))
        this.made(parent, name)
        calls.created(r.pid, parent, c.stat.ino, c.fh)
        const e = this.counted(c.stat)
        this.inc.opened(c.fh, e.ino, e.incarnation!)
        return { ...e, fh: c.fh, keepCache: true, noflush: true }
      },
      // one buffer for every read: the answer is synchronous, and the session replies (a writev to /dev/fuse) before the
      // next request is handled; a new 1 MiB Buffer per request cost more than its copy (allocation, then GC of external memory)
      read: (_r, _ino, _inc, fh, size, offset) => {
        const b = size <= this.readBuf.length ? this.readBuf.subarray(0, size) : Buffer.allocUnsafe(size)
        return b.subarray(0, ws.read(fh, b, size, offset))
      },
      write: (r, ino, _inc, fh, data, offset) => {
        const n = ws.write(fh, data, data.length, offset)
        calls.wrote(r.pid, fh, ino)
        return n
      },
      // also for handles on old incarnations (routed here whatever the node id: nothing of the workspace is read)
      release: (_r, _ino, _inc, fh) => { calls.released(fh); this.inc.released(fh); if (fh < OLD_FH_BASE) ws.release(fh) },
      fsync: (_r, ino) => this.o.durable ? this.o.durable(ino).then(() => undefined) : undefined,
      fsyncdir: (_r, ino) => this.o.durable ? this.o.durable(ino).then(() => undefined) : undefined,
      opendir: (_r, ino) => {
        const list = ws.readdirIno(ino)
        const parent = ws.parentIno(ino)
        const h: DirHandle = { ino, names: [DOT, DOTDOT], inos: [ino, parent], modes: [0o40000, 0o40000], restores: this.restores }
        for (const [name, st] of list) { h.names.push(nameBuffer(name)); h.inos.push(st.ino); h.modes.push(st.mode) }
        const fh = this.nextDirFh++
        this.dirs.set(fh, h)
        return { fh }
      },
      readdir: (_r, _ino, _inc, fh, offset, size) => {
        const h = this.dirOf(fh)
        const out: DirEntry[] = []
        // a dirent takes at least 32 bytes: no more entries than fit are built
        const end = Math.min(h.names.length, offset + Math.ceil(size / 32))
        for (let i = offset; i < end; i++) if (this.stillListed(h, i)) out.push({ name: h.names[i], ino: h.inos[i], mode: h.modes[i], off: i + 1 })
        return out
      },
      readdirplus: (_r, _ino, _inc, fh, offset, size) => {
        const h = this.dirOf(fh)
        const out: DirPlusEntry[] = []
        // a readdirplus entry takes at least 152 bytes (fuse_entry_out + dirent)
        const end = Math.min(h.names.length, offset + Math.ceil(size / 152))
        for (let i = offset; i < end; i++) {
          let st: Stat
          try { st = ws.statIno(h.inos[i]) } catch { continue } // gone since opendir
          if (!this.stillListed(h, i)) continue
          // the current incarnation: never an old one's node id with the restored attributes
          out.push({ name: h.names[i], off: i + 1, entry: { ino: st.ino, incarnation: this.inc.incarnation(st.ino), attr: attrOf(st) } })
        }
        return out
      },
      // each entry that reached the kernel is a lookup of its node ('.' and '..' are not: the kernel skips them)
      readdirplusSent: (_ino, _inc, entries, sent) => {
        for (let i = 0; i < sent; i++) {
          const e = entries[i]
          if (isDotName(e.name)) continue
          this.inc.lookedUp(e.entry.ino)
        }
      },
      releasedir: (_r, _ino, _inc, fh) => { this.dirs.delete(fh) },
      statfs: () => {
        const s = fs.statfsSync(this.o.statfsPath)
        return { bsize: s.bsize, frsize: s.bsize, blocks: s.blocks, bfree: s.bfree, bavail: s.bavail, files: s.files, ffree: s.ffree, favail: s.ffree, fsid: 0x72776673, namemax: 255 }
      },
      // the restore's helper changes no xattr either: the kernel removes security.capability at its truncate and chown
      setxattr: (r, ino, _inc, name, value, flags) => { if (this.announcing(r) === null) { ws.setxattrIno(ino, xattrNameOf(name), value, flags); calls.changed(calls.of(r.pid), ino) } },
      // the kernel asks for security.capability before every write: a miss answers ENODATA without a stack trace
      getxattr: (_r, ino, _inc, name) => {
        const v = ws.xattrIno(ino, xattrNameOf(name))
        if (v === undefined) throw NODATA
        return v
      },
      // trusted.* names are listed to root only, as native filesystems do for callers without CAP_SYS_ADMIN
      listxattr: (r, ino) => {
        const names = ws.listxattrIno(ino)
        return (r.uid === 0 ? names : names.filter((n) => !n.startsWith('trusted.'))).map((n) => Buffer.from(n))
      },
      removexattr: (r, ino, _inc, name) => { if (this.announcing(r) === null) { ws.removexattrIno(ino, xattrNameOf(name)); calls.changed(calls.of(r.pid), ino) } },
      lseek: (_r, _ino, _inc, fh, offset, whence) => seekIn(ws.fgetattr(fh).size, () => ws.dataRangesOf(fh), offset, whence)
    }
    const old = oldIncarnationOps(this.inc, this.readBuf, raw)
    // every handler counted and guarded: FsError → its errno, a full disk → ENOSPC, anything else → EIO + log
    const guarded: Record<string, unknown> = {}
    for (const [k, f] of Object.entries(raw)) {
      const fn = f as (...a: unknown[]) => unknown
      if (k === 'forget' || k === 'readdirplusSent') { guarded[k] = fn; continue }
      const onOld = old[k] ?? notADirectory
      guarded[k] = (...a: unknown[]): unknown => {
        this.counts.ops++
        // every handler's second and third arguments are the node id the request names (its parent for lookup, mknod, ...)
        const ino = a[1] as number
        const inc = a[2] as number
        let v: unknown
        try {
          const o = ino === ROOT ? undefined : this.inc.oldOf(ino, inc)
          if (o !== undefined) v = onOld(o, ...a)
          else {
            if (ino !== ROOT && !this.inc.holds(ino, inc)) {
              this.afterForget++
              // neither the current node id nor an old one held: nothing to answer from (a release still cleans up)
              if (inc !== this.inc.incarnation(ino) && k !== 'release') throw new FsError(E.ESTALE, `node id ${ino}.${inc} is not held`)
            }
            v = fn(...a)
          }
        } catch (e) { return this.errno(e, k) }
        if (v instanceof Promise) return v.catch((e) => this.errno(e, k))
        return v
      }
    }
    return guarded as LowLevelOps
  }

  /** True when entry i of a directory handle is still in the directory (always, unless a restore came after the opendir). */
  private stillListed (h: DirHandle, i: number): boolean {
    if (h.restores === this.restores || i < 2) return true
    try { return this.ws.lookupAt(h.ino, nameOf(h.names[i])).ino === h.inos[i] } catch { return false }
  }

  private dirOf (fh: number): DirHandle {
    const h = this.dirs.get(fh)
    if (h === undefined) throw new FsError(E.EBADF, `directory handle ${fh} is not open`)
    return h
  }
}

/**
 * Seconds the kernel may cache a negative entry. Short, because every one
 * is recorded until it expires (a restore checks them); long enough for
 * the stat-then-create of tools (npm, tar, git) to skip the second LOOKUP.
 */
const NEGATIVE_TIMEOUT = 10

const DOT = Buffer.from('.')
const DOTDOT = Buffer.from('..')
const CAPABILITY = 'security.capability'
/** The mount's readahead window, bytes: one READ request of max_pages (256 pages, libfuse's largest) at a time (DECISIONS.md "Sequential reads"). */
const READAHEAD = 1024 * 1024
/** The largest READ request, bytes: max_pages (256: libfuse's 1 MiB max_write) pages of 4 KiB; a larger one gets a buffer of its own. */
const LARGEST_READ = 1024 * 1024

/** True when `dir` is a mount point in /proc/mounts. */
function mounted (dir: string): boolean {
  return fs.readFileSync('/proc/mounts', 'utf8').split('\n').some((l) => l.split(' ')[1] === dir)
}

function isDotName (b: Uint8Array): boolean {
  return (b.length === 1 && b[0] === 46) || (b.length === 2 && b[0] === 46 && b[1] === 46)
}

/**
 * A file name (or link target) from the kernel as the workspace's string,
 * losslessly (base/names.ts: bytes that are not UTF-8 become lone surrogates
 * U+DC80..U+DCFF and go back out as the same bytes; issue 18).
 */
const nameOf = nameOfBuffer
