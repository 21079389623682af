/**
 * What the kernel must forget after a restore, as a plan (fs/api.ts
 * InvalidationPlan) the FUSE adapter alone turns into binding calls
 * (../shared/research/fuse-invalidation.md). Cost: O(changed inodes × depth).
 */
import type { Ino } from '../../base/types.js'
import { type InodeRecord, S_IFMT, S_IFDIR, S_IFREG } from '../inode.js'
import { type TableNode, lookup } from '../itable.js'
import { pathIn, type Workspace } from '../workspace.js'
import type { FrozenInode, InvalidationPlan } from '../api.js'
import { frozenInode } from '../frozen.js'
import { sameLower } from './same-content.js'

/**
 * Kernel cache invalidations for a swap from the live state to `target`
 * (fuse-invalidation.md §6): an entry invalidation for every old path whose
 * inode disappears, changes type or stops being at that name; an inode
 * invalidation (attributes and pages) for every path whose inode survives
 * with changes, and for vanished or moved ones (open fds and mmaps); a
 * new libfuse generation for the name of a non-directory that vanishes or
 * moves away (so a file restored or created there later gets its own
 * kernel inode instead of the one an old handle still holds, see
 * fuse-native.c fn_renew); the same for the paths of open handles the
 * restore cuts off (Workspace.stalePaths); the nodes libfuse keeps without
 * a name when a handle's name is gone (fn_inval_nameless). The adapter adds
 * the root always and sends inodes first, then generations, then entries
 * deepest first (fs/api.ts InvalidationPlan).
 * By inode (the low-level adapter), a non-directory whose content or type
 * differs, or that the restored state has not, is `renewed` (issue 13: it
 * gets a new node id, and every name it had is dropped, hard links
 * included), and its record as it was is kept for `frozen`; the other
 * changed inodes keep their node id and only their attributes and pages
 * are dropped.
 */
export function invalidationPlan (ws: Workspace, target: TableNode, changed: Set<Ino>, listed: Ino[] = []): InvalidationPlan {
  const entries = new Set<string>()
  const inodes = new Set<string>()
  const renew = new Set<string>()
  // by inode (the low-level adapter): inodes of the live state, and (old parent, name) of names that go
  const inoInodes = new Set<Ino>()
  const inoEntries = new Map<string, [Ino, string, number]>()
  const goes = (parent: Ino, name: string, depthOf: number): void => { inoEntries.set(`${parent}/${name}`, [parent, name, depthOf]) }
  // non-directories whose content or type differs, or that vanish: their records as they are now (before the swap)
  const renewed = new Map<Ino, InodeRecord>()
  const oldGet = (i: Ino): InodeRecord | undefined => ws.get(i)
  const newGet = (i: Ino): InodeRecord | undefined => lookup(target, i)
  const pathsOf = (get: (i: Ino) => InodeRecord | undefined, r: InodeRecord): string[] => {
    const out: string[] = []
    for (const [parent, name] of r.links) {
      const pp = pathIn(get, parent)
      if (pp !== null) out.push(pp === '/' ? `/${name}` : `${pp}/${name}`)
    }
    if (r.ino === 1) out.push('/')
    return out
  }
  const swap = (ino: Ino, n: InodeRecord | undefined): void => {
    const o = oldGet(ino)
    if (!o) return
    const fresh = (o.mode & S_IFMT) !== S_IFDIR && (n === undefined || !sameContentCheap(ws, o, n))
    if (fresh) renewed.set(ino, o)
    else inoInodes.add(ino)
    const oldPaths = pathsOf(oldGet, o)
    // a renewed inode loses every name it had: each is looked up again and answered with the new node id
    const newLinks = n && !fresh && (n.mode & S_IFMT) === (o.mode & S_IFMT) ? new Set(n.links.map(([p, nm]) => `${p}/${nm}`)) : new Set<string>()
    for (const [parent, name] of o.links) {
      if (newLinks.has(`${parent}/${name}`)) continue
      const pp = pathIn(oldGet, parent)
      goes(parent, name, pp === null ? 0 : pp.split('/').length)
    }
    if (!n || (n.mode & S_IFMT) !== (o.mode & S_IFMT)) {
      // the name goes; its pages go too, so an fd or mmap still open on it cannot read cached bytes
      for (const p of oldPaths) if (p !== '/') { entries.add(p); inodes.add(p); if ((o.mode & S_IFMT) !== S_IFDIR) renew.add(p) }
      return
    }
    const newPaths = new Set(pathsOf(newGet, n))
    for (const p of oldPaths) {
      if (newPaths.has(p)) inodes.add(p)
      else if (p !== '/') { entries.add(p); inodes.add(p); if ((o.mode & S_IFMT) !== S_IFDIR) renew.add(p) }
    }
  }
  for (const ino of changed) swap(ino, newGet(ino))
  // records only listing made (not in the base table, or a listed directory the base has unlisted):
  // the kernel knows their paths with these inode numbers; a new one is in no checkpoint
  for (const ino of listed) {
    if (changed.has(ino)) continue
    let b: InodeRecord | undefined
    try { b = lookup(ws.base, ino) } catch {}
    swap(ino, b)
  }
  // open handles the restore cuts off, also where their inode did not change (a file below a moved directory)
  for (const [p, dir] of ws.stalePaths(target)) { inodes.add(p); if (!dir) renew.add(p) }
  const depth = (p: string): number => p.split('/').length
  return {
    // inodes first: libfuse resolves their paths through names the entry invalidations remove
    inodes: [...inodes].filter(p => p !== '/'),
    renew: [...renew],
    // handles whose name is gone are out of reach by path: drop what the kernel caches for them
    nameless: ws.hasNamelessHandles(),
    entries: [...entries].sort((a, b) => depth(b) - depth(a)),
    byIno: {
      inodes: [...inoInodes].filter(i => i !== 1),
      entries: [...inoEntries.values()].sort((a, b) => b[2] - a[2]).map(([p, n]) => [p, n] as [Ino, string]),
      renewed: [...renewed.keys()],
      frozen: (ino: Ino): FrozenInode | undefined => {
        const r = renewed.get(ino)
        if (r === undefined) return undefined
        renewed.delete(ino) // at most once: the view holds the record for gc until released
        return frozenInode(ws, r)
      }
    }
  }
}

/**
 * True when two records of one non-directory inode certainly hold the same
 * content (same type, size, symlink target, device number, and for files the
 * same block ids or the same lower file): then its node id may stay. Cheap
 * (O(blocks holding data), no read); when unsure it answers false and the
 * inode is renewed, which costs the kernel's cached pages of it only.
 */
function sameContentCheap (ws: Workspace, o: InodeRecord, n: InodeRecord): boolean {
  if ((o.mode & S_IFMT) !== (n.mode & S_IFMT) || o.size !== n.size || o.target !== n.target || o.rdev !== n.rdev) return false
  if ((o.mode & S_IFMT) !== S_IFREG || o.size === 0) return true
  if (o.blocks !== undefined && n.blocks !== undefined) return o.blocks === n.blocks || o.blocks.equals(n.blocks)
  if (o.lower !== undefined && n.lower !== undefined && o.blocks === undefined && n.blocks === undefined) return sameLower(ws.lower, o, n)
  return false
}
