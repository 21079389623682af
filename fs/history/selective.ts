/**
 * Selective restore (issue 16): puts only some paths (files or subtrees)
 * back as they were at a checkpoint and leaves every other path as it is.
 *
 * Unlike a full restore it starts no branch: the result is sealed as a new
 * checkpoint on the current branch (label "restore N -- PATH..."), after the
 * unsaved changes were sealed first (label "before restore of paths from N"),
 * so the selective restore itself is undone by restoring that checkpoint.
 *
 * How: the records of the checkpoint's subtree at each path are grafted into
 * a copy of the live table in place of the live subtree there (the path's
 * entry in its live parent directory is replaced; a path absent at the
 * checkpoint is removed). A grafted record keeps its inode number when no
 * live record outside the replaced subtrees holds that number (the usual
 * case: the same file, edited since); otherwise it gets a new one (the
 * file was renamed away since, or has hard links outside). Names a grafted
 * record had outside the restored subtree at the checkpoint are not
 * restored (those paths are not asked for). The live workspace swaps to the
 * new table (Workspace.swapTo, as a full restore does: open handles whose
 * path now names another inode answer ESTALE) and the kernel drops its
 * caches of the changed inodes through the same InvalidationPlan
 * (invalidation.ts).
 *
 * Cost: O(records in the restored subtrees, live and at the checkpoint)
 * lookups (store reads for the checkpoint's records not in memory) plus
 * O(depth) per path; nothing outside the subtrees is read, and the
 * checkpoint writes only the records that changed. Crash: before the new
 * checkpoint is durable the restore never happened (the live state resumes
 * from the head, which holds the saved changes).
 */
import type { CheckpointId, Ino } from '../../base/types.js'
import { type InodeRecord, type Link, type LowerRef, cloneRecord, isDir, nowNs, S_IFMT, S_IFREG, S_IFDIR } from '../inode.js'
import { type TableNode, applyChanges, lookup } from '../itable.js'
import type { Workspace } from '../workspace.js'
import type { Invalidate } from '../api.js'
import { TreeView } from '../tree.js'
import { FsError } from '../../base/errno.js'
import type { DiffEntry, RestoreInfo } from '../../proto/messages.js'
import { ApiError } from '../../proto/errors.js'
import type { History } from './history.js'
import { sealCheckpoint } from './checkpoint.js'
import { invalidationPlan } from './invalidation.js'
import { diffSubtrees, sameMeta } from './diff.js'
import { announcementOf } from './announce.js'

/**
 * One path to restore: `path` is workspace-relative and normalised (proto
 * normalizePath; '' the root is refused). `attrsOnly` restores only the
 * attributes (mode, owner, times, xattrs) of the inode there, not its
 * content or entries (undo uses it for a directory whose attributes
 * changed); the type must match, else the path is restored whole.
 */
export interface RestorePath { path: string, attrsOnly?: boolean }

/** Options of restorePaths: `dryRun` changes nothing; `label` names the result checkpoint; `meta` is its segment metadata. */
export interface RestorePathsOptions { dryRun?: boolean, label?: string, meta?: unknown }

/**
 * A checkpoint's subtree, loaded: the record and, for a listed directory,
 * its children by name. For a directory never listed at the checkpoint
 * whose lower subtree holds a hard-link name, `lowerKids` is its listing
 * as the checkpoint sees it (TreeView.children), loaded the same way: the
 * graft lists it from there when a name below would otherwise join a live
 * inode that differs from the checkpoint's (see `graft`).
 */
interface Loaded { r: InodeRecord, kids: Map<string, Loaded> | null, lowerKids?: Map<string, Loaded> }

/**
 * The paths as they will be restored: sorted, duplicates dropped, and a
 * whole-path entry below another whole-path entry dropped (the ancestor
 * restores it). Throws ApiError E_BAD_REQUEST for the root or an empty list.
 */
export function normaliseRestorePaths (items: RestorePath[]): RestorePath[] {
  if (items.length === 0) throw new ApiError('E_BAD_REQUEST', 'paths: expected at least one path (leave paths out to restore the whole workspace)', { field: 'paths' })
  for (const it of items) {
    if (it.path === '' && it.attrsOnly !== true) throw new ApiError('E_BAD_REQUEST', 'paths: the workspace root cannot be restored selectively; leave paths out to restore the whole workspace (rewindfs restore ID)', { field: 'paths' })
  }
  const whole = [...new Set(items.filter(i => i.attrsOnly !== true).map(i => i.path))].sort()
  const keep: string[] = []
  for (const p of whole) if (!keep.some(k => p.startsWith(k + '/'))) keep.push(p)
  const attrs = [...new Set(items.filter(i => i.attrsOnly === true).map(i => i.path))].filter(p => !keep.some(k => p === k || p.startsWith(k + '/'))).sort()
  return [...keep.map(path => ({ path })), ...attrs.map(path => ({ path, attrsOnly: true }))]
}

/**
 * Restores `items` as they were at checkpoint `id` (see the module comment).
 * Call only inside `g.exclusive` (Generations.restorePaths does). Returns
 * RestoreInfo with `paths`, `changes` (what differs at those paths, from
 * the state before to checkpoint `id`, as diff lists it), `dryRun`, and
 * `result`: the new checkpoint, or null for a dry run or when nothing
 * differed (then no checkpoint is made at all, `saved` is null: the
 * paths are compared as diff does before anything is sealed). Unknown id →
 * E_UNKNOWN_CHECKPOINT, root or no path → E_BAD_REQUEST, a path that exists
 * neither at `id` nor in the live workspace → E_NOT_FOUND (details.paths);
 * then nothing changed. A path whose parent directory is missing in the
 * live workspace while the path exists at `id` → E_NOT_FOUND; then nothing
 * changed (unsaved changes may have been sealed as a checkpoint).
 */
export async function restorePaths (g: History, ws: Workspace, id: CheckpointId, items: RestorePath[],
  invalidate: Invalidate, o: RestorePathsOptions = {}): Promise<RestoreInfo> {
  const t0 = performance.now()
  g.checkpoint(id)
  const list = normaliseRestorePaths(items)
  const paths = list.map(i => i.path)
  const target = await g.tableOf(id)
  const view = new TreeView(g, ws, target)
  // a path neither at the checkpoint nor in the workspace is a mistake (a typo, a wrong checkpoint): refused, nothing changed
  const missing: string[] = []
  for (const it of list) {
    if (it.attrsOnly === true || await view.at(it.path) !== null) continue
    try { ws.resolve('/' + it.path) } catch (e) { if (!(e instanceof FsError)) throw e; missing.push(it.path) }
  }
  if (missing.length > 0) {
    throw new ApiError('E_NOT_FOUND', `${missing.join(', ')}: no such path at checkpoint ${id} nor in the workspace, so there is nothing to restore; nothing was changed (check the path; rewindfs log PATH --all lists the checkpoints at which a path changed)`, { paths: missing })
  }
  // what the restore changes, from the live state (diff compares what the paths hold)
  const preview = await previewChanges(g, ws, ws.liveTable(), target, list, true)
  if (o.dryRun === true) {
    return { checkpoint: id, branch: g.state.branch, changed: preview.length, ms: performance.now() - t0, saved: null, paths, dryRun: true, changes: preview, result: null }
  }
  // the paths already hold what they held at the checkpoint: nothing to do, and no checkpoint (not even of unsaved changes elsewhere)
  if (preview.length === 0) {
    return { checkpoint: id, branch: g.state.branch, changed: 0, ms: performance.now() - t0, saved: null, paths, dryRun: false, changes: [], result: null }
  }
  const label = `before restore of paths from ${id}`
  let saved: CheckpointId | null = null
  // the checkpoint's subtrees, loaded (async); the live side is read synchronously below
  const loaded = new Map<string, Loaded | null>()
  const loader = new SubtreeLoader(view)
  for (const it of list) loaded.set(it.path, await loader.load(await view.at(it.path), it.attrsOnly === true))
  // as restore.ts: seal until a check finds nothing unsaved, so the check and the swap have no await between them
  while (g.unsaved(ws)) saved = (await sealCheckpoint(g, ws, { label })).id
  // --- from here synchronous until the swap
  const changes = graft(ws, list, loaded)
  // after the graft: it may list live directories, whose records are then part of the state replaced
  const before = ws.liveTable()
  if (changes.size === 0) {
    return { checkpoint: id, branch: g.state.branch, changed: 0, ms: performance.now() - t0, saved, paths, dryRun: false, changes: [], result: null }
  }
  let inodes = g.liveInodes(ws)
  for (const [ino, r] of changes) {
    const was = lookupLoaded(before, ino) !== undefined
    if (was && r === null) inodes--
    else if (!was && r !== null) inodes++
  }
  const after = applyChanges(before, changes)
  const plan = invalidationPlan(ws, after, new Set(changes.keys()))
  ws.swapTo(after)
  g.inodes = inodes
  const shown = paths.length > 3 ? `${paths.slice(0, 3).join(' ')} ...` : paths.join(' ')
  const sealing = sealCheckpoint(g, ws, { label: o.label ?? `restore ${id} -- ${shown}`, meta: o.meta ?? { restore: { from: id, paths } } })
  const [cp, held] = await Promise.all([sealing, invalidate(plan)])
  const diff = await previewChanges(g, ws, before, target, list, false)
  // watchers hear of it as of a full restore (announce.ts)
  if (diff.length > 0 && g.announce !== null) {
    const a = await announcementOf(g, ws, before, after, diff).catch(() => null)
    if (a !== null) await g.announce(a)
  }
  return { checkpoint: id, branch: g.state.branch, changed: diff.length, ms: performance.now() - t0, saved, paths, dryRun: false, changes: diff, result: cp.id, ...(held ? { oldIncarnations: held } : {}) }
}

/** What restoring `list` from `target` changes over table `from` (live: `from` is the live state). */
async function previewChanges (g: History, ws: Workspace, from: TableNode, target: TableNode, list: RestorePath[], live: boolean): Promise<DiffEntry[]> {
  const out = await diffSubtrees(g, ws, from, target, list.filter(i => i.attrsOnly !== true).map(i => i.path), { a: live, b: false })
  const va = new TreeView(g, ws, from); const vb = new TreeView(g, ws, target)
  for (const it of list) {
    if (it.attrsOnly !== true) continue
    const x = await va.at(it.path); const y = await vb.at(it.path)
    if (x && y && ((x.mode ^ y.mode) & 0o170000) === 0) { if (!sameMeta(x, y)) out.push({ path: `/${it.path}`, change: 'meta' }) } else {
      out.push(...await diffSubtrees(g, ws, from, target, [it.path], { a: live, b: false }))
    }
  }
  return out.sort((p, q) => p.path < q.path ? -1 : p.path > q.path ? 1 : 0)
}

/**
 * Loads checkpoint subtrees (one loader per restore). Records a directory
 * never listed at the checkpoint synthesises (TreeView.children: ino 0) get
 * temporary negative numbers, unique in the restore, so that the graft can
 * tell them apart (it gives each a new inode number); the names of one lower
 * hard link synthesised in several places share one record.
 */
class SubtreeLoader {
  private nextTemp = -1
  private readonly byKey = new Map<string, InodeRecord>()
  constructor (readonly view: TreeView) {}

  /** The subtree below `r` (the record alone when `self`, or not a directory). */
  async load (r: InodeRecord | null, self: boolean): Promise<Loaded | null> {
    if (!r) return null
    if (r.ino === 0) { r = cloneRecord(r); r.ino = this.nextTemp-- }
    return await this.sub(r, self)
  }

  private async sub (r: InodeRecord, self: boolean): Promise<Loaded> {
    if (self || !isDir(r)) return { r, kids: null }
    const listed = r.entries !== undefined
    const kids = new Map<string, Loaded>()
    let links = false
    for (const [name, c0] of await this.view.children(r)) {
      let c = c0
      if (c.ino === 0) {
        const same = c.lowerKey !== undefined ? this.byKey.get(c.lowerKey) : undefined
        if (same !== undefined) {
          same.links.push([r.ino, name])
          c = same
        } else {
          c = cloneRecord(c)
          c.ino = this.nextTemp--
          c.links = [[r.ino, name]]
          if (c.lowerKey !== undefined) this.byKey.set(c.lowerKey, c)
        }
      }
      const l = await this.sub(c, false)
      if (c.lowerKey !== undefined || l.lowerKids !== undefined) links = true
      kids.set(name, l)
    }
    if (listed) return { r, kids }
    // never listed at the checkpoint: its listing is kept only where a hard-link name lies below
    return links ? { r, kids: null, lowerKids: kids } : { r, kids: null }
  }
}

/** lookup that treats a record not loaded in the table as absent (the live table is loaded wherever it differs). */
function lookupLoaded (t: TableNode, ino: Ino): InodeRecord | undefined {
  try { return lookup(t, ino) } catch { return undefined }
}

/**
 * The record changes (ino → record, null: removed) that put the loaded
 * subtrees in place of the live ones. Synchronous; reads the live state
 * only (listing lower directories on the way, as any lookup does: take
 * the live table after it).
 *
 * All paths are grafted as one: a record of the checkpoint with names in
 * several restored paths (a hard link) becomes one inode with all those
 * names, and keeps its number when no live record outside the replaced
 * subtrees holds it.
 *
 * A directory never listed at the checkpoint is grafted as it was (its
 * listing stays lower) unless a hard-link name below it would then join,
 * when the live workspace lists it, a live inode that is not what the
 * checkpoint had under that name (the live lower-link index knows only the
 * live inode of a lower file: Workspace.lowerInoIn). Then it is grafted
 * listed, as the checkpoint sees it (`lowerKids`), down to those names,
 * which become files of their own with the checkpoint's bytes. A live
 * directory never listed whose lower subtree holds hard-link names is
 * listed before it is replaced, so that the names it loses leave their
 * live inode (its link count stays right).
 */
function graft (ws: Workspace, list: RestorePath[], loaded: Map<string, Loaded | null>): Map<Ino, InodeRecord | null> {
  const changes = new Map<Ino, InodeRecord | null>()
  const cur = (ino: Ino): InodeRecord | undefined => changes.has(ino) ? (changes.get(ino) ?? undefined) : ws.get(ino)
  const mut = (ino: Ino): InodeRecord => {
    const c = changes.get(ino)
    if (c) return c
    const m = cloneRecord(cur(ino)!)
    changes.set(ino, m)
    return m
  }
  const now = nowNs()
  const hasLinks = lowerLinkScanner(ws)
  // 1. attributes-only paths, and the place of every whole path
  interface Slot { path: string, parentIno: Ino, name: string, liveIno: Ino | undefined, ck: Loaded | null }
  const slots: Slot[] = []
  for (const it of list) {
    const ck = loaded.get(it.path) ?? null
    if (it.attrsOnly === true && ck) {
      let l: InodeRecord | undefined
      try { l = ws.get(ws.resolve('/' + it.path)) } catch (e) { if (!(e instanceof FsError)) throw e }
      if (l) l = cur(l.ino)
      if (l && ((l.mode ^ ck.r.mode) & 0o170000) === 0) {
        if (!sameAttrs(l, ck.r)) {
          const m = mut(l.ino)
          m.mode = ck.r.mode; m.uid = ck.r.uid; m.gid = ck.r.gid; m.atime = ck.r.atime; m.mtime = ck.r.mtime; m.ctime = now
          if (ck.r.xattrs) m.xattrs = { ...ck.r.xattrs }
          else delete m.xattrs
        }
        continue
      }
      // a type change, or a path gone: restored whole below
    }
    if (it.path === '') continue // attributes of the root, which is gone on neither side
    const slash = it.path.lastIndexOf('/')
    const parentPath = slash < 0 ? '' : it.path.slice(0, slash)
    const name = it.path.slice(slash + 1)
    let parentIno: Ino
    try {
      parentIno = ws.resolve('/' + parentPath)
      ws.entriesOf(ws.get(parentIno)!)
    } catch (e) {
      if (!(e instanceof FsError)) throw e
      if (ck === null) continue // absent at the checkpoint, and its parent is gone: nothing to remove
      throw new ApiError('E_NOT_FOUND', `${it.path}: its parent directory /${parentPath} is missing in the workspace (or not a directory); restore /${parentPath} (or an ancestor that exists) instead`, { path: it.path })
    }
    const parent = cur(parentIno)!
    if (!isDir(parent)) throw new ApiError('E_NOT_FOUND', `${it.path}: /${parentPath} is not a directory in the workspace; restore /${parentPath} instead`, { path: it.path })
    slots.push({ path: it.path, parentIno, name, liveIno: parent.entries!.get(name), ck })
  }
  // 2. the live subtrees replaced: every inode in them, and the directories (whose entries are replaced)
  const liveSet = new Set<Ino>()
  const liveDirs = new Set<Ino>()
  const collect = (ino: Ino): void => {
    if (liveSet.has(ino)) return
    let r = cur(ino)
    if (!r) return
    if (isDir(r) && !r.entries && r.lower !== undefined && hasLinks(r.lower)) { ws.entriesOf(r); r = cur(ino)! }
    liveSet.add(ino)
    if (isDir(r)) { liveDirs.add(ino); if (r.entries) for (const c of r.entries.values()) collect(c) }
  }
  for (const s of slots) if (s.liveIno !== undefined) collect(s.liveIno)
  const replaced = new Set(slots.map(s => `${s.parentIno}/${s.name}`))
  // what stays of each live inode: its names outside the subtrees (hard links)
  const outside = new Map<Ino, Link[]>()
  for (const ino of liveSet) {
    outside.set(ino, cur(ino)!.links.filter(l => !liveDirs.has(l[0]) && !replaced.has(`${l[0]}/${l[1]}`)))
  }
  // 3. the checkpoint's subtrees as they will be grafted: directories never listed there are listed where needed
  const added = new Map<Ino, Link[]>() // names a checkpoint record gains from directories listed here
  const unsafe = (c: InodeRecord): boolean => {
    if (c.lowerKey === undefined || isDir(c)) return false
    const liveIno = ws.lowerInoIn(c.lowerKey, cur)
    const l = liveIno === undefined ? undefined : cur(liveIno)
    if (c.ino < 0) {
      // the lower file itself at the checkpoint: a live inode for it must still be the lower file, unchanged
      return l !== undefined && !(l.blocks === undefined && l.lower !== undefined && l.size === c.size && sameAttrs(l, c))
    }
    return !(l !== undefined && l.ino === c.ino && l.size === c.size && sameAttrs(l, c) && sameContent(l, c))
  }
  const needs = (n: Loaded): boolean => {
    if (n.lowerKids === undefined) return false
    for (const k of n.lowerKids.values()) if (unsafe(k.r) || needs(k)) return true
    return false
  }
  const plan = (n: Loaded): Loaded => {
    if (n.kids) { const kids = new Map<string, Loaded>(); for (const [k, v] of n.kids) kids.set(k, plan(v)); return { r: n.r, kids } }
    if (!needs(n)) return { r: n.r, kids: null }
    const r = cloneRecord(n.r)
    delete r.lower
    r.entries = new Map()
    r.subdirs = 0
    const kids = new Map<string, Loaded>()
    for (const [name, k] of n.lowerKids!) {
      r.entries.set(name, k.r.ino)
      if (isDir(k.r)) r.subdirs++
      if (k.r.ino > 0) { let a = added.get(k.r.ino); if (!a) added.set(k.r.ino, a = []); a.push([r.ino, name]) }
      kids.set(name, plan(k))
    }
    return { r, kids }
  }
  const planned = slots.map(s => s.ck === null ? null : plan(s.ck))
  // a checkpoint record named in a directory listed here gains that name (and has one fewer unseen)
  const joined = new Map<Ino, InodeRecord>()
  const withAdded = (n: Loaded): Loaded => {
    let r = n.r
    const a = added.get(r.ino)
    if (a) {
      let j = joined.get(r.ino)
      if (!j) {
        j = cloneRecord(r)
        j.links = [...r.links, ...a]
        if (j.unseen !== undefined) j.unseen = Math.max(0, j.unseen - a.length)
        joined.set(r.ino, j)
      }
      r = j
    }
    return { r, kids: n.kids && new Map([...n.kids].map(([k, v]) => [k, withAdded(v)])) }
  }
  const grafted = planned.map(n => n && withAdded(n))
  // 4. inode numbers for the grafted records, one map for all paths
  const map = new Map<Ino, Ino>()
  const ckDirs = new Set<Ino>()
  const number = (n: Loaded): void => {
    const ino = n.r.ino
    if (!map.has(ino)) {
      // ino < 0: a record synthesised from a directory never listed at the checkpoint
      const taken = ino <= 0 || (cur(ino) !== undefined && !(liveSet.has(ino) && outside.get(ino)!.length === 0))
      map.set(ino, taken ? ws.allocIno() : ino)
    }
    if (n.kids) { ckDirs.add(ino); for (const k of n.kids.values()) number(k) }
  }
  for (const n of grafted) if (n) number(n)
  const mapped = new Set(map.values())
  // removals and what is left of inodes with names outside
  for (const ino of liveSet) {
    const keep = outside.get(ino)!
    if (keep.length === 0) {
      if (!mapped.has(ino)) changes.set(ino, null)
      continue
    }
    const m = mut(ino)
    const had = m.links.length
    m.links = keep.map(l => [l[0], l[1]] as Link)
    if (m.links.length !== had) m.ctime = now
  }
  // the top names of each grafted record (in live parent directories)
  const tops = new Map<Ino, Link[]>()
  slots.forEach((s, i) => {
    const n = grafted[i]
    if (!n) return
    let l = tops.get(n.r.ino)
    if (!l) tops.set(n.r.ino, l = [])
    l.push([s.parentIno, s.name])
  })
  // 5. the grafted records
  const placed = new Set<Ino>()
  const place = (n: Loaded): void => {
    const ino = map.get(n.r.ino)!
    if (placed.has(ino)) return // a hard link seen already
    placed.add(ino)
    const links: Link[] = [...(tops.get(n.r.ino) ?? []), ...n.r.links.filter(l => ckDirs.has(l[0])).map(l => [map.get(l[0])!, l[1]] as Link)]
    const live = cur(ino)
    const unchanged = ino === n.r.ino && live !== undefined && changes.get(ino) === undefined && sameState(live, n.r, links, map)
    if (!unchanged) {
      const r = cloneRecord(n.r)
      r.ino = ino
      r.links = links
      if (ino !== n.r.ino) {
        // a new inode: not one of the hard link group it was part of. Its names outside the
        // graft stay with the live inode, and a lower file shared with those names is copied
        // into blocks, so that write-back writes this name as a file of its own
        const shared = r.lowerKey !== undefined || (r.unseen ?? 0) > 0 || n.r.links.length > 1
        delete r.lowerKey
        delete r.unseen
        if (shared && r.lower !== undefined && (r.mode & S_IFMT) === S_IFREG) {
          r.blocks = ws.lowerContentBlocks(r)
          delete r.lower
        }
      } else if (r.lowerKey !== undefined) ws.noteLowerKey(r)
      if (r.entries) r.entries = new Map([...r.entries].map(([k, v]) => [k, map.get(v) ?? v]))
      changes.set(ino, r)
    } else if (changes.get(ino) === null) changes.delete(ino)
    if (n.kids) for (const k of n.kids.values()) place(k)
  }
  for (const n of grafted) if (n) place(n)
  // 6. the entries in the parents
  slots.forEach((s, i) => {
    const n = grafted[i]
    const newIno = n ? map.get(n.r.ino) : undefined
    if (newIno === s.liveIno) return
    const p = mut(s.parentIno)
    if (s.liveIno !== undefined) {
      p.entries!.delete(s.name)
      if (liveDirs.has(s.liveIno)) p.subdirs = Math.max(0, (p.subdirs ?? 1) - 1)
    }
    if (newIno !== undefined) {
      p.entries!.set(s.name, newIno)
      if (isDir(n!.r)) p.subdirs = (p.subdirs ?? 0) + 1
    }
    p.mtime = p.ctime = now
  })
  return changes
}

/**
 * A memoised test: does the lower directory `ref` hold, at any depth, a
 * name of a file with more than one link (a lower hard link)? Reads the
 * listings (LowerLayer.list, cached per process): O(entries below) once.
 */
function lowerLinkScanner (ws: Workspace): (ref: LowerRef) => boolean {
  const memo = new Map<string, boolean>()
  const scan = (ref: LowerRef): boolean => {
    const key = `${ref.s}:${ref.p}`
    const m = memo.get(key)
    if (m !== undefined) return m
    let found = false
    for (const e of ws.lower.list(ref)) {
      const type = e.st.mode & S_IFMT
      if (type !== S_IFDIR ? e.st.nlink > 1 : scan({ s: ref.s, p: ref.p === '' ? e.name : `${ref.p}/${e.name}` })) { found = true; break }
    }
    memo.set(key, found)
    return found
  }
  return scan
}

/** Same content: block list, lower reference and symlink target. */
function sameContent (x: InodeRecord, y: InodeRecord): boolean {
  if ((x.blocks === undefined) !== (y.blocks === undefined) || (x.blocks && !x.blocks.equals(y.blocks!))) return false
  return x.lower?.s === y.lower?.s && x.lower?.p === y.lower?.p && x.target === y.target
}

/**
 * True when live record `x` already is checkpoint record `y` grafted with
 * `links` and its entries renumbered by `map`: same attributes, content
 * (block list, lower reference, target) and entries. Then it is left alone.
 */
function sameState (x: InodeRecord, y: InodeRecord, links: Link[], map: Map<Ino, Ino>): boolean {
  if (!sameAttrs(x, y) || x.size !== y.size || x.rdev !== y.rdev || x.target !== y.target || x.atime !== y.atime || x.ctime !== y.ctime) return false
  if (!sameLinks(x.links, links)) return false
  if ((x.blocks === undefined) !== (y.blocks === undefined) || (x.blocks && !x.blocks.equals(y.blocks!))) return false
  if (x.lower?.s !== y.lower?.s || x.lower?.p !== y.lower?.p) return false
  if ((x.entries === undefined) !== (y.entries === undefined)) return false
  if (x.entries && y.entries) {
    if (x.entries.size !== y.entries.size) return false
    for (const [k, v] of y.entries) if (x.entries.get(k) !== (map.get(v) ?? v)) return false
  }
  return true
}

function sameLinks (a: Link[], b: Link[]): boolean {
  return a.length === b.length && a.every((l, i) => l[0] === b[i][0] && l[1] === b[i][1])
}

function sameAttrs (x: InodeRecord, y: InodeRecord): boolean {
  if (x.mode !== y.mode || x.uid !== y.uid || x.gid !== y.gid || x.mtime !== y.mtime) return false
  const ka = Object.keys(x.xattrs ?? {}); const kb = Object.keys(y.xattrs ?? {})
  return ka.length === kb.length && ka.every(k => y.xattrs![k] !== undefined && Buffer.compare(x.xattrs![k], y.xattrs![k]) === 0)
}
