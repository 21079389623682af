/**
 * Restore: makes the live workspace equal to a checkpoint and starts a new
 * branch from it (DESIGN.md "Generations"). Cost: O(inodes that differ)
 * store reads and kernel invalidations; unchanged inodes are never looked at.
 * After the swap, the changed paths are computed as diff lists them (the
 * reply's `changes`) and announced to watchers (announce.ts): O(changed
 * paths).
 */
import type { CheckpointId } from '../../base/types.js'
import { differences, loadDifferences } from '../itable.js'
import type { Workspace } from '../workspace.js'
import type { Invalidate } from '../api.js'
import type { RestoreInfo } from '../../proto/messages.js'
import type { History } from './history.js'
import { sealCheckpoint } from './checkpoint.js'
import { writeRestoreIntent } from './journal.js'
import { invalidationPlan } from './invalidation.js'
import { diffTables } from './diff.js'
import { announcementOf } from './announce.js'

/**
 * Makes the live workspace equal to checkpoint `id` and starts a new
 * branch from it. Unsaved changes are first sealed as a checkpoint on the
 * abandoned branch (label "before restore to N"), so nothing is lost.
 * Writes that complete while the restore waits (on its own store writes)
 * are sealed too, each round as one more such checkpoint on top of the
 * last: the reply names them all (`savedAll`, oldest first; `saved` is the
 * newest, which holds every change).
 * `invalidate` drops the kernel's caches named by the plan; the restore
 * resolves when it is done. Call only inside `g.exclusive` (Generations.restore
 * does); an unknown id throws ApiError E_UNKNOWN_CHECKPOINT before anything
 * changes.
 *
 * Journal: before anything changes, the restore's intent (`meta.restore`,
 * RestoreIntent) is written with sync; the swap's own record (new branch,
 * new head) deletes it. A daemon killed in between leaves the intent, and
 * the next start completes the restore (`completeInterruptedRestore`); one
 * killed before the intent was durable restarts from the state before the
 * restore. So an interrupted restore either completes or never happened,
 * and one that was acknowledged survives a crash.
 */
export async function restoreCheckpoint (g: History, ws: Workspace, id: CheckpointId, invalidate: Invalidate): Promise<Omit<RestoreInfo, 'recovery'>> {
  const t0 = performance.now()
  const label = `before restore to ${id}`
  // every "before restore" checkpoint this restore seals, oldest first (writes that land while it waits make more than one)
  const savedAll: CheckpointId[] = []
  if (g.unsaved(ws)) savedAll.push((await sealCheckpoint(g, ws, { label })).id)
  const cp = g.checkpoint(id)
  const target = await g.tableOf(id)
  await loadDifferences(g, ws.base, target, g.nodes, g.records)
  // FUSE writes may land during any await (mark0's fsync, store reads,
  // the journal write); seal them and reload until a check finds nothing
  // new, so the check and the swap have no await between them and no
  // completed write is dropped by swapTo. Each round is O(what changed
  // meanwhile).
  let journaled = false
  for (;;) {
    if (g.unsaved(ws)) {
      savedAll.push((await sealCheckpoint(g, ws, { label })).id)
      await loadDifferences(g, ws.base, target, g.nodes, g.records)
      continue
    }
    if (journaled) break
    await writeRestoreIntent(g, id)
    journaled = true
  }
  // --- from here synchronous until the swap
  // what is still dirty only lists lower directories (see unsaved): the swap drops those
  // records, and the kernel may hold their paths with their inode numbers
  const listed = [...ws.unsavedRecords().keys()]
  const before = ws.base
  const changed = differences(before, target)
  const plan = invalidationPlan(ws, target, changed, listed)
  ws.swapTo(target)
  g.inodes = cp.inodes
  g.switchToBranchFrom(cp)
  const batch = g.db.batch()
  batch.put('branch', g.state.branch, g.branches.get(g.state.branch)!)
  g.intentOpen = true
  g.writeState(batch, ws)
  // the intent is durable: the swap's record needs no fsync of its own (a
  // crash before it reaches the disk completes the restore at the next start)
  const committed = batch.write({ sync: false }).catch(() => {
    // written by the next mark, fsync or state save (writeState deletes the intent while it is open)
  })
  // the changed paths: as diff lists them (inodes are no measure across mount
  // sessions, where the same unchanged file has another inode in each)
  const diffed = diffTables(g, ws, before, target, false).then(d => d, () => null)
  const [, held, changes] = await Promise.all([committed, invalidate(plan), diffed])
  // watchers hear of it (announce.ts): after the kernel has dropped what the swap made stale
  if (changes !== null && changes.length > 0 && g.announce !== null) {
    const a = await announcementOf(g, ws, before, target, changes).catch(() => null)
    if (a !== null) await g.announce(a)
  }
  return { checkpoint: id, branch: g.state.branch, changed: changes?.length ?? changed.size, ms: performance.now() - t0, saved: savedAll.at(-1) ?? null, savedAll, ...(changes !== null ? { changes } : {}), ...(held ? { oldIncarnations: held } : {}) }
}
