/**
 * Garbage collection: drops the checkpoints a retention policy does not
 * keep, deletes every table node, inode record, context and block nothing
 * kept can reach, and compacts packs, returning their space to the
 * filesystem. Runs inside a running daemon (the workspace stays in use) or
 * on a stopped store (`rewindfs gc` opens it itself).
 *
 * Retention (a checkpoint is kept when any rule keeps it):
 *  - the newest `keepLast` checkpoints (by id);
 *  - every checkpoint reachable from a live branch: the head of the current
 *    branch and of every branch with a checkpoint newer than
 *    `abandonedAfterMs`, and all their ancestors (git's notion of
 *    reachable). Branches with no such checkpoint are abandoned;
 *  - pinned checkpoints (`rewindfs pin`);
 *  - checkpoints whose context names a live run (`{run: NAME}`, as the
 *    client's runner stores it): a run is live until it is ended
 *    (`run_end`, which the runner sends when it finishes; a later
 *    checkpoint of the same run makes it live again) or has marked nothing
 *    for `runIdleMs`.
 * A kept checkpoint whose parent is dropped gets the nearest kept ancestor
 * as its parent (and its per-path history index is computed again against
 * it; the dropped checkpoints' index keys are deleted); a branch left with
 * no checkpoint is deleted (never the current one).
 *
 * Reachability is by mark and sweep from the kept checkpoints' tables, the
 * live table fsync made durable, the running workspace's table and its
 * unsaved records, and frozen lower paths. Mark-and-sweep with copying
 * compaction of append-only packs is restic's `prune` (doc/design.rst,
 * cmd_prune.go), here over our inode tables instead of trees.
 *
 * Safe while the workspace is in use:
 *  1. under the generations' lock (no mark, fsync or restore meanwhile):
 *     choose, write the dropped checkpoints' and branches' records away, and
 *     take a snapshot: node and block id counters, the live table, the
 *     blocks of unsaved records; from then on the block store remembers
 *     every block a writer takes (dedup included);
 *  2. without the lock: mark from the roots. Nothing below the snapshot's
 *     counters can become reachable again except through the snapshot's
 *     roots or a block a writer took (remembered);
 *  3. synchronously: the unreachable blocks are removed from the in-memory
 *     index (no writer can take them any more), then their records, the
 *     unreachable nodes and contexts are deleted, and the frozen copies of
 *     lower paths (fs/lower.ts) for sessions no kept record refers to;
 *  4. packs with at least COMPACT_DEAD_RATIO dead bytes are compacted pack
 *     by pack: live blocks copied to the current pack (hash checked), the
 *     new locations written, the old pack deleted. A pack with no live block
 *     is deleted at once. A kill at any point leaves garbage the next gc
 *     removes, never a dangling reference.
 */
import fs from 'node:fs'
import path from 'node:path'
import type { BlockId, CheckpointId, PackId } from '../../base/types.js'
import type { BranchRecord, CheckpointRecord, Generations } from '../history/generations.js'
import type { Workspace } from '../workspace.js'
import type { InodeRecord } from '../inode.js'
import { TableNode, recordId } from '../itable.js'
import type { StoreDb } from '../../store/db.js'
import type { BlockStore } from '../../store/blocks.js'
import { RECORD_HEADER_SIZE, PACK_HEADER_SIZE } from '../../store/pack.js'
import { type FrozenPath, decodeFrozen, encodeFrozen, frozenKey, relOfFrozenKey } from '../lower.js'
import type { GcPolicy, GcReport } from '../../proto/messages.js'
import { META_GC_REMOVED, addRanges, asRanges } from './losses.js'
import { backfillIndex } from '../history/path-index.js'

export type { GcPolicy, GcReport } from '../../proto/messages.js'

/** Default policy: keep the newest 50, drop branches abandoned for 7 days, runs idle for 1 day are over. */
export const DEFAULT_GC_POLICY: GcPolicy = { keepLast: 50, abandonedAfterMs: 7 * 24 * 3600 * 1000, runIdleMs: 24 * 3600 * 1000, dryRun: false }

/** A pack is compacted when at least this share of its bytes is dead (restic prune's --max-unused is 5%; packs here are larger). */
export const COMPACT_DEAD_RATIO = 0.2

/** Deletes per LevelDB batch in the sweep. */
const SWEEP_BATCH = 10000

/** Record of an ended run (kind `run`, key = run name). */
export interface RunRecord {
  /** ms since the epoch */
  ended: number
}

/** What gc works on. */
export interface GcTarget {
  db: StoreDb
  blocks: BlockStore
  gens: Generations
  /** the running workspace, when gc runs inside the daemon */
  ws?: Workspace
  /** the store directory (for sizes) */
  storeDir: string
  /** progress lines, e.g. to the daemon log */
  log?: (m: string) => void
  /** time now, ms since the epoch (tests) */
  now?: number
  /** awaited once the snapshot is taken, the lock released and the roots chosen, before the mark walks them (tests race writers against gc with it) */
  beforeMark?: () => Promise<void> | void
}

/**
 * Runs garbage collection with `policy` (missing fields from
 * DEFAULT_GC_POLICY). With `dryRun` nothing is written and the report says
 * what would be removed. Throws ApiError E_BAD_REQUEST for a bad policy;
 * store errors (E_NO_SPACE, E_IO, E_CORRUPT) as they come: what was done
 * before stays done and consistent.
 */
export async function collectGarbage (target: GcTarget, policyIn: Partial<GcPolicy> = {}): Promise<GcReport> {
  const t0 = performance.now()
  const policy: GcPolicy = { ...DEFAULT_GC_POLICY, ...policyIn }
  const { db, blocks, gens, ws } = target
  const now = target.now ?? Date.now()
  const before = { packs: packBytes(blocks), meta: dirBytes(path.join(target.storeDir, 'meta')) }

  // ---- 1. choose, drop, snapshot (under the lock) --------------------------
  const chosen = await gens.exclusive(async () => {
    if (ws && !policy.dryRun) {
      // new writes go to a new pack, and what was written so far is committed,
      // so the packs written until now can be compacted
      blocks.packFiles.startNewPack()
      await gens.persistLive(ws).catch(e => target.log?.(`rewindfs: gc could not make the live state durable first (${(e as Error).message}); packs with uncommitted blocks are left as they are`))
    }
    const choice = await choose(db, gens, policy, now)
    if (!policy.dryRun) {
      await dropCheckpoints(db, gens, choice)
      // the checkpoints given a new parent: their per-path history index against it (path-index.ts)
      await backfillIndex(gens)
    }
    const snap = {
      nextNode: gens.state.nextId,
      nextBlock: blocks.nextBlockId,
      liveRoot: gens.state.live?.root ?? 0,
      liveTable: ws?.base,
      liveBlocks: ws ? unsavedBlocks(ws) : new Set<BlockId>()
    }
    if (!policy.dryRun) blocks.startTracking()
    return { choice, snap }
  })
  const { choice, snap } = chosen
  let packsReturned = 0
  const report: GcReport = {
    dryRun: policy.dryRun,
    policy: { keepLast: policy.keepLast, abandonedAfterMs: policy.abandonedAfterMs, runIdleMs: policy.runIdleMs },
    checkpoints: { before: choice.all, kept: choice.all - choice.dropped.length, removed: choice.dropped },
    branches: { removed: choice.branchesRemoved },
    nodes: 0,
    contexts: 0,
    frozen: 0,
    blocks: { removed: 0, bytes: 0 },
    packs: { deleted: 0, compacted: 0, notCompacted: [] },
    bytes: { packsBefore: before.packs, packsAfter: before.packs, metaBefore: before.meta, metaAfter: before.meta, returned: 0 },
    ms: 0
  }

  try {
    // ---- 2. mark -------------------------------------------------------------
    const keptRoots = [...gens.checkpoints.values()].filter(c => !choice.droppedSet.has(c.id)).map(c => c.root)
    await target.beforeMark?.()
    const marked = await mark(db, keptRoots, snap.liveRoot, snap.liveTable)
    // frozen copies answer lower references of their sessions: those no kept record refers to go
    marked.sessions.add(gens.state.session)
    if (ws) for (const r of [...ws.unsavedRecords().values(), ...ws.orphanRecords(), ...ws.retainedRecords()]) if (r?.lower) marked.sessions.add(r.lower.s)
    const frozenKept = new Map<string, FrozenPath[]>()
    for await (const e of db.iterate<FrozenPath[]>('lower')) {
      const list = Array.isArray(e.value) ? decodeFrozen(e.value) : []
      const kept = list.filter(f => [...marked.sessions].some(s => f.from <= s && s <= f.to))
      if (kept.length < list.length) { frozenKept.set(relOfFrozenKey(e.key), kept); report.frozen += list.length - kept.length }
      for (const f of kept) for (const b of f.blocks ?? []) if (b > 0) marked.blocks.add(b) // b < 0: a run of holes
    }

    // ---- 3. sweep ------------------------------------------------------------
    const contexts = new Set(
      [...gens.checkpoints.values()].filter(c => !choice.droppedSet.has(c.id) && c.context).map(c => c.context as string))
    const deadContexts: string[] = []
    for await (const k of db.keys('context')) if (!contexts.has(k)) deadContexts.push(k)
    // the per-path history index keys of the dropped checkpoints (only theirs:
    // a mark running meanwhile writes keys before its checkpoint is known)
    const deadHist: string[] = []
    if (choice.dropped.length > 0) {
      for await (const k of db.keys('hist')) if (choice.droppedSet.has(parseInt(k.slice(-16), 16))) deadHist.push(k)
    }
    const deadNodes: number[] = []
    for await (const k of db.keys('node', { lt: snap.nextNode })) {
      const id = parseInt(k, 16)
      if (!marked.nodes.has(id)) deadNodes.push(id)
    }
    // synchronous: from the end of tracking to forget, no writer can take a block
    const taken = policy.dryRun ? new Set<BlockId>() : blocks.stopTracking()
    const pending = blocks.pendingIds()
    const live = ws ? unsavedBlocks(ws) : new Set<BlockId>()
    const deadBlocks: BlockId[] = []
    let deadBytes = 0
    for (const [id, loc] of blocks.locations()) {
      if (id >= snap.nextBlock || marked.blocks.has(id) || taken.has(id) || pending.has(id) || snap.liveBlocks.has(id) || live.has(id)) continue
      deadBlocks.push(id)
      deadBytes += loc.length
    }
    report.nodes = deadNodes.length
    report.contexts = deadContexts.length
    report.blocks = { removed: deadBlocks.length, bytes: deadBytes }
    if (policy.dryRun) {
      report.bytes.returned = deadBytes
      report.ms = performance.now() - t0
      return report
    }
    // forgotten in memory first (no writer can take them from here on); if
    // deleting their records fails, those not deleted are known again, so
    // memory and the index on disk never disagree (compaction relies on it)
    // the pruned frozen copies first: a kill after this leaves their blocks as garbage, never a copy without its blocks
    if (frozenKept.size > 0) {
      const batch = db.batch()
      for (const [p, kept] of frozenKept) { if (kept.length > 0) batch.put('lower', frozenKey(p), encodeFrozen(kept)); else batch.del('lower', frozenKey(p)) }
      await batch.write({ sync: true })
      for (const [p, kept] of frozenKept) ws?.lower.setFrozen(p, kept)
    }
    const forgotten = blocks.forget(deadBlocks)
    for (const id of deadNodes) { gens.nodes.delete(id); gens.records.delete(id) }
    await deleteAll(db, 'node', deadNodes)
    await deleteAll(db, 'context', deadContexts)
    await deleteAll(db, 'hist', deadHist)
    let deleted = 0
    try {
      await deleteAll(db, 'block', deadBlocks, n => { deleted = n })
    } catch (e) {
      blocks.reinstate(deadBlocks.slice(deleted).map(id => [id, forgotten.get(id)!] as const).filter(([, e]) => e !== undefined))
      throw e
    }
    target.log?.(`rewindfs: gc removed ${choice.dropped.length} checkpoints, ${deadNodes.length} table nodes and records, ${deadBlocks.length} blocks`)

    // ---- 4. compact ----------------------------------------------------------
    packsReturned = await compact(db, blocks, report)
    await db.compact()
  } catch (e) {
    if (choice.dropped.length === 0 || policy.dryRun) throw e
    // say what had been done: the checkpoints are gone, the space is not yet returned
    const err = e as Error & { code?: string }
    err.message = `gc removed checkpoint${choice.dropped.length === 1 ? '' : 's'} #${choice.dropped.join(', #')} and then stopped: ${err.message}. ` +
      'The store is consistent; run rewindfs gc again (once space is freed, if that was the cause) to return their space'
    throw err
  } finally {
    if (!policy.dryRun) blocks.stopTracking()
  }
  report.bytes.packsAfter = packBytes(blocks)
  report.bytes.metaAfter = dirBytes(path.join(target.storeDir, 'meta'))
  // what gc itself returned (the totals before and after also move with writes made meanwhile)
  report.bytes.returned = packsReturned + Math.max(0, report.bytes.metaBefore - report.bytes.metaAfter)
  report.ms = performance.now() - t0
  return report
}

/** The policy's decision: which checkpoints go, new parents, branch changes. */
interface Choice {
  all: number
  dropped: CheckpointId[]
  droppedSet: Set<CheckpointId>
  /** kept checkpoints whose parent changes → new parent */
  reparent: Map<CheckpointId, CheckpointId | null>
  branchesRemoved: string[]
  branchesChanged: BranchRecord[]
}

async function choose (db: StoreDb, gens: Generations, policy: GcPolicy, now: number): Promise<Choice> {
  const cps = [...gens.checkpoints.values()].sort((a, b) => b.id - a.id)
  const keep = new Set<CheckpointId>()
  for (const c of cps.slice(0, Math.max(0, policy.keepLast))) keep.add(c.id)
  if (gens.state.head !== null) keep.add(gens.state.head)
  // live branches: the current one, and those with a checkpoint newer than abandonedAfterMs
  const newest = new Map<string, number>()
  for (const c of cps) newest.set(c.branch, Math.max(newest.get(c.branch) ?? 0, c.time))
  const onLineage = new Set<CheckpointId>()
  const ancestors = (id: CheckpointId | null): void => {
    for (let cur = id; cur !== null && !onLineage.has(cur);) {
      const c = gens.checkpoints.get(cur)
      if (!c) break
      onLineage.add(cur)
      keep.add(cur)
      cur = c.parent
    }
  }
  for (const br of gens.branches.values()) {
    const live = br.name === gens.state.branch || now - (newest.get(br.name) ?? br.created) < policy.abandonedAfterMs
    if (live) ancestors(br.head ?? br.base)
  }
  ancestors(gens.state.head)
  // pinned, and those of live runs
  const runLast = new Map<string, number>()
  const runOf = new Map<CheckpointId, string>()
  for (const c of cps) {
    if (c.pinned) keep.add(c.id)
    const run = await runOfCheckpoint(db, c)
    if (run === null) continue
    runOf.set(c.id, run)
    runLast.set(run, Math.max(runLast.get(run) ?? 0, c.time))
  }
  for (const [id, run] of runOf) {
    if (keep.has(id)) continue
    const end = await db.get<RunRecord>('run', run)
    const last = runLast.get(run) ?? 0
    // ended only by an end newer than its last checkpoint (a run name used again is live again)
    const ended = (end !== undefined && end.ended >= last) || now - last >= policy.runIdleMs
    if (!ended) keep.add(id)
  }
  const dropped = cps.filter(c => !keep.has(c.id)).map(c => c.id).sort((a, b) => a - b)
  const droppedSet = new Set(dropped)
  const nearestKept = (id: CheckpointId | null): CheckpointId | null => {
    for (let cur = id, guard = 0; cur !== null && guard <= cps.length; guard++) {
      if (!droppedSet.has(cur)) return gens.checkpoints.has(cur) ? cur : null
      cur = gens.checkpoints.get(cur)?.parent ?? null
    }
    return null
  }
  const reparent = new Map<CheckpointId, CheckpointId | null>()
  for (const c of cps) {
    if (droppedSet.has(c.id) || c.parent === null || !droppedSet.has(c.parent)) continue
    reparent.set(c.id, nearestKept(c.parent))
  }
  const branchesRemoved: string[] = []
  const branchesChanged: BranchRecord[] = []
  for (const br of gens.branches.values()) {
    const members = cps.filter(c => c.branch === br.name && !droppedSet.has(c.id))
    if (members.length === 0 && br.name !== gens.state.branch) { branchesRemoved.push(br.name); continue }
    const head = br.head !== null && droppedSet.has(br.head) ? (members[0]?.id ?? null) : br.head
    const base = br.base !== null && droppedSet.has(br.base) ? nearestKept(br.base) : br.base
    if (head !== br.head || base !== br.base) branchesChanged.push({ ...br, head, base })
  }
  return { all: cps.length, dropped, droppedSet, reparent, branchesRemoved, branchesChanged }
}

/** The run named by a checkpoint's context (`{run: NAME, ...}`), or null. */
async function runOfCheckpoint (db: StoreDb, c: CheckpointRecord): Promise<string | null> {
  if (!c.context) return null
  const v = await db.get<{ v: unknown }>('context', c.context)
  const run = (v?.v as { run?: unknown } | undefined)?.run
  return typeof run === 'string' ? run : null
}

/** Writes the choice: dropped checkpoints and branches deleted, parents and branches rewritten; memory follows. */
async function dropCheckpoints (db: StoreDb, gens: Generations, choice: Choice): Promise<void> {
  if (choice.dropped.length === 0 && choice.branchesChanged.length === 0 && choice.branchesRemoved.length === 0) return
  const batch = db.batch()
  for (const id of choice.dropped) batch.del('checkpoint', id)
  // remembered, so verify does not take these gaps for lost checkpoints (fs/maint/losses.ts)
  if (choice.dropped.length > 0) batch.put('meta', META_GC_REMOVED, addRanges(asRanges(await db.get('meta', META_GC_REMOVED)), choice.dropped))
  const rewritten: CheckpointRecord[] = []
  for (const [id, parent] of choice.reparent) {
    const c = { ...gens.checkpoints.get(id)!, parent }
    rewritten.push(c)
    batch.put('checkpoint', id, c)
  }
  for (const name of choice.branchesRemoved) batch.del('branch', name)
  for (const br of choice.branchesChanged) batch.put('branch', br.name, br)
  await batch.write({ sync: true })
  for (const id of choice.dropped) gens.forgetCheckpoint(id)
  for (const c of rewritten) gens.checkpoints.set(c.id, c)
  for (const name of choice.branchesRemoved) gens.branches.delete(name)
  for (const br of choice.branchesChanged) gens.branches.set(br.name, br)
}

/** Blocks of the running workspace's unsaved records, of files unlinked while open, and of old incarnations a restore left open (issue 13). O(unsaved). */
function unsavedBlocks (ws: Workspace): Set<BlockId> {
  const out = new Set<BlockId>()
  const add = (r: InodeRecord | null): void => { for (const b of r?.blocks ?? []) out.add(b) }
  for (const r of ws.unsavedRecords().values()) add(r)
  for (const r of ws.orphanRecords()) add(r)
  for (const r of ws.retainedRecords()) add(r)
  return out
}

/** Reachable node and record ids, block ids, and the sessions of lower references, from persisted roots and an in-memory table. */
async function mark (db: StoreDb, roots: number[], liveRoot: number, liveTable: TableNode | undefined): Promise<{ nodes: Set<number>, blocks: Set<BlockId>, sessions: Set<number> }> {
  const nodes = new Set<number>()
  const blocks = new Set<BlockId>()
  const sessions = new Set<number>()
  const addRecord = (r: InodeRecord): void => { for (const b of r.blocks ?? []) blocks.add(b); if (r.lower) sessions.add(r.lower.s) }
  const byId = async (id: number, level: number): Promise<void> => {
    if (id === 0 || nodes.has(id)) return
    nodes.add(id)
    const v = await db.get<any>('node', id)
    if (!v) return // missing: verify reports it; nothing below it can be marked
    if (level === 4) {
      for (const b of Array.isArray(v.blocks) ? v.blocks : []) if (b > 0) blocks.add(b) // persisted form: b < 0 is a run of holes
      if (typeof v.lower?.s === 'number') sessions.add(v.lower.s)
      return
    }
    for (const [, child] of v.k as [number, number][]) await byId(child, level + 1)
  }
  const inMemory = async (n: TableNode): Promise<void> => {
    if (n.id !== 0) { await byId(n.id, n.level); return }
    for (const c of n.kids) {
      if (c === undefined) continue
      if (typeof c === 'number') await byId(c, n.level + 1)
      else if (c instanceof TableNode) await inMemory(c)
      else { if (recordId(c) !== 0) nodes.add(recordId(c)); addRecord(c) }
    }
  }
  for (const r of roots) await byId(r, 0)
  await byId(liveRoot, 0)
  if (liveTable) await inMemory(liveTable)
  return { nodes, blocks, sessions }
}

/** Deletes the records, SWEEP_BATCH per batch (the last with sync); `progress` gets the count deleted so far after each batch. */
async function deleteAll (db: StoreDb, kind: 'node' | 'block' | 'context' | 'hist', keys: Array<number | string>, progress?: (n: number) => void): Promise<void> {
  for (let i = 0; i < keys.length; i += SWEEP_BATCH) {
    const batch = db.batch()
    for (const k of keys.slice(i, i + SWEEP_BATCH)) batch.del(kind, k)
    await batch.write({ sync: i + SWEEP_BATCH >= keys.length })
    progress?.(Math.min(keys.length, i + SWEEP_BATCH))
  }
}

/**
 * Deletes packs with no live block and compacts those with
 * COMPACT_DEAD_RATIO dead bytes, pack by pack. Returns the pack bytes it
 * returned: the deleted packs' bytes less the copies it wrote.
 */
async function compact (db: StoreDb, blocks: BlockStore, report: GcReport): Promise<number> {
  let freed = 0
  let copied = 0
  const packs = blocks.packFiles
  const sizes = packs.listPacks()
  const live = new Map<PackId, { bytes: number, ids: Array<[BlockId, number]> }>()
  for (const [id, loc] of blocks.locations()) {
    let x = live.get(loc.pack)
    if (!x) { x = { bytes: 0, ids: [] }; live.set(loc.pack, x) }
    x.bytes += RECORD_HEADER_SIZE + loc.length
    x.ids.push([id, loc.offset])
  }
  const pending = blocks.pendingIds()
  const pendingPacks = new Set<PackId>()
  for (const [id, loc] of blocks.locations()) if (pending.has(id)) pendingPacks.add(loc.pack)
  // the index on disk is the truth about what points into a pack: a pack is
  // deleted only when every record pointing into it is one memory knows
  // (and so was copied)
  const unknownOnDisk = new Map<PackId, number>()
  for await (const { key, value } of db.iterate<{ pack: number }>('block')) {
    if (!blocks.has(parseInt(key, 16))) unknownOnDisk.set(value.pack, (unknownOnDisk.get(value.pack) ?? 0) + 1)
  }
  const empty: PackId[] = []
  for (const [pack, size] of [...sizes].sort((a, b) => a[0] - b[0])) {
    if (packs.isWriting(pack) || pendingPacks.has(pack)) continue
    const stray = unknownOnDisk.get(pack)
    if (stray) { report.packs.notCompacted.push({ pack, reason: `${stray} index records this daemon does not know point into it; run rewindfs gc again after the next mount` }); continue }
    const x = live.get(pack)
    if (!x) { empty.push(pack); continue }
    const dead = size - PACK_HEADER_SIZE - x.bytes
    if (dead < COMPACT_DEAD_RATIO * size) continue
    if (blocks.spaceAboveReserve() < x.bytes) { report.packs.notCompacted.push({ pack, reason: `not enough free space to copy its ${x.bytes} live bytes` }); continue }
    const ids = x.ids.sort((a, b) => a[1] - b[1]).map(([id]) => id)
    const { copies, failed } = await blocks.copyBlocks(ids)
    for (const loc of copies.values()) copied += RECORD_HEADER_SIZE + loc.length
    if (copies.size > 0) {
      const batch = db.batch()
      for (const [id, loc] of copies) batch.put('block', id, blocks.relocationRecord(id, loc))
      await batch.write({ sync: true })
      blocks.moved(copies)
    }
    if (failed.length > 0) {
      report.packs.notCompacted.push({ pack, reason: `${failed.length} of its blocks fail their hash or cannot be read (kept where they are; run rewindfs verify)` })
      continue
    }
    freed += await packs.deletePacks([pack])
    report.packs.compacted++
  }
  if (empty.length > 0) {
    freed += await packs.deletePacks(empty)
    report.packs.deleted += empty.length
  }
  return freed - copied
}

function packBytes (blocks: BlockStore): number {
  let n = 0
  for (const size of blocks.packFiles.listPacks().values()) n += size
  return n
}

/** Bytes of the files directly in `dir` (LevelDB keeps no subdirectories). */
function dirBytes (dir: string): number {
  let n = 0
  try {
    for (const name of fs.readdirSync(dir)) {
      try { n += fs.statSync(path.join(dir, name)).size } catch {}
    }
  } catch {}
  return n
}

/** Why gc could not run on a stopped store. */
export class GcError extends Error {
  constructor (message: string, readonly code: 'E_NO_STORE' | 'E_LOCKED' | 'E_OPEN') { super(message) }
}

/**
 * Garbage collection of a stopped store (no daemon): opens it, runs
 * `collectGarbage`, closes it. Throws GcError when there is no store at
 * `storeDir`, when a daemon holds it (then ask the daemon: `gc` op), or when
 * it cannot be opened (a damaged store: run `rewindfs verify --repair`).
 */
export async function gcStore (storeDir: string, policy: Partial<GcPolicy> = {}): Promise<GcReport> {
  const store = path.resolve(storeDir)
  if (!fs.existsSync(path.join(store, 'meta'))) throw new GcError(`there is no rewindfs store at ${store} (no meta/ directory)`, 'E_NO_STORE')
  const { StoreDb } = await import('../../store/db.js')
  const { BlockStore } = await import('../../store/blocks.js')
  const { Generations } = await import('../history/generations.js')
  let db: StoreDb
  try { db = await StoreDb.open(store) } catch (e: any) {
    if (e?.code === 'E_LOCKED') throw new GcError(`the store ${store} is held by a running daemon: rewindfs gc asks that daemon when run inside its workspace (or with -w DIR)`, 'E_LOCKED')
    throw new GcError(`cannot open the store ${store}: ${e.message}`, 'E_OPEN')
  }
  try {
    let blocks: BlockStore
    try { blocks = await BlockStore.open(store, db) } catch (e: any) { throw new GcError(`cannot open the store ${store}: ${e.message}`, 'E_OPEN') }
    try {
      const gens = await Generations.open(db, blocks)
      return await collectGarbage({ db, blocks, gens, storeDir: store }, policy)
    } finally {
      blocks.close()
    }
  } finally {
    await db.close()
  }
}
