/**
 * The inode table of one generation: a persistent (immutable, structurally
 * shared) radix tree from inode number to InodeRecord.
 *
 * Shape: 4 levels of 256-way nodes indexed by the bytes of the 32-bit ino,
 * most significant first; level-3 nodes hold records. A checkpoint builds a
 * new root by copying only the paths to changed inodes (O(changed × 4 × 256)
 * pointer copies), so consecutive generations share everything else. Two
 * tables are compared by walking only the nodes that differ (same object or
 * same persisted id ⇒ same subtree), which makes restore
 * O(inodes changed × depth), independent of the workspace size. This is the
 * path-copying technique of persistent data structures (Driscoll, Sarnak,
 * Sleator, Tarjan, "Making data structures persistent", 1989).
 *
 * Persisted form: node `N` → { l: level, k: [[slot, childId], ...] } where a
 * childId is a node id (levels 0-2) or a record id (level 3). Ids come from
 * one counter and are never reused, so equal ids mean equal content.
 */
import type { InodeRecord } from './inode.js'
import type { Ino } from '../base/types.js'

const LEVELS = 4

/** A child slot: loaded object, or only its persisted id (`number`) until loaded. */
type Child = TableNode | InodeRecord | number | undefined

/** One node of the table. `id` is 0 until the node is persisted. */
export class TableNode {
  id = 0
  constructor (readonly level: number, readonly kids: Child[] = new Array(256)) {}
}

/** Where persisted nodes and records come from when they are not in memory. */
export interface TableSource {
  /** persisted node by id: level and [slot, childId] pairs; missing → corruption (throws) */
  loadNode(id: number): Promise<{ l: number, k: [number, number][] }>
  /** persisted record by id; missing → corruption (throws) */
  loadRecord(id: number): Promise<InodeRecord>
}

/** Where new nodes and records go when a table is persisted. */
export interface TableSink {
  /** a fresh id, never used before */
  nextId(): number
  putNode(id: number, value: { l: number, k: [number, number][] }): void
  putRecord(id: number, record: InodeRecord): void
}

/** Persisted id of each record object (records themselves stay plain data). */
const recordIds = new WeakMap<InodeRecord, number>()

/** The persisted id of a record, or 0 when it has not been persisted. */
export function recordId (r: InodeRecord): number { return recordIds.get(r) ?? 0 }

function slot (ino: Ino, level: number): number {
  return (ino >>> (8 * (LEVELS - 1 - level))) & 255
}

/** An empty table. */
export function emptyTable (): TableNode { return new TableNode(0) }

/**
 * The record of `ino`, or undefined when absent. Synchronous: every node on
 * the path must be loaded (the live table always is); throws otherwise.
 */
export function lookup (root: TableNode, ino: Ino): InodeRecord | undefined {
  let n: TableNode = root
  for (let level = 0; level < LEVELS - 1; level++) {
    const c = n.kids[slot(ino, level)]
    if (c === undefined) return undefined
    if (!(c instanceof TableNode)) throw new Error(`inode table node for ino ${ino} is not loaded`)
    n = c
  }
  const r = n.kids[slot(ino, LEVELS - 1)]
  if (typeof r === 'number') throw new Error(`inode record ${ino} is not loaded`)
  return r as InodeRecord | undefined
}

/**
 * A new table equal to `root` with `changes` applied (record, or null to
 * remove). `root` is not modified; unchanged subtrees are shared.
 */
export function applyChanges (root: TableNode, changes: Map<Ino, InodeRecord | null>): TableNode {
  const fresh = new Set<TableNode>()
  const copy = (n: TableNode): TableNode => {
    if (fresh.has(n)) return n
    const c = new TableNode(n.level, n.kids.slice())
    fresh.add(c)
    return c
  }
  const top = copy(root)
  for (const [ino, rec] of changes) {
    let n = top
    for (let level = 0; level < LEVELS - 1; level++) {
      const s = slot(ino, level)
      let c = n.kids[s]
      if (c === undefined) {
        if (rec === null) { n = undefined as any; break }
        c = new TableNode(level + 1)
        fresh.add(c)
      } else if (!(c instanceof TableNode)) {
        throw new Error(`inode table node for ino ${ino} is not loaded`)
      } else {
        c = copy(c)
      }
      n.kids[s] = c
      n = c
    }
    if (n === undefined) continue
    n.kids[slot(ino, LEVELS - 1)] = rec === null ? undefined : rec
  }
  return top
}

function childId (c: Child): number {
  if (c === undefined) return 0
  if (typeof c === 'number') return c
  if (c instanceof TableNode) return c.id
  return recordId(c)
}

/**
 * Inode numbers whose records differ between two loaded tables. Visits only
 * nodes that differ. Both tables must be loaded where they differ (see
 * loadDifferences).
 */
export function differences (a: TableNode, b: TableNode, out: Set<Ino> = new Set()): Set<Ino> {
  const walk = (x: Child, y: Child, level: number, prefix: number): void => {
    if (x === y) return
    const ix = childId(x); const iy = childId(y)
    if (ix !== 0 && ix === iy) return
    if (level === LEVELS) { out.add(prefix >>> 0); return }
    if (typeof x === 'number' || typeof y === 'number') throw new Error('inode table difference over an unloaded node')
    const xn = x as TableNode | undefined; const yn = y as TableNode | undefined
    for (let s = 0; s < 256; s++) {
      const cx = xn?.kids[s]; const cy = yn?.kids[s]
      if (cx === undefined && cy === undefined) continue
      walk(cx, cy, level + 1, (prefix << 8) | s)
    }
  }
  walk(a, b, 0, 0)
  return out
}

/** Loads a persisted table root by id (only the root node; children stay ids until loadDifferences). */
export async function loadRoot (src: TableSource, id: number, cache: Map<number, TableNode>): Promise<TableNode> {
  return await loadNodeCached(src, id, cache)
}

async function loadNodeCached (src: TableSource, id: number, cache: Map<number, TableNode>): Promise<TableNode> {
  const hit = cache.get(id)
  if (hit) return hit
  const v = await src.loadNode(id)
  const n = new TableNode(v.l)
  for (const [s, cid] of v.k) n.kids[s] = cid
  n.id = id
  cache.set(id, n)
  return n
}

/**
 * Loads every node and record of `target` that differs from `base` (which is
 * loaded), so that differences(base, target) and lookups of the changed inos
 * in target work synchronously. Cost: O(differing nodes) reads.
 */
export async function loadDifferences (src: TableSource, base: TableNode | undefined, target: TableNode,
  nodes: Map<number, TableNode>, records: Map<number, InodeRecord>): Promise<void> {
  const walk = async (x: Child, y: TableNode, level: number): Promise<void> => {
    for (let s = 0; s < 256; s++) {
      let cy = y.kids[s]
      if (cy === undefined) continue
      const cx = x instanceof TableNode ? x.kids[s] : undefined
      const ix = childId(cx); const iy = childId(cy)
      if (cx === cy) continue
      if (iy !== 0 && ix === iy) {
        // Same persisted subtree: share base's loaded copy, so a target read
        // from the store (after a restart) is loaded wherever base is and can
        // become the live table (restore swaps to it; lookups are synchronous).
        // O(1) per differing parent; nothing below is visited.
        if (typeof cy === 'number' && typeof cx !== 'number') y.kids[s] = cx
        continue
      }
      if (typeof cy === 'number') {
        if (level === LEVELS - 1) {
          let r = records.get(cy)
          if (!r) { r = await src.loadRecord(cy); recordIds.set(r, cy); records.set(cy, r) }
          y.kids[s] = r
          continue
        }
        cy = await loadNodeCached(src, cy, nodes)
        y.kids[s] = cy
      }
      if (level < LEVELS - 1) await walk(cx, cy as TableNode, level + 1)
    }
  }
  await walk(base, target, 0)
}

/** Loads a whole table (start-up of the live workspace: O(inodes)). */
export async function loadAll (src: TableSource, root: TableNode, nodes: Map<number, TableNode>, records: Map<number, InodeRecord>): Promise<void> {
  await loadDifferences(src, undefined, root, nodes, records)
}

/**
 * Writes every not-yet-persisted node and record of `root` to `sink`,
 * assigning ids. Visits only unpersisted nodes (those built since the last
 * persist), so the cost is O(changed). Returns the root id. Every node and
 * record given an id is appended to `assigned` when it is passed: if the
 * sink's writes are then lost (a failed batch), `unpersist(assigned)` makes
 * them unpersisted again so the next persist writes them.
 */
export function persist (root: TableNode, sink: TableSink, assigned?: Array<TableNode | InodeRecord>): number {
  const walk = (n: TableNode): number => {
    if (n.id !== 0) return n.id
    const k: [number, number][] = []
    for (let s = 0; s < 256; s++) {
      const c = n.kids[s]
      if (c === undefined) continue
      let id: number
      if (typeof c === 'number') id = c
      else if (c instanceof TableNode) id = walk(c)
      else {
        id = recordId(c)
        if (id === 0) { id = sink.nextId(); recordIds.set(c, id); sink.putRecord(id, c); assigned?.push(c) }
      }
      k.push([s, id])
    }
    n.id = sink.nextId()
    sink.putNode(n.id, { l: n.level, k })
    assigned?.push(n)
    return n.id
  }
  return walk(root)
}

/** Undoes the ids `persist` assigned (its `assigned` list) after the writes carrying them failed. */
export function unpersist (assigned: Array<TableNode | InodeRecord>): void {
  for (const x of assigned) {
    if (x instanceof TableNode) x.id = 0
    else recordIds.delete(x)
  }
}

/** Every record of a loaded table, in ino order (export and verify only: O(inodes)). */
export function * allRecords (root: TableNode): Generator<InodeRecord> {
  for (const c of root.kids) {
    if (c === undefined) continue
    if (typeof c === 'number') throw new Error('inode table not loaded')
    if (c instanceof TableNode) yield * allRecords(c)
    else yield c
  }
}
