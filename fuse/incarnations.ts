/**
 * The kernel's node ids as the low-level adapter hands them out and gets
 * them back (issue 13; DECISIONS.md "Open files keep their content across a
 * restore"). A node id is (incarnation << 40) | ino (fuse/ll/nodeid.h).
 *
 * - Each inode has a current incarnation (0 unless a restore renewed it),
 *   and a lookup count of it: every entry answer that reaches the kernel
 *   (lookup, create, mknod, mkdir, symlink, link, readdirplus) adds one,
 *   forget takes counts back.
 * - A restore that changes a file's content or type, or removes it, renews
 *   the inode (`renew`): when the kernel holds its current node id, that
 *   node id becomes an old incarnation (fuse/old-incarnation.ts) with the
 *   lookup count it had, answering from the file as it was, and the inode
 *   gets the next incarnation the kernel does not hold. When the kernel
 *   holds nothing of it, nothing changes.
 * - An old incarnation lives until the kernel forgets it (its count reaches
 *   0), not until close: dirty pages of a mapping are written back after
 *   the descriptor is closed. An incarnation still held is never handed
 *   out again, and an inode of which the kernel holds nothing goes back to
 *   incarnation 0 (so memory is O(node ids held)).
 * - Open file handles are recorded with the node id they were opened on
 *   (`opened`, `released`), so that a restore can say how many it left on
 *   old incarnations.
 *
 * Counts are exact as long as every entry answer and every forget passes
 * here; two fault counters stay 0 then (forgetUnknown, afterForget, kept by
 * the adapter from `holds`).
 */
import type { Ino } from '../base/types.js'
import type { FrozenInode } from '../fs/api.js'
import { OldIncarnation, OLD_WRITE_TOTAL_LIMIT, type OldWriteBudget } from './old-incarnation.js'

/** Largest incarnation (24 bits, fuse/ll/nodeid.h LL_INCARNATION_MAX). */
export const INCARNATION_MAX = 2 ** 24 - 1

/** File handles opened on an old incarnation after the restore are numbered from here (the workspace's own stay below 2^31). */
export const OLD_FH_BASE = 2 ** 40

/** What became of the node ids of old incarnations, for status.kernelNodes. */
export interface IncarnationCounts {
  /** old incarnations the kernel still holds */
  old: number
  /** old incarnations made by restores so far */
  renewed: number
  /** old incarnations dropped after their last forget */
  oldForgotten: number
  /** of those, ones written through (their private copies were dropped) */
  oldWrittenDropped: number
  /** bytes written through old incarnations that were dropped with them */
  oldBytesDropped: number
  /** bytes of private copies held now */
  oldPrivateBytes: number
}

/** The node id table of one mount (see the module comment). */
export class Incarnations {
  /** current incarnation per inode; absent: 0 */
  private readonly current = new Map<Ino, number>()
  /** lookup count of each inode's current incarnation */
  private readonly counts = new Map<Ino, number>()
  /** old incarnations the kernel still holds, per inode */
  private readonly old = new Map<Ino, Map<number, OldIncarnation>>()
  /** open file handles: the node id each was opened on */
  private readonly handles = new Map<number, { ino: Ino, inc: number }>()
  /** file handles per inode opened on its current incarnation */
  private readonly openOn = new Map<Ino, Set<number>>()
  private nextOldFh = OLD_FH_BASE
  private readonly budget: OldWriteBudget = { used: 0, limit: OLD_WRITE_TOTAL_LIMIT }
  private readonly tally = { old: 0, renewed: 0, oldForgotten: 0, oldWrittenDropped: 0, oldBytesDropped: 0 }
  /** restores whose notifications may still be on their way (see `deferResets`) */
  private inFlight = 0
  /** inodes whose incarnation goes back to 0 once no restore's notifications are in flight */
  private readonly resetLater = new Set<Ino>()

  /** `log`: where a dropped private copy is reported (one line each). */
  constructor (private readonly log: (line: string) => void) {}

  /** The incarnation lookups of `ino` are answered with now. O(1). */
  incarnation (ino: Ino): number { return this.current.get(ino) ?? 0 }

  /** One entry of `ino` reached the kernel: its current incarnation's count grows; returns that incarnation. */
  lookedUp (ino: Ino): number {
    this.counts.set(ino, (this.counts.get(ino) ?? 0) + 1)
    return this.incarnation(ino)
  }

  /** True when the kernel holds node id (ino, inc) (looked up and not forgotten). */
  holds (ino: Ino, inc: number): boolean {
    if (inc === this.incarnation(ino)) return this.counts.has(ino)
    return this.old.get(ino)?.has(inc) === true
  }

  /** The old incarnation (ino, inc), or undefined when (ino, inc) is not one (the current one, or not held). */
  oldOf (ino: Ino, inc: number): OldIncarnation | undefined {
    if (inc === this.incarnation(ino)) return undefined
    return this.old.get(ino)?.get(inc)
  }

  /**
   * The kernel dropped `n` lookups of (ino, inc). False when it held fewer
   * (a forget of a node id not handed out: an accounting fault; the node
   * id is then dropped whole).
   */
  forget (ino: Ino, inc: number, n: number): boolean {
    let exact = true
    if (inc === this.incarnation(ino)) {
      const c = this.counts.get(ino)
      if (c === undefined || c < n) exact = false
      if (c === undefined || c <= n) this.counts.delete(ino)
      else this.counts.set(ino, c - n)
    } else {
      const byInc = this.old.get(ino)
      const o = byInc?.get(inc)
      if (o === undefined) return false
      if (o.lookups < n) exact = false
      o.lookups -= n
      if (o.lookups <= 0) {
        byInc!.delete(inc)
        if (byInc!.size === 0) this.old.delete(ino)
        this.dropOld(o)
      }
    }
    this.maybeReset(ino)
    return exact
  }

  /**
   * Nothing of `ino` held: it goes back to incarnation 0 (the kernel has no
   * inode for any of its node ids). Not while a restore's notifications are
   * in flight: one of them may name an old node id of it, which would then
   * reach a new inode that got the same node id.
   */
  private maybeReset (ino: Ino): void {
    if (this.counts.has(ino) || this.old.has(ino) || !this.current.has(ino)) return
    if (this.inFlight > 0) this.resetLater.add(ino)
    else this.current.delete(ino)
  }

  /**
   * A restore's notifications (naming node ids by incarnation) are on their
   * way to the kernel until the returned function is called: meanwhile no
   * inode goes back to incarnation 0 (maybeReset). Call the function once,
   * when the batch is done.
   */
  deferResets (): () => void {
    this.inFlight++
    let done = false
    return () => {
      if (done) return
      done = true
      if (--this.inFlight > 0) return
      const later = [...this.resetLater]
      this.resetLater.clear()
      for (const ino of later) this.maybeReset(ino)
    }
  }

  private dropOld (o: OldIncarnation): void {
    this.tally.old--
    this.tally.oldForgotten++
    if (o.written > 0) {
      this.tally.oldWrittenDropped++
      this.tally.oldBytesDropped += o.written
      this.log(`rewindfs: ${o.written} bytes written through descriptors opened before a restore, to inode ${o.ino} as it was before that restore, were dropped when the kernel forgot it (they were never part of the workspace)`)
    }
    o.drop()
  }

  /** File handle `fh` was opened on (ino, inc). */
  opened (fh: number, ino: Ino, inc: number): void {
    this.handles.set(fh, { ino, inc })
    if (inc !== this.incarnation(ino)) return
    let s = this.openOn.get(ino)
    if (s === undefined) this.openOn.set(ino, s = new Set())
    s.add(fh)
  }

  /** A handle number for an open of an old incarnation (never one the workspace hands out). */
  oldHandle (): number { return this.nextOldFh++ }

  /** File handle `fh` was released. */
  released (fh: number): void {
    const h = this.handles.get(fh)
    if (h === undefined) return
    this.handles.delete(fh)
    const s = this.openOn.get(h.ino)
    if (s !== undefined && s.delete(fh) && s.size === 0) this.openOn.delete(h.ino)
  }

  /**
   * A restore changed the content or type of `ino`, or removed it (after
   * the swap, before the next request is answered). When the kernel holds
   * its current node id, that node id becomes an old incarnation answering
   * from `freeze()` and the inode gets a new incarnation; returns the old
   * incarnation and how many file handles are open on it. Null when the
   * kernel holds nothing of the current incarnation (then nothing changes,
   * and `freeze` is not called).
   */
  renew (ino: Ino, freeze: () => FrozenInode | undefined): { old: OldIncarnation, handles: number } | null {
    const c = this.counts.get(ino) ?? 0
    if (c === 0) return null
    const frozen = freeze()
    if (frozen === undefined) return null
    const inc = this.incarnation(ino)
    const o = new OldIncarnation(ino, inc, frozen, c, this.budget)
    let byInc = this.old.get(ino)
    if (byInc === undefined) this.old.set(ino, byInc = new Map())
    byInc.set(inc, o)
    this.counts.delete(ino)
    // the next incarnation the kernel does not hold (held ones are skipped; 24 bits wrap)
    let next = inc
    do next = next === INCARNATION_MAX ? 0 : next + 1
    while (byInc.has(next))
    this.current.set(ino, next)
    const open = this.openOn.get(ino)
    this.openOn.delete(ino)
    this.tally.old++
    this.tally.renewed++
    return { old: o, handles: open?.size ?? 0 }
  }

  /** Node ids held (current incarnations looked up, and old ones) and their lookup counts summed. O(node ids held). */
  held (): { nodes: number, lookups: number } {
    let lookups = 0
    for (const c of this.counts.values()) lookups += c
    let nodes = this.counts.size
    for (const byInc of this.old.values()) for (const o of byInc.values()) { nodes++; lookups += o.lookups }
    return { nodes, lookups }
  }

  /** Counts of old incarnations (status.kernelNodes). */
  counted (): IncarnationCounts { return { ...this.tally, oldPrivateBytes: this.budget.used } }
}
