/**
 * Per-path history (issue 16): the checkpoints at which a path's content,
 * attributes or type changed, newest first. Each checkpoint is compared
 * with its parent (the previous checkpoint on its lineage), so a change
 * shows at the checkpoint that ends the segment that made it.
 *
 * A path is followed by name: a rename shows as `deleted` (with `to`, the
 * inode's path at the checkpoint) at the old path and `added` (with `from`)
 * at the new one; the store knows a rename by the inode number, which a
 * rename keeps. For a directory, a change below it (an inode below it that
 * differs between the two checkpoints) shows as `modified` with `below`,
 * the number of such inodes.
 *
 * Which checkpoints are examined: with the per-path history index (store
 * format 5, path-index.ts), only those the index names for the path (its
 * own changes, changes below it, and changes that move an ancestor) and
 * those it does not cover (the first checkpoint, one whose parent gc
 * replaced): O(depth) index ranges plus the cost below per examined
 * checkpoint, independent of the number of checkpoints. Without it
 * (`index: false`, the walk kept for tests and the benchmark) every
 * checkpoint of the lineage is examined.
 *
 * Cost per checkpoint examined: the path is resolved in its table and its parent's (O(depth)
 * record lookups each, one table shared by consecutive checkpoints; a
 * lookup not in memory is ≤ 4 store reads), the two records compared
 * (equal persisted ids: unchanged, no bytes read; otherwise sameContent,
 * which walks block lists), and for a directory the differing inodes of
 * the two tables are loaded and walked up to the directory (O(changed
 * inodes × depth)). So O(checkpoints × depth) for a file, independent of
 * the workspace size. bench/history.ts measures it.
 */
import type { CheckpointId, Ino } from '../../base/types.js'
import { type InodeRecord, ROOT_INO, isDir, typeName } from '../inode.js'
import { type TableNode, differences, loadDifferences, recordId } from '../itable.js'
import type { Workspace } from '../workspace.js'
import { TreeView } from '../tree.js'
import type { PathHistoryEntry } from '../../proto/messages.js'
import type { History } from './history.js'
import { sameContent } from './same-content.js'
import { sameMeta } from './diff.js'
import { lineage } from './undo.js'
import { candidates, covered } from './path-index.js'

/**
 * Options of pathHistory: `all` examines every checkpoint (every branch),
 * else the current lineage; `limit`: most entries returned; `meta`: add
 * each checkpoint's segment metadata; `index: false` ignores the per-path
 * history index and examines every checkpoint (the walk: tests compare the
 * two, the benchmark times both).
 */
export interface PathHistoryOptions { all?: boolean, limit?: number, meta?: boolean, index?: boolean }

/**
 * The changes of `path` (workspace-relative, normalised; '' the root) at
 * each checkpoint, newest first (see the module comment). Unknown
 * checkpoints in the lineage are skipped (removed by gc).
 */
export async function pathHistory (g: History, ws: Workspace, path: string, o: PathHistoryOptions = {}): Promise<PathHistoryEntry[]> {
  const ids = o.all === true ? [...g.checkpoints.keys()].sort((a, b) => b - a) : lineage(g)
  const limit = o.limit ?? Number.MAX_SAFE_INTEGER
  const named = o.index === false ? null : await candidates(g, path)
  const out: PathHistoryEntry[] = []
  const resolved = new Map<CheckpointId, InodeRecord | null>()
  const recordAt = async (id: CheckpointId, t: TableNode): Promise<InodeRecord | null> => {
    if (resolved.has(id)) return resolved.get(id)!
    const r = await resolveIn(g, ws, t, path)
    resolved.set(id, r)
    if (resolved.size > 4) resolved.delete(resolved.keys().next().value!) // consecutive checkpoints share one
    return r
  }
  for (const id of ids) {
    if (out.length >= limit) break
    const cp = g.checkpoints.get(id)
    if (!cp) continue
    if (named !== null && !named.has(id) && covered(g, cp)) continue // the index: nothing there can have changed the path
    const tc = await g.tableOf(id)
    const y = await recordAt(id, tc)
    const parent = cp.parent !== null && g.checkpoints.has(cp.parent) ? cp.parent : null
    const tp = parent === null ? null : await g.tableOf(parent)
    const x = parent === null ? null : await recordAt(parent, tp!)
    const e = await compare(g, ws, tp, tc, x, y)
    if (e === null) continue
    out.push({ checkpoint: id, parent, branch: cp.branch, time: cp.time, label: cp.label, ...e, ...(o.meta === true ? { meta: cp.meta ?? null, calls: cp.calls ?? null } : {}) })
  }
  return out
}

type Change = Omit<PathHistoryEntry, 'checkpoint' | 'parent' | 'branch' | 'time' | 'label'>

/** What changed from record x (in tp) to record y (in tc) at the path; null: nothing. */
async function compare (g: History, ws: Workspace, tp: TableNode | null, tc: TableNode, x: InodeRecord | null, y: InodeRecord | null): Promise<Change | null> {
  if (x === null && y === null) return null
  const size = (r: InodeRecord): number => isDir(r) ? 0 : r.size
  if (x === null) {
    const from = tp !== null && y!.ino !== 0 ? await pathOfIno(g, tp, y!.ino) : null
    return { change: 'added', type: typeName(y!.mode), size: size(y!), sizeBefore: null, ...(from !== null ? { from } : {}) }
  }
  if (y === null) {
    const to = x.ino !== 0 ? await pathOfIno(g, tc, x.ino) : null
    return { change: 'deleted', type: null, size: null, sizeBefore: size(x), ...(to !== null ? { to } : {}) }
  }
  if ((x.mode & 0o170000) !== (y.mode & 0o170000)) return { change: 'type', type: typeName(y.mode), size: size(y), sizeBefore: size(x) }
  const same = x === y || (recordId(x) !== 0 && recordId(x) === recordId(y))
  if (!isDir(y)) {
    if (same) return null
    if (!sameContent(ws, x, y, false, false)) return { change: 'modified', type: typeName(y.mode), size: size(y), sizeBefore: size(x) }
    if (!sameMeta(x, y)) return { change: 'meta', type: typeName(y.mode), size: size(y), sizeBefore: size(x) }
    return null
  }
  // a directory: its own attributes, and the inodes below it
  const below = tp === null ? 0 : await changedBelow(g, tp, tc, x.ino, y.ino)
  if (below > 0) return { change: 'modified', type: 'dir', size: 0, sizeBefore: 0, below }
  if (!same && !sameMeta(x, y)) return { change: 'meta', type: 'dir', size: 0, sizeBefore: 0 }
  return null
}

/** Inodes that differ between tp and tc and lie below directory ino dp (in tp) or dc (in tc). O(changed × depth). */
async function changedBelow (g: History, tp: TableNode, tc: TableNode, dp: Ino, dc: Ino): Promise<number> {
  if (tp === tc) return 0
  await loadDifferences(g, tp, tc, g.nodes, g.records)
  await loadDifferences(g, tc, tp, g.nodes, g.records)
  let n = 0
  for (const ino of differences(tp, tc)) {
    if (ino === dp || ino === dc) continue
    if (await under(g, tc, ino, dc) || await under(g, tp, ino, dp)) n++
  }
  return n
}

/** True when inode `ino` of table t lies below directory `dir` (by first names). */
async function under (g: History, t: TableNode, ino: Ino, dir: Ino): Promise<boolean> {
  if (dir === 0) return false
  let r = await g.recordIn(t, ino)
  for (let depth = 0; r && r.links.length > 0 && depth < 4096; depth++) {
    const parent = r.links[0][0]
    if (parent === dir) return true
    if (parent === ROOT_INO) return dir === ROOT_INO
    r = await g.recordIn(t, parent)
  }
  return false
}

/** The path ('a/b') of inode `ino` in table t by first names, or null when it is not there or unreachable. */
async function pathOfIno (g: History, t: TableNode, ino: Ino): Promise<string | null> {
  const parts: string[] = []
  let r = await g.recordIn(t, ino)
  if (!r) return null
  for (let depth = 0; r.ino !== ROOT_INO; depth++) {
    if (r.links.length === 0 || depth > 4096) return null
    parts.push(r.links[0][1])
    const p: InodeRecord | undefined = await g.recordIn(t, r.links[0][0])
    if (!p) return null
    r = p
  }
  return parts.reverse().join('/')
}

/**
 * The record at `path` in table t, or null: O(depth) lookups by entry
 * name; a directory still lower (never listed) is listed from the lower
 * layer through TreeView (its children report ino 0).
 */
async function resolveIn (g: History, ws: Workspace, t: TableNode, path: string): Promise<InodeRecord | null> {
  let cur = await g.recordIn(t, ROOT_INO)
  if (!cur) return null
  for (const name of path.split('/')) {
    if (name === '') continue
    if (!isDir(cur)) return null
    let next: InodeRecord | undefined
    if (cur.entries) {
      const ino = cur.entries.get(name)
      next = ino === undefined ? undefined : await g.recordIn(t, ino)
    } else next = (await new TreeView(g, ws, t).children(cur)).get(name)
    if (!next) return null
    cur = next
  }
  return cur
}
