/**
 * Checkpoint: sealing the live generation into a checkpoint record, and
 * fsync: making the live state durable without one.
 *
 * Commit order of a checkpoint (store/FORMAT.md "Read and write ordering"):
 * the cut is taken synchronously on the JavaScript thread (every FUSE
 * operation that completed is in, none that starts later is) → pack bytes →
 * fsync → one LevelDB batch (block index, inode table nodes and records,
 * context, checkpoint, branch, state) written with sync → acknowledge.
 *
 * Cost: O(inodes and blocks dirtied since the last checkpoint), plus ≤ 4
 * table nodes written per changed inode, plus the per-path history index
 * keys of the changed inodes (path-index.ts: O(changed × (names + depth)));
 * unchanged inodes are never looked at. When tool calls were open in the
 * segment, their attribution (attribution.ts: one diff of the segment).
 */
import { createHash } from 'node:crypto'
import type { InodeRecord } from '../inode.js'
import { type TableNode, persist, unpersist } from '../itable.js'
import type { Workspace } from '../workspace.js'
import { packr } from '../../store/db.js'
import type { CheckpointInfo } from '../../proto/messages.js'
import { type CheckpointRecord, checkpointInfo } from './records.js'
import type { History } from './history.js'
import { keysAtMark, putSegmentKeys } from './path-index.js'
import { attributeSegment } from './attribution.js'

/** What a mark stores with its checkpoint: a label, the agent's context (any msgpack value), segment metadata. */
export interface MarkRequest { label?: string, context?: unknown, meta?: unknown }

/**
 * Seals the live generation of `ws` as a new checkpoint on the current
 * branch. `context` is stored content-addressed (sha256 of its msgpack
 * bytes). Resolves once the checkpoint is durable. Call only inside
 * `g.exclusive` (Generations.mark does). Throws E_NO_SPACE (store/errors)
 * when sealing or the batch fails for lack of space; then the checkpoint
 * never existed and the next mark writes everything again.
 */
export async function sealCheckpoint (g: History, ws: Workspace, req: MarkRequest): Promise<CheckpointInfo> {
  const t0 = performance.now()
  // --- the cut: synchronous, nothing else runs on this thread meanwhile
  ws.sealAll() // may fail (E_NO_SPACE): then nothing but some sealed blocks changed
  g.inodes = g.liveInodes(ws)
  const { table, dirtyBytes } = ws.fold()
  // the tool calls' changes up to the cut (attribution.ts); null when no call was open in the segment
  const taken = g.calls.take()
  // the fold above keeps the live state as it is; what follows is undone if it is not written
  const before = { head: g.state.head, generation: g.state.generation, nextCheckpoint: g.state.nextCheckpoint, live: g.state.live, headRoot: g.headRoot }
  const br = g.branches.get(g.state.branch)!
  const brHead = br.head
  const assigned: Array<TableNode | InodeRecord> = []
  const batch = g.db.batch()
  const id = g.state.nextCheckpoint++
  try {
    const root = persist(table, g.sink(batch), assigned)
    const generation = g.state.generation
    g.state.generation = g.state.nextGeneration++
    let contextKey: string | null = null
    if (req.context !== undefined) {
      const bytes = packr.pack(req.context)
      contextKey = createHash('sha256').update(bytes).digest('hex')
      batch.put('context', contextKey, { v: req.context })
    }
    const cp: CheckpointRecord = {
      id, generation, root, label: req.label ?? null, time: Date.now(), branch: g.state.branch,
      parent: g.state.head, inodes: g.inodes, dirtyBytes, ms: 0, context: contextKey, meta: req.meta ?? null
    }
    g.state.head = id
    g.state.live = null
    br.head = id
    g.headRoot = root
    // --- durability: pack bytes, fsync, then the index batch; the
    // per-path history index of this segment (path-index.ts) is computed
    // while the packs are fsynced, and goes in the same batch
    // and so is the attribution to tool calls; its failure does not fail the mark (the record says why)
    const [histKeys, , calls] = await Promise.all([
      keysAtMark(g, before.head, table), g.blocks.sync(),
      taken === null ? null : attributeSegment(g, ws, before.head, table, taken).catch((e: Error) => ({ calls: [], error: e.message }))
    ])
    putSegmentKeys(batch, id, histKeys)
    if (calls !== null) cp.calls = calls
    if (before.head !== null && g.checkpoints.has(before.head)) cp.hist = before.head
    g.blocks.commitTo(batch)
    cp.ms = performance.now() - t0
    batch.put('checkpoint', id, cp)
    batch.put('branch', br.name, br)
    g.writeState(batch, ws)
    await batch.write({ sync: true })
    g.checkpoints.set(id, cp)
    g.remember(id, table)
    cp.ms = performance.now() - t0
    return checkpointInfo(cp)
  } catch (e) {
    // not written: the live state stays the folded table, unpersisted, so
    // the next mark or fsync writes it; the checkpoint never existed
    unpersist(assigned)
    if (taken !== null) g.calls.putBack(taken)
    Object.assign(g.state, { head: before.head, generation: before.generation, nextCheckpoint: before.nextCheckpoint, live: before.live })
    g.headRoot = before.headRoot
    br.head = brHead
    ws.unfoldBytes(dirtyBytes)
    throw e
  }
}

/**
 * fsync and fsyncdir: makes the whole live state durable without making a
 * checkpoint. The live generation's changes are folded into its base table
 * (the same consistent cut as a mark), pack bytes are fsynced and the table
 * is written with its root in `state.live`; a resume after a crash starts
 * from it. Call only inside `g.exclusive`. Cost: O(changes since the last
 * fold) plus ≤ 4 table nodes per changed inode.
 */
export async function syncLive (g: History, ws: Workspace): Promise<void> {
  ws.sealAll()
  if (ws.unsavedRecords().size === 0 && (g.state.live?.root === ws.base.id || g.baseIsHead(ws))) return
  g.inodes = g.liveInodes(ws)
  // fsync keeps counting written bytes toward the next checkpoint
  const { table, dirtyBytes } = ws.fold()
  ws.unfoldBytes(dirtyBytes)
  const live = g.state.live
  const assigned: Array<TableNode | InodeRecord> = []
  try {
    const batch = g.db.batch()
    const root = persist(table, g.sink(batch), assigned)
    g.state.live = { root, generation: g.state.generation }
    await g.blocks.sync()
    g.blocks.commitTo(batch)
    g.writeState(batch, ws)
    await batch.write({ sync: true })
  } catch (e) {
    unpersist(assigned) // the folded table stays live, unpersisted: the next fsync or mark writes it
    g.state.live = live
    throw e
  }
}
