/**
 * diff: the differences between two checkpoints, or a checkpoint and the
 * live state, by path (proto DiffEntry: added, deleted, modified, meta, type).
 *
 * Cost: the inode tables say which inodes differ (O(changed)); the walk
 * descends only into directories holding a changed inode below them. File
 * content is compared by block lists where both sides have them, by mtime and
 * then bytes otherwise (sameContent).
 */
import type { CheckpointId, Ino } from '../../base/types.js'
import { type InodeRecord, S_IFMT } from '../inode.js'
import type { LowerLayer } from '../lower.js'
import { type TableNode, differences, loadDifferences, lookup, recordId } from '../itable.js'
import type { Workspace } from '../workspace.js'
import { TreeView } from '../tree.js'
import type { DiffEntry } from '../../proto/messages.js'
import type { History } from './history.js'
import { sameContent, sameLower } from './same-content.js'

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
export async function diffCheckpoints (g: History, ws: Workspace, a: CheckpointId, b?: CheckpointId): Promise<DiffEntry[]> {
  const ta = await g.tableOf(a)
  const live = b === undefined
  const tb = live ? ws.liveTable() : await g.tableOf(b)
  await loadDifferences(g, ws.base, ta, g.nodes, g.records)
  await loadDifferences(g, ws.base, tb, g.nodes, g.records)
  return await diffTables(g, ws, ta, tb, live)
}

/** diff between two tables; `live`: tb is the live state (its unsealed writes count). Entries sorted by path. */
export async function diffTables (g: History, ws: Workspace, ta: TableNode, tb: TableNode, live: boolean): Promise<DiffEntry[]> {
  await loadDifferences(g, ta, tb, g.nodes, g.records)
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
  const w = new DiffWalk(g, ws, ta, tb, false, live, below)
  await w.walk(await w.va.root(), await w.vb.root(), '')
  return w.sorted()
}

/**
 * diff of the subtrees at `paths` (workspace-relative, normalised, '' not
 * allowed) between two tables: what a selective restore from ta to tb
 * changes. Every directory of the subtrees is descended (there is no
 * changed-inode set to prune by), so the cost is O(entries in the subtrees)
 * record lookups plus the content comparisons of sameContent; nothing
 * outside the subtrees is read. `live.a`/`live.b`: that table is the live
 * state (its unsealed writes count). Entries sorted by path ('/a/b').
 */
export async function diffSubtrees (g: History, ws: Workspace, ta: TableNode, tb: TableNode, paths: string[], live: { a: boolean, b: boolean }): Promise<DiffEntry[]> {
  const w = new DiffWalk(g, ws, ta, tb, live.a, live.b, null)
  for (const p of paths) {
    const x = await w.va.at(p); const y = await w.vb.at(p)
    if (x && y) await w.walk(x, y, `/${p}`)
    else if (x) await w.all(w.va, x, `/${p}`, 'deleted')
    else if (y) await w.all(w.vb, y, `/${p}`, 'added')
  }
  return w.sorted()
}

/** The walk of a diff from view va to view vb; `aLive`/`bLive`: that side is the live state; `below` prunes unchanged directories (null: descend into all). */
class DiffWalk {
  readonly va: TreeView
  readonly vb: TreeView
  readonly out: DiffEntry[] = []
  constructor (g: History, readonly ws: Workspace, ta: TableNode, tb: TableNode, readonly aLive: boolean, readonly bLive: boolean, readonly below: Set<Ino> | null) {
    this.va = new TreeView(g, ws, ta)
    this.vb = new TreeView(g, ws, tb)
  }

  async all (v: TreeView, r: InodeRecord, p: string, change: 'added' | 'deleted'): Promise<void> {
    this.out.push({ path: p, change })
    if ((r.mode & S_IFMT) === 0o040000) for (const [n, c] of await v.children(r)) await this.all(v, c, `${p}/${n}`, change)
  }

  async walk (x: InodeRecord, y: InodeRecord, p: string): Promise<void> {
    const { ws, below, out } = this
    const isDir = (x.mode & S_IFMT) === 0o040000
    if (sameRecord(ws.lower, x, y) && !(isDir && (below === null || below.has(x.ino) || below.has(y.ino)))) return
    if ((x.mode & S_IFMT) !== (y.mode & S_IFMT)) { out.push({ path: p || '/', change: 'type' }); return }
    if (!isDir) {
      if (!sameContent(ws, x, y, this.aLive, this.bLive)) out.push({ path: p, change: 'modified' })
      else if (!sameMeta(x, y)) out.push({ path: p, change: 'meta' })
      return
    }
    if (!sameMeta(x, y)) out.push({ path: p || '/', change: 'meta' })
    const cx = await this.va.children(x); const cy = await this.vb.children(y)
    for (const [n, c] of cx) {
      const d = cy.get(n)
      if (!d) await this.all(this.va, c, `${p}/${n}`, 'deleted')
      else await this.walk(c, d, `${p}/${n}`)
    }
    for (const [n, d] of cy) if (!cx.has(n)) await this.all(this.vb, d, `${p}/${n}`, 'added')
  }

  sorted (): DiffEntry[] {
    return this.out.sort((p, q) => p.path < q.path ? -1 : p.path > q.path ? 1 : 0)
  }
}

/** Same record: one object, one persisted id, or the same lower entry (see sameLower). */
export function sameRecord (lower: LowerLayer, x: InodeRecord, y: InodeRecord): boolean {
  if (x === y) return true
  const ix = recordId(x)
  if (ix !== 0 && ix === recordId(y)) return true
  return x.lower !== undefined && y.lower !== undefined && !x.entries && !y.entries && !x.blocks && !y.blocks &&
    (x.mode & S_IFMT) === (y.mode & S_IFMT) && x.size === y.size && sameMeta(x, y) && sameLower(lower, x, y)
}


/** Same attributes for diff (exported for history): atime is left out (reading the lower layer can move it; it is restored all the same). */
export function sameMeta (x: InodeRecord, y: InodeRecord): boolean {
  return x.mode === y.mode && x.uid === y.uid && x.gid === y.gid && x.mtime === y.mtime &&
    sameXattrs(x.xattrs, y.xattrs)
}

function sameXattrs (a: Record<string, Uint8Array> | undefined, b: Record<string, Uint8Array> | undefined): boolean {
  const ka = Object.keys(a ?? {}); const kb = Object.keys(b ?? {})
  if (ka.length !== kb.length) return false
  return ka.every(k => b![k] !== undefined && Buffer.compare(a![k], b![k]) === 0)
}

