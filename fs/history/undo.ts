/**
 * Undo of one segment (issue 16): reverts what the segment ending at
 * checkpoint N changed (diff from N's parent to N), where no later segment
 * on the current lineage (nor the unsaved changes) touched the same paths.
 * Either every path of the segment can be reverted and all are, as one
 * selective restore from N's parent (selective.ts: a new checkpoint on the
 * current branch, unsaved changes saved first, itself undoable), or nothing
 * is applied and the conflicts are listed.
 *
 * Conflict rule, per path P the segment changed:
 *  - a later change at P, or below P, conflicts (reverting P would drop it);
 *  - a later change of an ancestor directory of P conflicts unless it is an
 *    attributes-only change ('meta': a directory's mtime moves whenever an
 *    entry in it is added or removed);
 *  - a directory whose own attributes the segment changed is reverted
 *    attributes-only (its entries are the paths below it, judged each on
 *    their own); when a later segment changed its attributes too, they are
 *    left as they are and the directory is listed in `skipped`.
 *
 * Cost: one diff per later segment on the lineage (each O(changed inodes)
 * of that segment, diff.ts) plus the diff of the undone segment and the
 * selective restore (O(paths reverted)).
 */
import type { CheckpointId } from '../../base/types.js'
import { isDir } from '../inode.js'
import type { Workspace } from '../workspace.js'
import type { InvalidationPlan } from '../api.js'
import { TreeView } from '../tree.js'
import type { DiffEntry, UndoInfo, UndoConflict } from '../../proto/messages.js'
import { ApiError } from '../../proto/errors.js'
import type { History } from './history.js'
import type { RestorePath } from './selective.js'
import { diffCheckpoints } from './diff.js'

/**
 * The checkpoints on the current lineage (parent links from the head),
 * newest first. O(lineage length).
 */
export function lineage (g: History): CheckpointId[] {
  const out: CheckpointId[] = []
  const seen = new Set<CheckpointId>()
  for (let id = g.state.head; id !== null && !seen.has(id);) {
    const cp = g.checkpoints.get(id)
    if (!cp) break
    seen.add(id)
    out.push(id)
    id = cp.parent
  }
  return out
}

/**
 * Undoes the segment ending at checkpoint `id` (see the module comment).
 * `restore` runs the selective restore (Generations.restorePaths). Unknown
 * id → E_UNKNOWN_CHECKPOINT; a first checkpoint (no parent) or one not on
 * the current lineage → E_BAD_REQUEST; nothing changed then.
 */
export async function undoSegment (g: History, ws: Workspace, id: CheckpointId, dryRun: boolean,
  restore: (from: CheckpointId, items: RestorePath[], dryRun: boolean, label: string) => Promise<UndoInfo['restore']>): Promise<UndoInfo> {
  const cp = g.checkpoint(id)
  if (cp.parent === null) throw new ApiError('E_BAD_REQUEST', `undo ${id}: checkpoint ${id} is the first checkpoint, so there is no segment before it to undo (restore paths from it instead: rewindfs restore ${id} -- PATH)`, { field: 'checkpoint' })
  const line = lineage(g)
  const at = line.indexOf(id)
  if (at < 0) throw new ApiError('E_BAD_REQUEST', `undo ${id}: checkpoint ${id} is not on the current lineage (head #${g.state.head}); undo reverts a segment the workspace came through — restore its paths instead (rewindfs restore ID -- PATH)`, { field: 'checkpoint' })
  const segment = await diffCheckpoints(g, ws, cp.parent, id)
  // every later change: the later segments on the lineage, then the unsaved changes
  const later: Array<DiffEntry & { by: CheckpointId | null }> = []
  for (let i = at - 1; i >= 0; i--) {
    const c = g.checkpoint(line[i])
    if (c.parent === null) continue
    for (const e of await diffCheckpoints(g, ws, c.parent, c.id)) later.push({ ...e, by: c.id })
  }
  if (g.state.head !== null) for (const e of await diffCheckpoints(g, ws, g.state.head)) later.push({ ...e, by: null })
  const after = new TreeView(g, ws, await g.tableOf(id))
  const conflicts: UndoConflict[] = []
  const skipped: string[] = []
  const items: RestorePath[] = []
  for (const e of segment) {
    const p = e.path
    const rec = e.change === 'meta' ? await after.at(p === '/' ? '' : p.slice(1)) : null
    const dirMeta = rec !== null && isDir(rec)
    if (dirMeta) {
      const hit = later.find(q => q.path === p)
      if (hit && hit.change === 'meta') skipped.push(p)
      else if (hit) conflicts.push({ path: p, change: e.change, by: hit.by, laterPath: hit.path, laterChange: hit.change })
      else items.push({ path: p === '/' ? '' : p.slice(1), attrsOnly: true })
      continue
    }
    const hit = later.find(q => q.path === p || q.path.startsWith(p + '/') || p === '/' || (p.startsWith(q.path + '/') && q.change !== 'meta'))
    if (hit) conflicts.push({ path: p, change: e.change, by: hit.by, laterPath: hit.path, laterChange: hit.change })
    else items.push({ path: p.slice(1) })
  }
  const base = { checkpoint: id, from: cp.parent, segment, conflicts, skipped }
  if (conflicts.length > 0) return { ...base, applied: false, dryRun, restore: null }
  if (items.length === 0) return { ...base, applied: false, dryRun, restore: null }
  const r = await restore(cp.parent, items, dryRun, `undo ${id}`)
  return { ...base, applied: !dryRun && r !== null && r.result !== null, dryRun, restore: r }
}
