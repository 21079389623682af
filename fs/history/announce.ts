/**
 * What a restore tells watchers (issue 17; DECISIONS.md "Watchers see a
 * restore"): from the restore's diff, the steps a helper process outside
 * the daemon repeats through the mount so that the kernel emits the events
 * a watcher expects, and the answers the daemon gives that process alone
 * while it runs (fs/api.ts RestoreAnnouncer), so that nothing it does
 * changes the restored state.
 *
 * Steps, in order: removals deepest first (unlink, rmdir: IN_DELETE on the
 * parent, IN_DELETE_SELF on the file's own watch), additions parents first
 * (mknod, mkdir, symlink: IN_CREATE), then changed paths (a regular file
 * whose bytes changed: open for writing, ftruncate to its size, close:
 * IN_OPEN, IN_MODIFY, IN_CLOSE_WRITE; anything else whose attributes or
 * content changed: lchown to its owner: IN_ATTRIB). A path whose type
 * changed is removed, then added, and so is a changed file that the
 * restore gives another inode number. A directory removed or added is walked
 * by the diff, so every path below it has its own step; a directory that
 * became something else is one step (its old children get no IN_DELETE).
 *
 * Cost: O(changed paths × depth) record reads to build (TreeView.at per
 * path), one step per changed path; memory O(changed paths).
 */
import type { Ino } from '../../base/types.js'
import { FsError, ENOENT } from '../../base/errno.js'
import { type InodeRecord, S_IFMT, S_IFDIR, S_IFREG, S_IFLNK, isDir } from '../inode.js'
import type { TableNode } from '../itable.js'
import { TreeView, type RecordReader } from '../tree.js'
import { pathIn, type Workspace } from '../workspace.js'
import type { RestoreAnnouncer, Stat } from '../api.js'
import type { DiffEntry } from '../../proto/messages.js'

/** One thing the helper does through the mount; `path` is a workspace path ('/a/b'). */
export type AnnounceStep =
  | { op: 'unlink' | 'rmdir' | 'modify' | 'attrib', path: string }
  | { op: 'mkdir', path: string, mode: number }
  | { op: 'mknod', path: string, mode: number, rdev: number }
  | { op: 'symlink', path: string, target: string }

/**
 * Inode numbers given to removed names whose record has none (a child of a
 * directory never listed reports ino 0): above any the workspace allocates
 * (2^39), below the low-level layer's 40 inode bits (fuse/ll/nodeid.h).
 */
const GHOST_INO_BASE = 2 ** 39

/** The steps of one restore and the answers to its helper (RestoreAnnouncer). */
export class Announcement implements RestoreAnnouncer {
  /** set by the daemon while the helper runs (daemon/announce.ts) */
  pid = 0
  /** removed paths the helper has not unlinked yet, with the stat they had */
  private readonly ghosts = new Map<string, Stat>()
  /** ghost directories by their inode number before the restore (low-level lookups name the parent by inode) */
  private readonly ghostDirs = new Map<Ino, string>()
  /** inodes only a ghost reaches, with its stat */
  private readonly ghostInos = new Map<Ino, Stat>()
  /** added paths the helper has not created yet */
  private readonly hidden = new Set<string>()

  constructor (private readonly ws: Workspace, readonly steps: AnnounceStep[]) {}

  /** @internal built by announcementOf */
  addGhost (path: string, st: Stat): void {
    this.ghosts.set(path, st)
    if ((st.mode & S_IFMT) === S_IFDIR) this.ghostDirs.set(st.ino, path)
    if (this.ws.get(st.ino) === undefined) this.ghostInos.set(st.ino, st)
  }

  /** @internal built by announcementOf */
  addHidden (path: string): void { this.hidden.add(path) }

  getattr (path: string): Stat | undefined {
    const g = this.ghosts.get(path)
    if (g !== undefined) return g
    if (this.hidden.has(path)) throw new FsError(ENOENT, `${path}: not announced yet`)
    return undefined
  }

  remove (path: string): boolean {
    const g = this.ghosts.get(path)
    if (g === undefined) return false
    this.ghosts.delete(path)
    if (this.ghostDirs.get(g.ino) === path) this.ghostDirs.delete(g.ino)
    return true
  }

  appear (path: string): boolean {
    if (this.ghosts.has(path)) return false
    return this.hidden.delete(path)
  }

  /** The path of `name` in directory `parent`: a ghost directory's while it is not removed, else the live one's. */
  private pathAt (parent: Ino, name: string): string | null {
    const dir = this.ghostDirs.get(parent) ?? pathIn(i => this.ws.get(i), parent)
    if (dir === null) return null
    return dir === '/' ? `/${name}` : `${dir}/${name}`
  }

  lookupAt (parent: Ino, name: string): Stat | undefined {
    const p = this.pathAt(parent, name)
    return p === null ? undefined : this.getattr(p)
  }

  statIno (ino: Ino): Stat | undefined {
    return this.ws.get(ino) === undefined ? this.ghostInos.get(ino) : undefined
  }

  removeAt (parent: Ino, name: string): boolean {
    const p = this.pathAt(parent, name)
    return p !== null && this.remove(p)
  }

  appearAt (parent: Ino, name: string): boolean {
    const p = this.pathAt(parent, name)
    return p !== null && this.appear(p)
  }
}

const depth = (p: string): number => p.split('/').length

/**
 * The announcement of a restore from table `before` to table `target`
 * (the live state after the swap), given its diff (`changes`, as
 * diffTables lists them). `gens` reads records of both tables.
 */
export async function announcementOf (gens: RecordReader, ws: Workspace, before: TableNode, target: TableNode, changes: DiffEntry[]): Promise<Announcement> {
  const vOld = new TreeView(gens, ws, before)
  const vNew = new TreeView(gens, ws, target)
  const removals: Array<[string, InodeRecord]> = []
  const additions: Array<[string, InodeRecord]> = []
  const changed: Array<[string, InodeRecord, DiffEntry['change']]> = []
  for (const c of changes) {
    const rel = c.path.slice(1)
    const o = c.change === 'added' ? null : await vOld.at(rel)
    const n = c.change === 'deleted' ? null : await vNew.at(rel)
    if (c.path !== '/' && o !== null && (c.change === 'deleted' || c.change === 'type')) removals.push([c.path, o])
    if (c.path !== '/' && n !== null && (c.change === 'added' || c.change === 'type')) additions.push([c.path, n])
    if (c.change !== 'modified' && c.change !== 'meta') continue
    if (n === null) continue
    // a file the restore gives another inode (at the checkpoint its directory was not listed yet, so
    // the name gets a new inode number when it is): a watch on the old inode hears of it only when it
    // goes, so it goes (IN_DELETE_SELF) and the new one comes (IN_CREATE), as when a tool replaces a file
    if (c.path !== '/' && o !== null && !isDir(n) && (o.ino === 0 || n.ino === 0 || o.ino !== n.ino)) {
      removals.push([c.path, o]); additions.push([c.path, n])
    } else changed.push([c.path, n, c.change])
  }
  // A directory the restore moves (removed at one path, added at another, one inode): the helper must not
  // rmdir it (the kernel marks a removed directory's inode dead, and the node id lives on at the other
  // path: every lookup in it would fail) nor mkdir it. Its move and everything below it are left to the
  // restore's kernel invalidation; watchers hear nothing of them (README Limits).
  const removedDirs = new Map<Ino, string>()
  for (const [p, r] of removals) if (isDir(r) && r.ino !== 0) removedDirs.set(r.ino, p)
  const moved: string[] = []
  for (const [p, r] of additions) {
    const from = isDir(r) && r.ino !== 0 ? removedDirs.get(r.ino) : undefined
    if (from !== undefined) moved.push(from, p)
  }
  if (moved.length > 0) {
    const below = (p: string): boolean => moved.some(m => p === m || p.startsWith(m + '/'))
    for (const list of [removals, additions]) {
      const kept = list.filter(([p]) => !below(p))
      list.length = 0; list.push(...kept)
    }
  }
  removals.sort((a, b) => depth(b[0]) - depth(a[0]) || (a[0] < b[0] ? -1 : 1))
  additions.sort((a, b) => depth(a[0]) - depth(b[0]) || (a[0] < b[0] ? -1 : 1))
  const steps: AnnounceStep[] = []
  const a = new Announcement(ws, steps)
  let nextGhostIno = GHOST_INO_BASE
  for (const [p, r] of removals) {
    const st = ws.statOf(r)
    if (st.ino === 0) st.ino = nextGhostIno++
    a.addGhost(p, st)
    steps.push({ op: isDir(r) ? 'rmdir' : 'unlink', path: p })
  }
  for (const [p, r] of additions) {
    a.addHidden(p)
    steps.push(creation(p, r))
  }
  for (const [p, r, change] of changed) steps.push({ op: change === 'modified' && (r.mode & S_IFMT) === S_IFREG ? 'modify' : 'attrib', path: p })
  return a
}

/** The system call that makes `path` appear as a node of `r`'s type (what it creates is answered from the record, not from the call). */
function creation (path: string, r: InodeRecord): AnnounceStep {
  const type = r.mode & S_IFMT
  if (type === S_IFDIR) return { op: 'mkdir', path, mode: r.mode & 0o7777 }
  if (type === S_IFLNK) return { op: 'symlink', path, target: r.target ?? '' }
  return { op: 'mknod', path, mode: r.mode, rdev: r.rdev }
}
