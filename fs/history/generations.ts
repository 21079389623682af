/**
 * Generations, checkpoints and branches over one store: the records in
 * memory, loading sealed inode tables, and the one-at-a-time order of
 * marks, fsyncs and restores. The algorithms live beside it:
 * checkpoint.ts (mark, fsync), restore.ts, journal.ts (the restore
 * journal and its crash recovery), diff.ts, invalidation.ts, selective.ts
 * (restore of some paths), undo.ts (undo of one segment), path-history.ts
 * (the checkpoints at which a path changed); records.ts holds the
 * persisted shapes; history.ts the interface they take (Generations implements it).
 */
import type { CheckpointId, Ino } from '../../base/types.js'
import { type InodeRecord, decodeRecord, encodeRecord } from '../inode.js'
import {
  type TableNode, type TableSink, differences,
  loadRoot, lookup, emptyTable, loadAll, allRecords
} from '../itable.js'
import type { Workspace } from '../workspace.js'
import type { Invalidate } from '../api.js'
import type { StoreDb, StoreBatch } from '../../store/db.js'
import type { CheckpointInfo, DiffEntry, PathHistoryEntry, RestoreInfo, UndoInfo } from '../../proto/messages.js'
import { ApiError } from '../../proto/errors.js'
import { type BranchRecord, type CheckpointRecord, type StoreState, checkpointInfo, freshState } from './records.js'
import { type MarkRequest, sealCheckpoint, syncLive } from './checkpoint.js'
import { restoreCheckpoint } from './restore.js'
import type { Announcement } from './announce.js'
import { type RestoreIntent, RESTORE_INTENT, completeInterruptedRestore } from './journal.js'
import { diffCheckpoints } from './diff.js'
import { type RestorePath, type RestorePathsOptions, normaliseRestorePaths, restorePaths } from './selective.js'
import { undoSegment } from './undo.js'
import { type PathHistoryOptions, pathHistory } from './path-history.js'
import { backfillIndex } from './path-index.js'
import type { History } from './history.js'
import { CallLog } from './call-log.js'

export type { BranchRecord, CheckpointRecord, StoreState } from './records.js'
export type { RestoreIntent } from './journal.js'

/** Checkpoint tables kept in memory at most (least recently used are dropped and reload from the store). */
const ROOTS_KEPT = 256

/** Serialises marks and restores: one at a time, in call order. */
class Mutex {
  private tail: Promise<unknown> = Promise.resolve()
  run<T> (fn: () => Promise<T>): Promise<T> {
    const p = this.tail.then(fn, fn)
    this.tail = p.catch(() => {})
    return p
  }
}

/** Checkpoint and restore over one store. */
export class Generations implements History {
  readonly nodes = new Map<number, TableNode>()
  readonly records = new Map<number, InodeRecord>()
  readonly checkpoints = new Map<CheckpointId, CheckpointRecord>()
  readonly branches = new Map<string, BranchRecord>()
  private readonly roots = new Map<CheckpointId, TableNode>()
  private readonly mutex = new Mutex()
  /** inode count of the live generation, kept incrementally */
  inodes: number
  /** table root id of the head checkpoint (0 before the first); written by checkpoint and restore */
  headRoot = 0
  /**
   * Tells watchers of a restore, full or selective (announce.ts; the daemon sets it to
   * run the helper process through the mount, daemon/announce.ts): called
   * after the swap and the kernel invalidation, inside the restore; null:
   * nobody is told (tests without a mount).
   */
  announce: ((a: Announcement) => Promise<void>) | null = null
  /** the live generation's changes by tool call (attribution.ts); each mark takes them */
  readonly calls = new CallLog()

  constructor (readonly db: StoreDb, readonly blocks: { sync(): Promise<void>, commitTo(b: StoreBatch): void }, public state: StoreState) {
    this.inodes = state.inodes
  }

  /**
   * Reads the state, checkpoints and branches of a store (a new store gets
   * a fresh state), and indexes the checkpoints the per-path history index
   * does not cover (path-index.ts backfillIndex: after the migration from
   * format 4, once; O(changed inodes of those segments)).
   */
  static async open (db: StoreDb, blocks: { sync(): Promise<void>, commitTo(b: StoreBatch): void }): Promise<Generations> {
    const state = await db.get<StoreState>('meta', 'state') ?? freshState()
    const g = new Generations(db, blocks, state)
    for await (const e of db.iterate<CheckpointRecord>('checkpoint')) g.checkpoints.set(e.value.id, e.value)
    for await (const e of db.iterate<BranchRecord>('branch')) g.branches.set(e.value.name, e.value)
    if (!g.branches.has(state.branch)) g.branches.set(state.branch, { name: state.branch, base: null, head: state.head, created: Date.now() })
    if (state.head !== null) g.headRoot = g.checkpoints.get(state.head)?.root ?? 0
    await backfillIndex(g) // format-4 checkpoints, and those gc gave a new parent (path-index.ts)
    return g
  }

  // ---- TableSource ------------------------------------------------------

  async loadNode (id: number): Promise<{ l: number, k: [number, number][] }> {
    const v = await this.db.get<any>('node', id)
    if (!v || typeof v.l !== 'number') throw new ApiError('E_CORRUPT', `inode table node ${id} is missing from the store; run rewindfs verify`)
    return v
  }

  async loadRecord (id: number): Promise<InodeRecord> {
    const v = await this.db.get<any>('node', id)
    if (!v || typeof v.ino !== 'number') throw new ApiError('E_CORRUPT', `inode record ${id} is missing from the store; run rewindfs verify`)
    return decodeRecord(v)
  }

  /** The inode table of a checkpoint, with nothing below its root loaded yet. */
  async tableOf (id: CheckpointId): Promise<TableNode> {
    const hit = this.roots.get(id)
    if (hit) { this.roots.delete(id); this.roots.set(id, hit) } // most recently used last
    if (hit) return hit
    const cp = this.checkpoint(id)
    const t = cp.root === 0 ? emptyTable() : await loadRoot(this, cp.root, this.nodes)
    this.remember(id, t)
    return t
  }

  /** Runs `fn` while no mark, fsync or restore runs (they wait for it, and it for them). */
  exclusive<T> (fn: () => Promise<T>): Promise<T> {
    return this.mutex.run(fn)
  }

  /**
   * Makes the live state durable (as fsync does) and so commits every block
   * written so far. Only from inside `exclusive` (garbage collection, which
   * wants no pending block left in the packs it may compact).
   */
  async persistLive (ws: Workspace): Promise<void> {
    await syncLive(this, ws)
  }

  /** Forgets a checkpoint in memory (garbage collection, once its record is deleted). */
  forgetCheckpoint (id: CheckpointId): void {
    this.checkpoints.delete(id)
    this.roots.delete(id)
  }

  /** Pins or unpins checkpoint `id` (durably); unknown id → ApiError E_UNKNOWN_CHECKPOINT. */
  pin (id: CheckpointId, pinned: boolean): Promise<CheckpointInfo> {
    return this.mutex.run(async () => {
      const cp = { ...this.checkpoint(id) }
      if (pinned) cp.pinned = true
      else delete cp.pinned
      await this.db.batch().put('checkpoint', id, cp).write({ sync: true })
      this.checkpoints.set(id, cp)
      return checkpointInfo(cp)
    })
  }

  /** Keeps a checkpoint's table in memory, dropping the least recently used beyond ROOTS_KEPT (they reload from the store). */
  remember (id: CheckpointId, t: TableNode): void {
    this.roots.set(id, t)
    if (this.roots.size > ROOTS_KEPT) this.roots.delete(this.roots.keys().next().value!)
  }

  /** True when the live base table is the head checkpoint's table (by persisted id). */
  baseIsHead (ws: Workspace): boolean {
    return this.state.head !== null && ws.base.id !== 0 && ws.base.id === this.headRoot
  }

  /** A checkpoint record; unknown id → ApiError E_UNKNOWN_CHECKPOINT. */
  checkpoint (id: CheckpointId): CheckpointRecord {
    const cp = this.checkpoints.get(id)
    if (!cp) {
      const known = [...this.checkpoints.keys()]
      const removed = id < this.state.nextCheckpoint ? ' (it was removed by garbage collection)' : ''
      throw new ApiError('E_UNKNOWN_CHECKPOINT', `no checkpoint ${id}${removed}; known checkpoints are ${known.length ? ranges(known) : 'none yet'} (see rewindfs log)`, { checkpoint: id })
    }
    return cp
  }

  /** Where persist() writes new table nodes and records: into `batch`, with ids from the state's counter. */
  sink (batch: StoreBatch): TableSink {
    return {
      nextId: () => this.state.nextId++,
      putNode: (id, v) => { batch.put('node', id, v) },
      putRecord: (id, r) => { batch.put('node', id, encodeRecord(r)) }
    }
  }

  /** Puts the state record into `batch` (and deletes an open restore intent with it). */
  writeState (batch: StoreBatch, ws: Workspace): void {
    this.state.nextIno = ws.nextIno
    this.state.inodes = this.inodes
    batch.put('meta', 'state', this.state)
    if (this.intentOpen) {
      // the state now says the restore happened: its journal entry goes with it
      batch.del('meta', RESTORE_INTENT)
      batch.onWritten(() => { this.intentOpen = false })
    }
  }

  /** a restore's intent is in the store and its commit is not known to be written (set by restore) */
  intentOpen = false

  /** Persists the state record alone (mount flags). */
  async saveState (ws: Workspace): Promise<void> {
    const b = this.db.batch()
    this.writeState(b, ws)
    await b.write({ sync: true })
  }

  // ---- checkpoint, fsync, restore, diff (one at a time) ------------------

  /** Seals the live generation as a checkpoint (checkpoint.ts sealCheckpoint); resolves once it is durable. */
  mark (ws: Workspace, req: MarkRequest): Promise<CheckpointInfo> {
    return this.mutex.run(async () => await sealCheckpoint(this, ws, req))
  }

  /**
   * fsync and fsyncdir (checkpoint.ts syncLive): makes the whole live state
   * durable without a checkpoint. Calls that arrive while one is waiting
   * share it (group commit).
   */
  sync (ws: Workspace): Promise<void> {
    if (this.pendingSync) return this.pendingSync
    const p = this.mutex.run(async () => {
      this.pendingSync = null
      await syncLive(this, ws)
    })
    this.pendingSync = p
    return p
  }

  private pendingSync: Promise<void> | null = null

  /**
   * Restores checkpoint `id` (restore.ts restoreCheckpoint); `invalidate`
   * turns the plan into kernel notifications. Unknown id → ApiError
   * E_UNKNOWN_CHECKPOINT and nothing changes.
   */
  restore (ws: Workspace, id: CheckpointId, invalidate: Invalidate): Promise<Omit<RestoreInfo, 'recovery'>> {
    try { this.checkpoint(id) } catch (e) { return Promise.reject(e) }
    return this.mutex.run(async () => await restoreCheckpoint(this, ws, id, invalidate))
  }

  /**
   * Selective restore (selective.ts restorePaths): only `items` go back as
   * at checkpoint `id`, on the current branch, as a new checkpoint. A dry
   * run changes nothing and takes no turn in the one-at-a-time order.
   */
  restorePaths (ws: Workspace, id: CheckpointId, items: RestorePath[], invalidate: Invalidate, o: RestorePathsOptions = {}): Promise<RestoreInfo> {
    try { this.checkpoint(id); normaliseRestorePaths(items) } catch (e) { return Promise.reject(e) }
    if (o.dryRun === true) return restorePaths(this, ws, id, items, invalidate, o)
    return this.mutex.run(async () => await restorePaths(this, ws, id, items, invalidate, o))
  }

  /**
   * What a full restore of `id` would change, changing nothing: diff from
   * the live state to checkpoint `id` (diff(id) with added and deleted
   * swapped). Unknown id → E_UNKNOWN_CHECKPOINT.
   */
  async restorePreview (ws: Workspace, id: CheckpointId): Promise<RestoreInfo> {
    const t0 = performance.now()
    const d = await diffCheckpoints(this, ws, id)
    const changes = d.map(e => ({ path: e.path, change: e.change === 'added' ? 'deleted' as const : e.change === 'deleted' ? 'added' as const : e.change }))
    return { checkpoint: id, branch: this.state.branch, changed: changes.length, ms: performance.now() - t0, saved: null, dryRun: true, changes, result: null }
  }

  /**
   * Undo of the segment ending at checkpoint `id` (undo.ts): the conflict
   * check, then a selective restore from its parent (itself one at a time
   * with marks and restores).
   */
  undo (ws: Workspace, id: CheckpointId, invalidate: Invalidate, dryRun: boolean): Promise<UndoInfo> {
    return undoSegment(this, ws, id, dryRun, async (from, items, dry, label) =>
      await this.restorePaths(ws, from, items, invalidate, { dryRun: dry, label, meta: { undo: id } }))
  }

  /** The checkpoints at which `path` changed, newest first (path-history.ts). */
  history (ws: Workspace, path: string, o: PathHistoryOptions = {}): Promise<PathHistoryEntry[]> {
    return pathHistory(this, ws, path, o)
  }

  /** Differences from checkpoint `a` to `b`, or to the live state when b is absent (diff.ts). */
  diff (ws: Workspace, a: CheckpointId, b?: CheckpointId): Promise<DiffEntry[]> {
    return diffCheckpoints(this, ws, a, b)
  }

  /** Crash recovery at start-up (journal.ts): completes a journaled restore; null when there was none. */
  completeInterruptedRestore (): Promise<RestoreIntent | null> {
    return completeInterruptedRestore(this)
  }

  /** The table a resume after a crash starts from: the fsync'd live state, else the head checkpoint. */
  async resumeTable (): Promise<TableNode> {
    const live = this.state.live
    if (live && live.generation === this.state.generation) return await loadRoot(this, live.root, this.nodes)
    return await this.tableOf(this.state.head!)
  }

  /** Wire form of a checkpoint record. */
  info (cp: CheckpointRecord): CheckpointInfo { return checkpointInfo(cp) }

  /**
   * The protocol's `log`: checkpoints newest first, of every branch unless
   * `branch` is given, at most `limit` (default 100). O(checkpoints) in
   * memory, for the running daemon and a stopped store alike.
   */
  log (req: { branch?: string, limit?: number }): CheckpointInfo[] {
    const all = [...this.checkpoints.values()].filter(c => req.branch === undefined || c.branch === req.branch)
    all.sort((a, b) => b.id - a.id)
    return all.slice(0, req.limit ?? 100).map(c => this.info(c))
  }

  /** Inodes in the live state: the base table's count plus the net of this generation's changes. O(dirty). */
  liveInodes (ws: Workspace): number {
    let n = this.inodes
    for (const [ino, r] of ws.unsavedRecords()) {
      const before = lookup(ws.base, ino) !== undefined
      if (before && r === null) n--
      else if (!before && r !== null) n++
    }
    return n
  }

  /** Inodes that differ from the head checkpoint (created, changed or removed). O(dirty) unless fsync folded changes in. */
  dirtyInodes (ws: Workspace): number {
    const head = this.state.head === null ? undefined : this.roots.get(this.state.head)
    const changed = head && !this.baseIsHead(ws) ? differences(head, ws.base) : new Set<Ino>()
    for (const ino of ws.unsavedRecords().keys()) changed.add(ino)
    return changed.size
  }

  /**
   * True when the live state has changes a restore must checkpoint first:
   * it is dirty, and not only because lower directories were listed
   * (Workspace.onlyListed) over a base that is the head checkpoint itself.
   */
  unsaved (ws: Workspace): boolean {
    if (!this.isDirty(ws)) return false
    return !(this.baseIsHead(ws) && ws.onlyListed())
  }

  /** True when the live generation has changes since its base checkpoint. */
  isDirty (ws: Workspace): boolean {
    if (ws.unsavedRecords().size > 0) return true
    // fsync folded changes into the base without a checkpoint
    if (this.state.head !== null && !this.baseIsHead(ws)) return true
    // an empty per-file buffer map is not unsaved data; counting it made
    // restore's seal-until-clean loop spin forever (O(files with buffers))
    return ws.hasUnsealedData()
  }

  /** In memory: a new branch starting at `cp`, head `cp`, a new generation. The caller writes the state. */
  switchToBranchFrom (cp: CheckpointRecord): void {
    const name = `b${this.state.nextBranch++}`
    const br: BranchRecord = { name, base: cp.id, head: cp.id, created: Date.now() }
    this.branches.set(name, br)
    this.state.branch = name
    this.state.head = cp.id
    this.headRoot = cp.root
    this.state.live = null
    this.state.generation = this.state.nextGeneration++
  }

  // ---- reading checkpoints ---------------------------------------------

  /** Every record of table `t`, loading the whole table first (O(inodes of t); TreeView's hard-link join). */
  async recordsOf (t: TableNode): Promise<Iterable<InodeRecord>> {
    await loadAll(this, t, this.nodes, this.records)
    return allRecords(t)
  }

  /**
   * The record of `ino` in table `t`, loading the nodes on its path (at most
   * 4 reads) if needed.
   */
  async recordIn (t: TableNode, ino: Ino): Promise<InodeRecord | undefined> {
    try { return lookup(t, ino) } catch {}
    // load the path to ino only
    let n: any = t
    for (let level = 0; level < 4; level++) {
      const s = (ino >>> (8 * (3 - level))) & 255
      let c = n.kids[s]
      if (c === undefined) return undefined
      if (typeof c === 'number') {
        if (level === 3) {
          let r = this.records.get(c)
          if (!r) { r = await this.loadRecord(c); this.records.set(c, r) }
          n.kids[s] = r
          c = r
        } else {
          c = await loadRoot(this, c, this.nodes)
          n.kids[s] = c
        }
      }
      n = c
    }
    return n as InodeRecord
  }

  /** Context stored with a checkpoint, or null. */
  async context (id: CheckpointId): Promise<unknown> {
    const cp = this.checkpoint(id)
    if (!cp.context) return null
    const v = await this.db.get<{ v: unknown }>('context', cp.context)
    if (!v) throw new ApiError('E_CORRUPT', `context ${cp.context} of checkpoint ${id} is missing from the store; run rewindfs verify`)
    return v.v
  }
}

/** Ids as ranges, "1..3, 5, 7..9" (at most 10 ranges, then "..."). */
function ranges (ids: number[]): string {
  const sorted = [...ids].sort((a, b) => a - b)
  const out: string[] = []
  for (let i = 0; i < sorted.length;) {
    let j = i
    while (j + 1 < sorted.length && sorted[j + 1] === sorted[j]! + 1) j++
    out.push(i === j ? `${sorted[i]}` : `${sorted[i]}..${sorted[j]}`)
    i = j + 1
  }
  return out.length > 10 ? `${out.slice(0, 5).join(', ')}, ..., ${out.slice(-3).join(', ')}` : out.join(', ')
}
