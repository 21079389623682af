/**
 * Generations, checkpoints and branches: sealing the live generation
 * (checkpoint) and swapping to an earlier one (restore), with their records
 * in the store.
 *
 * Commit order of a checkpoint (FORMAT.md "Read and write ordering"): the
 * cut is taken synchronously on the JavaScript thread (every FUSE operation
 * that completed is in, none that starts later is) → pack bytes → fsync →
 * one LevelDB batch (block index, inode table nodes and records, context,
 * checkpoint, branch, state) written with sync → acknowledge.
 *
 * Costs: mark is O(inodes and blocks dirtied since the last checkpoint);
 * restore is O(inodes that differ) reads and kernel invalidations; neither
 * looks at unchanged inodes. After the swap, restore counts the paths that
 * differ as diff does (the directories holding changes, alongside the
 * kernel invalidation).
 */
import { createHash } from 'node:crypto'
import type { BlockId, CheckpointId, GenerationId, Ino } from './types.js'
import { type InodeRecord, decodeRecord, encodeRecord, S_IFMT, S_IFDIR, S_IFREG } from './inode.js'
import type { LowerLayer } from './lower.js'
import {
  type TableNode, type TableSource, type TableSink, applyChanges, differences, loadDifferences,
  loadRoot, lookup, persist, unpersist, emptyTable, recordId
} from './itable.js'
import { pathIn, type Workspace } from './workspace.js'
import { TreeView } from './tree.js'
import { type StoreDb, type StoreBatch, packr } from './store/db.js'
import type { CheckpointInfo, DiffEntry, RestoreInfo } from './api.js'
import { ApiError } from '../proto/errors.js'

/** Persisted checkpoint (kind `checkpoint`, key = id). */
export interface CheckpointRecord {
  id: CheckpointId
  generation: GenerationId
  /** id of the inode table root */
  root: number
  label: string | null
  /** ms since the epoch */
  time: number
  branch: string
  parent: CheckpointId | null
  inodes: number
  dirtyBytes: number
  ms: number
  /** sha256 (hex) of the msgpack-encoded context in kind `context`, or null */
  context: string | null
  /** segment metadata given with the mark */
  meta: unknown
  /** garbage collection never removes a pinned checkpoint (absent: false) */
  pinned?: boolean
}

/** Persisted branch (kind `branch`, key = name). */
export interface BranchRecord {
  name: string
  /** checkpoint the branch started from (null for the first) */
  base: CheckpointId | null
  /** newest checkpoint on the branch */
  head: CheckpointId | null
  /** ms since the epoch */
  created: number
}

/** The store's mutable state (kind `meta`, key `state`). */
export interface StoreState {
  nextId: number
  nextCheckpoint: number
  nextGeneration: number
  nextBranch: number
  nextIno: number
  branch: string
  head: CheckpointId | null
  generation: GenerationId
  /** current mount session (incremented by each unmount that writes the workspace back) */
  session: number
  /** true while mounted; a mount that finds it true knows the daemon died */
  mounted: boolean
  /** inodes in the live generation's base table */
  inodes: number
  /**
   * the live state made durable by fsync since the last checkpoint: its
   * table root and generation; a resume after a crash starts from it
   */
  live?: { root: number, generation: GenerationId } | null
  /**
   * when the current session's mount started (ms since the epoch): a
   * resume compares the directory's ctimes with it (lower.ts
   * changedOutside); absent in stores written before it existed
   */
  sessionStarted?: number
}

/** Key (kind `meta`) of the restore journal: the intent of a restore not yet committed. */
export const RESTORE_INTENT = 'restore'

/** The restore journal's record (`meta.restore`): written with sync before a restore changes anything, deleted by its commit. */
export interface RestoreIntent {
  /** the checkpoint being restored */
  to: CheckpointId
  /** the head before the restore (after its "before restore" checkpoint) */
  from: CheckpointId | null
  /** ms since the epoch */
  time: number
}

/** A kernel cache invalidation item (fuse/binding.ts): [3, path] entry, [4, path, 0, 0] inode, [1, 1, 0, 0] root. */
export type InvalidationItem = [3, string] | [4, string, number, number] | [1, number, number, number] | [5, string] | [6]

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
export class Generations implements TableSource {
  readonly nodes = new Map<number, TableNode>()
  readonly records = new Map<number, InodeRecord>()
  readonly checkpoints = new Map<CheckpointId, CheckpointRecord>()
  readonly branches = new Map<string, BranchRecord>()
  private readonly roots = new Map<CheckpointId, TableNode>()
  private readonly mutex = new Mutex()
  /** inode count of the live generation, kept incrementally */
  inodes: number
  /** table root id of the head checkpoint (0 before the first) */
  private headRoot = 0

  constructor (readonly db: StoreDb, readonly blocks: { sync(): Promise<void>, commitTo(b: StoreBatch): void }, public state: StoreState) {
    this.inodes = state.inodes
  }

  /** Reads the state, checkpoints and branches of a store (a new store gets a fresh state). */
  static async open (db: StoreDb, blocks: { sync(): Promise<void>, commitTo(b: StoreBatch): void }): Promise<Generations> {
    const state = await db.get<StoreState>('meta', 'state') ?? {
      nextId: 1, nextCheckpoint: 1, nextGeneration: 2, nextBranch: 1, nextIno: 2,
      branch: 'main', head: null, generation: 1, session: 1, mounted: false, inodes: 0
    }
    const g = new Generations(db, blocks, state)
    for await (const e of db.iterate<CheckpointRecord>('checkpoint')) g.checkpoints.set(e.value.id, e.value)
    for await (const e of db.iterate<BranchRecord>('branch')) g.branches.set(e.value.name, e.value)
    if (!g.branches.has(state.branch)) g.branches.set(state.branch, { name: state.branch, base: null, head: state.head, created: Date.now() })
    if (state.head !== null) g.headRoot = g.checkpoints.get(state.head)?.root ?? 0
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
    await this.sync0(ws)
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
      return this.info(cp)
    })
  }

  /** Keeps a checkpoint's table in memory, dropping the least recently used beyond ROOTS_KEPT (they reload from the store). */
  private remember (id: CheckpointId, t: TableNode): void {
    this.roots.set(id, t)
    if (this.roots.size > ROOTS_KEPT) this.roots.delete(this.roots.keys().next().value!)
  }

  /** True when the live base table is the head checkpoint's table (by persisted id). */
  private baseIsHead (ws: Workspace): boolean {
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

  private sink (batch: StoreBatch): TableSink {
    return {
      nextId: () => this.state.nextId++,
      putNode: (id, v) => { batch.put('node', id, v) },
      putRecord: (id, r) => { batch.put('node', id, encodeRecord(r)) }
    }
  }

  private writeState (batch: StoreBatch, ws: Workspace): void {
    this.state.nextIno = ws.nextIno
    this.state.inodes = this.inodes
    batch.put('meta', 'state', this.state)
    if (this.intentOpen) {
      // the state now says the restore happened: its journal entry goes with it
      batch.del('meta', RESTORE_INTENT)
      batch.onWritten(() => { this.intentOpen = false })
    }
  }

  /** a restore's intent is in the store and its commit is not known to be written */
  private intentOpen = false

  /** Persists the state record alone (mount flags). */
  async saveState (ws: Workspace): Promise<void> {
    const b = this.db.batch()
    this.writeState(b, ws)
    await b.write({ sync: true })
  }

  // ---- checkpoint -------------------------------------------------------

  /**
   * Seals the live generation as a checkpoint. `context` is stored
   * content-addressed (sha256 of its msgpack bytes). Resolves once the
   * checkpoint is durable.
   */
  mark (ws: Workspace, req: { label?: string, context?: unknown, meta?: unknown }): Promise<CheckpointInfo> {
    return this.mutex.run(async () => await this.mark0(ws, req))
  }

  private async mark0 (ws: Workspace, req: { label?: string, context?: unknown, meta?: unknown }): Promise<CheckpointInfo> {
    const t0 = performance.now()
    // --- the cut: synchronous, nothing else runs on this thread meanwhile
    ws.sealAll() // may fail (E_NO_SPACE): then nothing but some sealed blocks changed
    this.inodes = this.liveInodes(ws)
    const table = applyChanges(ws.base, ws.dirty)
    const dirtyBytes = ws.dirtyBytes
    ws.base = table
    ws.dirty = new Map()
    ws.dirtyBytes = 0
    // the fold above keeps the live state as it is; what follows is undone if it is not written
    const before = { head: this.state.head, generation: this.state.generation, nextCheckpoint: this.state.nextCheckpoint, live: this.state.live, headRoot: this.headRoot }
    const br = this.branches.get(this.state.branch)!
    const brHead = br.head
    const assigned: Array<TableNode | InodeRecord> = []
    const batch = this.db.batch()
    const id = this.state.nextCheckpoint++
    try {
      const root = persist(table, this.sink(batch), assigned)
      const generation = this.state.generation
      this.state.generation = this.state.nextGeneration++
      let contextKey: string | null = null
      if (req.context !== undefined) {
        const bytes = packr.pack(req.context)
        contextKey = createHash('sha256').update(bytes).digest('hex')
        batch.put('context', contextKey, { v: req.context })
      }
      const cp: CheckpointRecord = {
        id, generation, root, label: req.label ?? null, time: Date.now(), branch: this.state.branch,
        parent: this.state.head, inodes: this.inodes, dirtyBytes, ms: 0, context: contextKey, meta: req.meta ?? null
      }
      this.state.head = id
      this.state.live = null
      br.head = id
      this.headRoot = root
      // --- durability: pack bytes, fsync, then the index batch
      await this.blocks.sync()
      this.blocks.commitTo(batch)
      cp.ms = performance.now() - t0
      batch.put('checkpoint', id, cp)
      batch.put('branch', br.name, br)
      this.writeState(batch, ws)
      await batch.write({ sync: true })
      this.checkpoints.set(id, cp)
      this.remember(id, table)
      cp.ms = performance.now() - t0
      return this.info(cp)
    } catch (e) {
      // not written: the live state stays the folded table, unpersisted, so
      // the next mark or fsync writes it; the checkpoint never existed
      unpersist(assigned)
      Object.assign(this.state, { head: before.head, generation: before.generation, nextCheckpoint: before.nextCheckpoint, live: before.live })
      this.headRoot = before.headRoot
      br.head = brHead
      ws.dirtyBytes += dirtyBytes
      throw e
    }
  }

  // ---- fsync ------------------------------------------------------------

  /**
   * fsync and fsyncdir: makes the whole live state durable without making a
   * checkpoint. The live generation's changes are folded into its base table
   * (the same consistent cut as a mark), pack bytes are fsynced and the table
   * is written with its root in `state.live`; a resume after a crash starts
   * from it. Calls that arrive while one is waiting share it (group commit).
   * Cost: O(changes since the last fold) plus ≤ 4 table nodes per changed inode.
   */
  sync (ws: Workspace): Promise<void> {
    if (this.pendingSync) return this.pendingSync
    const p = this.mutex.run(async () => {
      this.pendingSync = null
      await this.sync0(ws)
    })
    this.pendingSync = p
    return p
  }

  private pendingSync: Promise<void> | null = null

  private async sync0 (ws: Workspace): Promise<void> {
    ws.sealAll()
    if (ws.dirty.size === 0 && (this.state.live?.root === ws.base.id || this.baseIsHead(ws))) return
    this.inodes = this.liveInodes(ws)
    const table = applyChanges(ws.base, ws.dirty)
    ws.base = table
    ws.dirty = new Map()
    const live = this.state.live
    const assigned: Array<TableNode | InodeRecord> = []
    try {
      const batch = this.db.batch()
      const root = persist(table, this.sink(batch), assigned)
      this.state.live = { root, generation: this.state.generation }
      await this.blocks.sync()
      this.blocks.commitTo(batch)
      this.writeState(batch, ws)
      await batch.write({ sync: true })
    } catch (e) {
      unpersist(assigned) // the folded table stays live, unpersisted: the next fsync or mark writes it
      this.state.live = live
      throw e
    }
  }

  /** The table a resume after a crash starts from: the fsync'd live state, else the head checkpoint. */
  async resumeTable (): Promise<TableNode> {
    const live = this.state.live
    if (live && live.generation === this.state.generation) return await loadRoot(this, live.root, this.nodes)
    return await this.tableOf(this.state.head!)
  }

  /** Wire form of a checkpoint record. */
  info (cp: CheckpointRecord): CheckpointInfo {
    return { id: cp.id, label: cp.label, time: cp.time, generation: cp.generation, branch: cp.branch, parent: cp.parent, inodes: cp.inodes, dirtyBytes: cp.dirtyBytes, ms: cp.ms, pinned: cp.pinned === true }
  }

  /** Inodes in the live state: the base table's count plus the net of this generation's changes. O(dirty). */
  liveInodes (ws: Workspace): number {
    let n = this.inodes
    for (const [ino, r] of ws.dirty) {
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
    for (const ino of ws.dirty.keys()) changed.add(ino)
    return changed.size
  }

  /**
   * True when the live state has changes a restore must checkpoint first:
   * it is dirty, and not only because lower directories were listed
   * (Workspace.onlyListed) over a base that is the head checkpoint itself.
   */
  private unsaved (ws: Workspace): boolean {
    if (!this.isDirty(ws)) return false
    return !(this.baseIsHead(ws) && ws.onlyListed())
  }

  /** True when the live generation has changes since its base checkpoint. */
  isDirty (ws: Workspace): boolean {
    if (ws.dirty.size > 0) return true
    // fsync folded changes into the base without a checkpoint
    if (this.state.head !== null && !this.baseIsHead(ws)) return true
    // an empty per-file buffer map is not unsaved data; counting it made
    // restore's seal-until-clean loop spin forever (O(files with buffers))
    for (const m of ws.dirtyData.values()) if (m.size > 0) return true
    return false
  }

  // ---- restore ----------------------------------------------------------

  /**
   * Makes the live workspace equal to checkpoint `id` and starts a new
   * branch from it. Unsaved changes are first sealed as a checkpoint on the
   * abandoned branch (label "before restore to N"), so nothing is lost.
   * `invalidate` drops the kernel's caches of changed paths; the restore
   * resolves when it is done.
   *
   * Journal: before anything changes, the restore's intent (`meta.restore`,
   * RestoreIntent) is written with sync; the swap's own record (new branch,
   * new head) deletes it. A daemon killed in between leaves the intent, and
   * the next start completes the restore (`completeInterruptedRestore`); one
   * killed before the intent was durable restarts from the state before the
   * restore. So an interrupted restore either completes or never happened,
   * and one that was acknowledged survives a crash.
   */
  restore (ws: Workspace, id: CheckpointId, invalidate: (items: InvalidationItem[]) => Promise<void>): Promise<Omit<RestoreInfo, 'recovery'>> {
    try { this.checkpoint(id) } catch (e) { return Promise.reject(e) }
    return this.mutex.run(async () => {
      const t0 = performance.now()
      const label = `before restore to ${id}`
      let saved: CheckpointId | null = null
      if (this.unsaved(ws)) saved = (await this.mark0(ws, { label })).id
      const cp = this.checkpoint(id)
      const target = await this.tableOf(id)
      await loadDifferences(this, ws.base, target, this.nodes, this.records)
      // FUSE writes may land during any await (mark0's fsync, store reads,
      // the journal write); seal them and reload until a check finds nothing
      // new, so the check and the swap have no await between them and no
      // completed write is dropped by swapTo. Each round is O(what changed
      // meanwhile).
      let journaled = false
      for (;;) {
        if (this.unsaved(ws)) {
          saved = (await this.mark0(ws, { label })).id
          await loadDifferences(this, ws.base, target, this.nodes, this.records)
          continue
        }
        if (journaled) break
        const intent: RestoreIntent = { to: id, from: this.state.head, time: Date.now() }
        await this.db.batch().put('meta', RESTORE_INTENT, intent).write({ sync: true })
        journaled = true
      }
      // --- from here synchronous until the swap
      // what is still dirty only lists lower directories (see unsaved): the swap drops those
      // records, and the kernel may hold their paths with their inode numbers
      const listed = [...ws.dirty.keys()]
      const before = ws.base
      const changed = differences(before, target)
      const items = invalidationItems(ws, target, changed, listed)
      ws.swapTo(target)
      this.inodes = cp.inodes
      this.switchToBranchFrom(cp)
      const batch = this.db.batch()
      batch.put('branch', this.state.branch, this.branches.get(this.state.branch)!)
      this.intentOpen = true
      this.writeState(batch, ws)
      // the intent is durable: the swap's record needs no fsync of its own (a
      // crash before it reaches the disk completes the restore at the next start)
      const committed = batch.write({ sync: false }).catch(() => {
        // written by the next mark, fsync or state save (writeState deletes the intent while it is open)
      })
      // the count of changed paths: as diff lists them (inodes are no measure across mount
      // sessions, where the same unchanged file has another inode in each)
      const count = this.diffTables(ws, before, target, false).then(d => d.length, () => changed.size)
      const [, , n] = await Promise.all([committed, invalidate(items), count])
      return { checkpoint: id, branch: this.state.branch, changed: n, ms: performance.now() - t0, saved }
    })
  }

  /** In memory: a new branch starting at `cp`, head `cp`, a new generation. The caller writes the state. */
  private switchToBranchFrom (cp: CheckpointRecord): void {
    const name = `b${this.state.nextBranch++}`
    const br: BranchRecord = { name, base: cp.id, head: cp.id, created: Date.now() }
    this.branches.set(name, br)
    this.state.branch = name
    this.state.head = cp.id
    this.headRoot = cp.root
    this.state.live = null
    this.state.generation = this.state.nextGeneration++
  }

  /**
   * At start-up, before the resume table is read: completes a restore the
   * previous daemon journaled but did not commit (it died in between).
   * Returns the intent that was completed, or null when there was none.
   * The intent of a checkpoint that does not exist (any more) is dropped.
   */
  async completeInterruptedRestore (): Promise<RestoreIntent | null> {
    const intent = await this.db.get<RestoreIntent>('meta', RESTORE_INTENT)
    if (!intent) return null
    const cp = this.checkpoints.get(intent.to)
    const batch = this.db.batch()
    if (cp) {
      this.switchToBranchFrom(cp)
      this.inodes = cp.inodes
      batch.put('branch', this.state.branch, this.branches.get(this.state.branch)!)
    }
    batch.del('meta', RESTORE_INTENT)
    this.state.inodes = this.inodes
    batch.put('meta', 'state', this.state)
    await batch.write({ sync: true })
    return cp ? intent : null
  }

  // ---- reading checkpoints ---------------------------------------------

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

  /**
   * Differences between two checkpoints (or a checkpoint and the live
   * state), by path. The inode tables say which inodes differ (O(changed));
   * the walk from the root then descends only into directories that hold a
   * changed inode somewhere below (their ancestors, by links, in either
   * table) or that differ themselves. A directory's own record does not
   * change when a file below it is rewritten, so it alone cannot decide. A
   * directory listed on one side only (still lower on the other) is compared
   * name by name.
   */
  async diff (ws: Workspace, a: CheckpointId, b?: CheckpointId): Promise<DiffEntry[]> {
    const ta = await this.tableOf(a)
    const live = b === undefined
    const tb = live ? applyChanges(ws.base, ws.dirty) : await this.tableOf(b)
    await loadDifferences(this, ws.base, ta, this.nodes, this.records)
    await loadDifferences(this, ws.base, tb, this.nodes, this.records)
    return await this.diffTables(ws, ta, tb, live)
  }

  /** diff between two tables; `live`: tb is the live state (its unsealed writes count). */
  private async diffTables (ws: Workspace, ta: TableNode, tb: TableNode, live: boolean): Promise<DiffEntry[]> {
    await loadDifferences(this, ta, tb, this.nodes, this.records)
    const va = new TreeView(this, ws, ta)
    const vb = new TreeView(this, ws, tb)
    // directories with a changed inode below them, in either table
    const below = new Set<Ino>()
    for (const ino of differences(ta, tb)) {
      for (const t of [ta, tb]) {
        let r = lookup(t, ino)
        for (let depth = 0; r && r.links.length > 0 && depth < 4096; depth++) {
          const parent = r.links[0][0]
          if (below.has(parent)) break
          below.add(parent)
          r = lookup(t, parent)
        }
        for (const l of lookup(t, ino)?.links.slice(1) ?? []) below.add(l[0])
      }
    }
    const out: DiffEntry[] = []
    const all = async (v: TreeView, r: InodeRecord, p: string, change: 'added' | 'deleted'): Promise<void> => {
      out.push({ path: p, change })
      if ((r.mode & S_IFMT) === 0o040000) for (const [n, c] of await v.children(r)) await all(v, c, `${p}/${n}`, change)
    }
    const walk = async (x: InodeRecord, y: InodeRecord, p: string): Promise<void> => {
      const isDir = (x.mode & S_IFMT) === 0o040000
      if (sameRecord(ws.lower, x, y) && !(isDir && (below.has(x.ino) || below.has(y.ino)))) return
      if ((x.mode & S_IFMT) !== (y.mode & S_IFMT)) { out.push({ path: p || '/', change: 'type' }); return }
      if (!isDir) {
        if (!sameContent(ws, x, y, false, live)) out.push({ path: p, change: 'modified' })
        else if (!sameMeta(x, y)) out.push({ path: p, change: 'meta' })
        return
      }
      if (!sameMeta(x, y)) out.push({ path: p || '/', change: 'meta' })
      const cx = await va.children(x); const cy = await vb.children(y)
      for (const [n, c] of cx) {
        const d = cy.get(n)
        if (!d) await all(va, c, `${p}/${n}`, 'deleted')
        else await walk(c, d, `${p}/${n}`)
      }
      for (const [n, d] of cy) if (!cx.has(n)) await all(vb, d, `${p}/${n}`, 'added')
    }
    await walk(await va.root(), await vb.root(), '')
    out.sort((p, q) => p.path < q.path ? -1 : p.path > q.path ? 1 : 0)
    return out
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

/** Same record: one object, one persisted id, or the same lower entry (see sameLower). */
function sameRecord (lower: LowerLayer, x: InodeRecord, y: InodeRecord): boolean {
  if (x === y) return true
  const ix = recordId(x)
  if (ix !== 0 && ix === recordId(y)) return true
  return x.lower !== undefined && y.lower !== undefined && !x.entries && !y.entries && !x.blocks && !y.blocks &&
    (x.mode & S_IFMT) === (y.mode & S_IFMT) && x.size === y.size && sameMeta(x, y) && sameLower(lower, x, y)
}

/**
 * True when two lower references (file content or a directory's listing)
 * name the same thing. References of one mount session do when they name
 * one path. Every mount session reads the directory as a new lower layer,
 * so after an unmount and a remount the same unchanged file is `{s: 1, p}`
 * in the old records and `{s: 2, p}` in the new ones. Two sessions' references
 * to one path name the same thing when no write-back changed the path in
 * between: write-back freezes a path before it changes it (for every
 * session up to its own, daemon/writeback.ts), so that is when both resolve
 * to the same frozen copy, or both to the directory as it is now
 * (LowerLayer.frozenFor). For files one more condition: the two records
 * agree on mtime or on ctime (write-back that sets only a file's attributes
 * changes its ctime; when the mtime was changed too, a file with the same
 * bytes is reported modified: the references cannot tell). Edits made to the directory while it was not mounted
 * are outside what rewindfs versions: both references then read the edited
 * bytes, the old ones are gone. Through this rule such an edit shows as
 * changed content (a size that differs always does), unless it set the mtime
 * back too; then only what else differs (mode, owner, ...) shows.
 */
function sameLower (lower: LowerLayer, x: InodeRecord, y: InodeRecord): boolean {
  const a = x.lower!; const b = y.lower!
  if (a.p !== b.p) return false
  if (a.s === b.s) return true
  if (lower.frozenFor(a) !== lower.frozenFor(b)) return false
  return (x.mode & S_IFMT) !== S_IFREG || x.mtime === y.mtime || x.ctime === y.ctime
}

/** Same attributes for diff: atime is left out (reading the lower layer can move it; it is restored all the same). */
function sameMeta (x: InodeRecord, y: InodeRecord): boolean {
  return x.mode === y.mode && x.uid === y.uid && x.gid === y.gid && x.mtime === y.mtime &&
    sameXattrs(x.xattrs, y.xattrs)
}

function sameXattrs (a: Record<string, Uint8Array> | undefined, b: Record<string, Uint8Array> | undefined): boolean {
  const ka = Object.keys(a ?? {}); const kb = Object.keys(b ?? {})
  if (ka.length !== kb.length) return false
  return ka.every(k => b![k] !== undefined && Buffer.compare(a![k], b![k]) === 0)
}

/** Bytes compared per read when diff compares file content byte by byte. */
const COMPARE_CHUNK = 1 << 20

/**
 * Content of two non-directory records for diff: the content of files, the
 * target of symlinks, the device number of devices. `xLive`/`yLive` say
 * whether a record is of the live state (its unsealed writes count).
 *
 * A file's content is known as a block list (its own, or the frozen copy its
 * lower reference resolves to) or as a file of the lower directory. Rules,
 * cheapest first:
 *  - other size: different;
 *  - both lower references (not written through the mount since) that
 *    sameLower finds the same: equal;
 *  - both block lists, no unsealed writes: equal lists are equal content
 *    (blocks are content-addressed and deduplicated byte for byte, holes are 0);
 *  - otherwise (a block list against a lower file, e.g. a file edited in one
 *    session and read back from the directory after its write-back in the
 *    next; unsealed writes; lists that differ): other mtime (ns) is reported
 *    as different content without reading; the same mtime compares the bytes,
 *    which is O(size) and stops at the first difference. So a file rewritten
 *    with other bytes of the same size and its mtime set back (touch -d) is
 *    still modified, and one written back with the bytes it had is not. A
 *    lower file that cannot be read counts as different.
 */
function sameContent (ws: Workspace, x: InodeRecord, y: InodeRecord, xLive: boolean, yLive: boolean): boolean {
  if (x.size !== y.size || x.target !== y.target || x.rdev !== y.rdev) return false
  if ((x.mode & S_IFMT) !== S_IFREG) return true
  const xd = xLive ? unsealed(ws, x) : false
  const yd = yLive ? unsealed(ws, y) : false
  if (x.lower && y.lower && !x.blocks && !y.blocks && sameLower(ws.lower, x, y)) return true
  const bx = blocksOf(ws.lower, x); const by = blocksOf(ws.lower, y)
  if (bx && by && !xd && !yd && bx.length === by.length && bx.every((b, i) => b === by[i])) return true
  if (x.mtime !== y.mtime) return false
  if (x.size === 0) return true
  const a = Buffer.allocUnsafe(Math.min(COMPARE_CHUNK, x.size)); const b = Buffer.allocUnsafe(a.length)
  try {
    for (let pos = 0; pos < x.size; pos += a.length) {
      const n = Math.min(a.length, x.size - pos)
      ws.readRecord(x, a, n, pos, xd)
      ws.readRecord(y, b, n, pos, yd)
      if (!a.subarray(0, n).equals(b.subarray(0, n))) return false
    }
  } catch {
    return false
  }
  return true
}

/** True when `r` is the live record of its inode and has writes not sealed into blocks yet. */
function unsealed (ws: Workspace, r: InodeRecord): boolean {
  if (r.ino === 0 || !r.blocks) return false
  return (ws.dirtyData.get(r.ino)?.size ?? 0) > 0 && ws.get(r.ino) === r
}

/** The block list of a file record: its own, the frozen copy its lower reference resolves to, or undefined (a lower file). */
function blocksOf (lower: LowerLayer, r: InodeRecord): BlockId[] | undefined {
  if (r.blocks) return r.blocks
  if (!r.lower) return []
  return lower.frozenFor(r.lower)?.blocks
}

/**
 * Kernel cache invalidations for a swap from the live state to `target`
 * (fuse-invalidation.md §6): an entry invalidation for every old path whose
 * inode disappears, changes type or stops being at that name; an inode
 * invalidation (attributes and pages) for every path whose inode survives
 * with changes, and for vanished or moved ones (open fds and mmaps); a
 * new libfuse generation for the name of a non-directory that vanishes or
 * moves away (so a file restored or created there later gets its own
 * kernel inode instead of the one an old handle still holds, see
 * fuse-native.c fn_renew); the same for the paths of open handles the
 * restore cuts off (Workspace.stalePaths); the nodes libfuse keeps without
 * a name when a handle's name is gone (fn_inval_nameless); the root always.
 * Inodes first, then generations, then entries deepest first.
 */
export function invalidationItems (ws: Workspace, target: TableNode, changed: Set<Ino>, listed: Ino[] = []): InvalidationItem[] {
  const entries = new Set<string>()
  const inodes = new Set<string>()
  const renew = new Set<string>()
  const oldGet = (i: Ino): InodeRecord | undefined => ws.get(i)
  const newGet = (i: Ino): InodeRecord | undefined => lookup(target, i)
  const pathsOf = (get: (i: Ino) => InodeRecord | undefined, r: InodeRecord): string[] => {
    const out: string[] = []
    for (const [parent, name] of r.links) {
      const pp = pathIn(get, parent)
      if (pp !== null) out.push(pp === '/' ? `/${name}` : `${pp}/${name}`)
    }
    if (r.ino === 1) out.push('/')
    return out
  }
  const swap = (ino: Ino, n: InodeRecord | undefined): void => {
    const o = oldGet(ino)
    if (!o) return
    const oldPaths = pathsOf(oldGet, o)
    if (!n || (n.mode & S_IFMT) !== (o.mode & S_IFMT)) {
      // the name goes; its pages go too, so an fd or mmap still open on it cannot read cached bytes
      for (const p of oldPaths) if (p !== '/') { entries.add(p); inodes.add(p); if ((o.mode & S_IFMT) !== S_IFDIR) renew.add(p) }
      return
    }
    const newPaths = new Set(pathsOf(newGet, n))
    for (const p of oldPaths) {
      if (newPaths.has(p)) inodes.add(p)
      else if (p !== '/') { entries.add(p); inodes.add(p); if ((o.mode & S_IFMT) !== S_IFDIR) renew.add(p) }
    }
  }
  for (const ino of changed) swap(ino, newGet(ino))
  // records only listing made (not in the base table, or a listed directory the base has unlisted):
  // the kernel knows their paths with these inode numbers; a new one is in no checkpoint
  for (const ino of listed) {
    if (changed.has(ino)) continue
    let b: InodeRecord | undefined
    try { b = lookup(ws.base, ino) } catch {}
    swap(ino, b)
  }
  // open handles the restore cuts off, also where their inode did not change (a file below a moved directory)
  for (const [p, dir] of ws.stalePaths(target)) { inodes.add(p); if (!dir) renew.add(p) }
  const items: InvalidationItem[] = []
  const depth = (p: string): number => p.split('/').length
  // inodes first: libfuse resolves their paths through names the entry invalidations remove
  for (const p of inodes) if (p !== '/') items.push([4, p, 0, 0])
  for (const p of renew) items.push([5, p])
  // handles whose name is gone are out of reach by path: drop what the kernel caches for them
  if (ws.hasNamelessHandles()) items.push([6])
  for (const p of [...entries].sort((a, b) => depth(b) - depth(a))) items.push([3, p])
  items.push([1, 1, 0, 0])
  return items
}
