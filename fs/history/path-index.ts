/**
 * The per-path history index (store format 5, FORMAT.md "History index"):
 * for each checkpoint, the paths whose inode changed in the segment that
 * ends there, so that `history PATH` (path-history.ts) compares the path
 * only at the checkpoints that can have changed it instead of at every
 * checkpoint of the lineage.
 *
 * Keys (kind `hist`, one LevelDB key each, value 0), for a checkpoint C
 * compared with the table of the parent it was indexed against
 * (`CheckpointRecord.hist`), for every inode whose record differs between
 * the two tables, and for every name of that inode in either table (its
 * links; a directory's path by first names, as the walk resolves it):
 *
 *   `p:<path>\0<C>`  the inode at <path> changed (content, attributes,
 *                    entries, names, appeared or disappeared);
 *   `s:<path>\0<C>`  the same, when the inode appeared, disappeared, took
 *                    or lost names, or changed type, or is a directory
 *                    whose listing is still lower on either side (its
 *                    children are read from the lower layer there, from
 *                    its entries on the other side): a change that moves
 *                    what every path below <path> resolves to;
 *   `b:<dir>\0<C>`   for every proper ancestor directory of <path> ('' the
 *                    root): something below <dir> changed;
 *   `u:\0<C>`        a name of a changed inode could not be placed (a lower
 *                    hard link with names not listed yet, `unseen`, or a
 *                    parent missing): C is examined for every path.
 *
 * <C> is 16 hex digits (store/db.ts intKey), so one path's keys are one
 * range, oldest first. Why this is exact (candidates ⊇ the checkpoints at
 * which the walk reports a change), for PATH = n1/…/nk: the walk resolves
 * PATH by entry names from the root in the parent's table and in C's. If
 * no inode on that chain in either table appeared, disappeared, changed
 * names or type, or was a directory listed from the lower layer (no `s:`
 * key at a proper ancestor, the root included), each step resolves to
 * the same inode in both, so PATH names the same inode in both; if that
 * inode's record is unchanged (no `p:` key at PATH) the walk finds the same
 * record; and for a directory, an inode below it that differs is a changed
 * inode whose path lies below PATH in one of the tables (a `b:` key at
 * PATH). A checkpoint the index does not cover (the first, one whose
 * parent garbage collection replaced or removed, one written before format
 * 5 and not yet backfilled) is always examined.
 *
 * Cost at a mark: O(changed inodes × (names + depth)) lookups, nearly all
 * in memory (the parent is the head, whose table is loaded where it
 * differs), and that many keys in the mark's one batch; no extra fsync.
 * Cost of a query: one LevelDB range per ancestor of PATH plus two for
 * PATH, O(keys found).
 */
import type { CheckpointId, Ino } from '../../base/types.js'
import { type InodeRecord, ROOT_INO, S_IFMT, S_IFDIR } from '../inode.js'
import { type TableNode, differences, loadDifferences } from '../itable.js'
import { type StoreBatch, intKey, parseIntKey } from '../../store/db.js'
import type { CheckpointRecord } from './records.js'
import type { History } from './history.js'

/** The tags of the index keys (see the module comment). */
type Tag = 'p' | 's' | 'b' | 'u'

/** The key (inside kind `hist`) of `tag` at `path` for checkpoint `id`. */
export function histKey (tag: Tag, path: string, id: CheckpointId): string {
  return `${tag}:${path}\u0000${intKey(id)}`
}

/**
 * True when the index covers checkpoint `cp`: it was indexed against the
 * parent it has now, and that parent still exists. An uncovered checkpoint
 * is examined by every query.
 */
export function covered (g: History, cp: CheckpointRecord): boolean {
  return cp.parent !== null && cp.hist === cp.parent && g.checkpoints.has(cp.parent)
}

/**
 * The index keys (without the checkpoint) of the segment from table `tp`
 * (the parent's) to table `tc`: a set of `tag:path` strings. Loads both
 * tables where they differ. O(changed inodes × (names + depth)).
 */
export async function segmentKeys (g: History, tp: TableNode, tc: TableNode): Promise<Set<string>> {
  await loadDifferences(g, tc, tp, g.nodes, g.records)
  await loadDifferences(g, tp, tc, g.nodes, g.records)
  const out = new Set<string>()
  const dirPaths = new Map<TableNode, Map<Ino, string | null>>([[tp, new Map()], [tc, new Map()]])
  for (const ino of differences(tp, tc)) {
    const x = await g.recordIn(tp, ino)
    const y = await g.recordIn(tc, ino)
    // a directory whose listing is (or was) still lower: what its children
    // resolve to is read from the lower layer on one side, the entries on
    // the other, so every path below it may change
    const lowerDir = (r: InodeRecord | undefined): boolean => r !== undefined && (r.mode & S_IFMT) === S_IFDIR && r.entries === undefined
    const self = x === undefined || y === undefined || (x.mode & S_IFMT) !== (y.mode & S_IFMT) || !sameLinks(x, y) || lowerDir(x) || lowerDir(y)
    for (const [t, r] of [[tp, x], [tc, y]] as const) {
      if (r === undefined) continue
      if ((r.unseen ?? 0) > 0) out.add('u:')
      if (r.ino === ROOT_INO) { out.add('p:'); if (self) out.add('s:'); continue }
      for (const [parent, name] of r.links) {
        const dir = await dirPath(g, t, parent, dirPaths.get(t)!)
        if (dir === null) { out.add('u:'); continue }
        const p = dir === '' ? name : `${dir}/${name}`
        out.add(`p:${p}`)
        if (self) out.add(`s:${p}`)
        for (let i = p.lastIndexOf('/'); ; i = p.lastIndexOf('/', i - 1)) {
          out.add(`b:${i < 0 ? '' : p.slice(0, i)}`)
          if (i < 0) break
        }
      }
    }
  }
  return out
}

/** Queues the keys of `keys` (segmentKeys) for checkpoint `id` in `batch`. */
export function putSegmentKeys (batch: StoreBatch, id: CheckpointId, keys: Iterable<string>): void {
  const suffix = `\u0000${intKey(id)}`
  for (const k of keys) batch.put('hist', k + suffix, 0)
}

/**
 * The checkpoints the index names for `path` (workspace-relative,
 * normalised, '' the root): every checkpoint that can have changed what
 * the path holds (see the module comment). Uncovered checkpoints are not
 * in it: the caller examines those anyway. O(depth) ranges.
 */
export async function candidates (g: History, path: string): Promise<Set<CheckpointId>> {
  const out = new Set<CheckpointId>()
  const range = async (tag: Tag, p: string): Promise<void> => {
    const base = `${tag}:${p}\u0000`
    for await (const k of g.db.keys('hist', { gte: base, lt: `${tag}:${p}\u0001` })) out.add(parseIntKey(k.slice(base.length)))
  }
  await range('u', '')
  await range('p', path)
  await range('b', path)
  const parts = path === '' ? [] : path.split('/')
  for (let i = 0; i < parts.length; i++) await range('s', parts.slice(0, i).join('/'))
  return out
}

/**
 * Indexes every checkpoint the index does not cover whose parent exists
 * (format-4 checkpoints after the migration to 5, checkpoints garbage
 * collection gave a new parent), oldest first, each in one batch with its
 * record's `hist` set to the parent.
 * Idempotent: a kill in between leaves the rest uncovered, and the next
 * open goes on (the per-checkpoint `hist` field is the only state).
 * Batches are written without fsync: a lost one leaves its checkpoint
 * uncovered, which is exact, only slower. O(changed inodes over those
 * segments) reads and keys.
 * Returns how many checkpoints it indexed.
 */
export async function backfillIndex (g: History): Promise<number> {
  const todo = [...g.checkpoints.values()].filter(c => c.parent !== null && g.checkpoints.has(c.parent) && c.hist !== c.parent).sort((a, b) => a.id - b.id)
  for (const cp of todo) {
    const parent = cp.parent!
    const keys = await segmentKeys(g, await g.tableOf(parent), await g.tableOf(cp.id))
    const rec: CheckpointRecord = { ...cp, hist: parent }
    const batch = g.db.batch()
    putSegmentKeys(batch, cp.id, keys)
    batch.put('checkpoint', cp.id, rec)
    await batch.write({ sync: false })
    g.checkpoints.set(cp.id, rec)
  }
  return todo.length
}

/** The keys of the segment ending at a new checkpoint whose parent is `parent` (null: none, the first). */
export async function keysAtMark (g: History, parent: CheckpointId | null, tc: TableNode): Promise<Set<string>> {
  if (parent === null || !g.checkpoints.has(parent)) return new Set()
  return await segmentKeys(g, await g.tableOf(parent), tc)
}

function sameLinks (x: InodeRecord, y: InodeRecord): boolean {
  if (x.links.length !== y.links.length) return false
  for (let i = 0; i < x.links.length; i++) {
    if (x.links[i]![0] !== y.links[i]![0] || x.links[i]![1] !== y.links[i]![1]) return false
  }
  return true
}

/** The path of directory `ino` in table t by first names ('' the root), or null when it cannot be placed. Memoised per table in `memo`. */
async function dirPath (g: History, t: TableNode, ino: Ino, memo: Map<Ino, string | null>): Promise<string | null> {
  if (ino === ROOT_INO) return ''
  const hit = memo.get(ino)
  if (hit !== undefined) return hit
  let out: string | null = null
  const r = await g.recordIn(t, ino)
  if (r !== undefined && r.links.length > 0 && memo.size < 1e6) {
    memo.set(ino, null) // a cycle resolves to null
    const up = await dirPath(g, t, r.links[0]![0], memo)
    if (up !== null) out = up === '' ? r.links[0]![1] : `${up}/${r.links[0]![1]}`
  }
  memo.set(ino, out)
  return out
}

