/**
 * What the kernel must forget after a restore, as a plan (fs/api.ts
 * InvalidationPlan) the FUSE adapter alone turns into binding calls
 * (../shared/research/fuse-invalidation.md). Cost: O(changed inodes × depth).
 */
import type { Ino } from '../../base/types.js'
import { type InodeRecord, S_IFMT, S_IFDIR } from '../inode.js'
import { type TableNode, lookup } from '../itable.js'
import { pathIn, type Workspace } from '../workspace.js'
import type { InvalidationPlan } from '../api.js'

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
 */
export function invalidationPlan (ws: Workspace, target: TableNode, changed: Set<Ino>, listed: Ino[] = []): InvalidationPlan {
  const entries = new Set<string>()
  const inodes = new Set<string>()
  const renew = new Set<string>()
  // by inode (the low-level adapter): inodes of the live state, and (old parent, name) of names that go
  const inoInodes = new Set<Ino>()
  const inoEntries = new Map<string, [Ino, string, number]>()
  const goes = (parent: Ino, name: string, depthOf: number): void => { inoEntries.set(`${parent}/${name}`, [parent, name, depthOf]) }
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
    inoInodes.add(ino)
    const oldPaths = pathsOf(oldGet, o)
    const newLinks = n && (n.mode & S_IFMT) === (o.mode & S_IFMT) ? new Set(n.links.map(([p, nm]) => `${p}/${nm}`)) : new Set<string>()
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
      entries: [...inoEntries.values()].sort((a, b) => b[2] - a[2]).map(([p, n]) => [p, n] as [Ino, string])
    }
  }
}
