/**
 * A read-only view of the tree of one sealed inode table (a checkpoint):
 * children of a directory, file bytes. Directories never listed are read
 * from their lower layer without changing the live state. Used by the
 * protocol's stat/readdir/read at a checkpoint, by export and by write-back.
 */
import type { Ino } from './types.js'
import { type InodeRecord, ROOT_INO, S_IFMT, S_IFDIR, S_IFREG, S_IFLNK, isDir } from './inode.js'
import type { TableNode } from './itable.js'
import type { Generations } from './generations.js'
import type { Workspace } from './workspace.js'

export class TreeView {
  constructor (readonly gens: Generations, readonly ws: Workspace, readonly table: TableNode) {}

  /** The root directory record. */
  async root (): Promise<InodeRecord> {
    const r = await this.gens.recordIn(this.table, ROOT_INO)
    if (!r) throw new Error('checkpoint has no root inode')
    return r
  }

  /** Record of an ino of this table (undefined when absent). */
  async get (ino: Ino): Promise<InodeRecord | undefined> { return await this.gens.recordIn(this.table, ino) }

  /**
   * Children of a directory by name. Children of a never-listed lower
   * directory are synthesised from the lower listing and report ino 0.
   */
  async children (r: InodeRecord): Promise<Map<string, InodeRecord>> {
    const out = new Map<string, InodeRecord>()
    if (r.entries) {
      for (const [name, ino] of r.entries) {
        const c = await this.get(ino)
        if (c) out.set(name, c)
      }
      return out
    }
    const ref = r.lower!
    const lower = this.ws.lower
    for (const e of lower.list(ref)) {
      const p = ref.p === '' ? e.name : `${ref.p}/${e.name}`
      const c: InodeRecord = {
        ino: 0, mode: e.st.mode, uid: e.st.uid, gid: e.st.gid, rdev: e.st.rdev, size: e.st.size,
        atime: e.st.atime, mtime: e.st.mtime, ctime: e.st.ctime, links: [[r.ino, e.name]]
      }
      if (e.st.xattrs) c.xattrs = { ...e.st.xattrs }
      const type = c.mode & S_IFMT
      if (type === S_IFDIR) { c.lower = { s: ref.s, p }; c.size = 0; c.subdirs = Math.max(0, e.st.nlink - 2) }
      else if (type === S_IFREG) c.lower = { s: ref.s, p }
      else if (type === S_IFLNK) c.target = lower.readlink({ s: ref.s, p })
      if (type !== S_IFDIR && e.st.nlink > 1) { c.lowerKey = e.st.key; c.unseen = e.st.nlink - 1 }
      out.set(e.name, c)
    }
    return out
  }

  /** The record at a workspace-relative path ('' = root), or null. O(depth). */
  async at (path: string): Promise<InodeRecord | null> {
    let cur: InodeRecord | undefined = await this.root()
    for (const name of path.split('/').filter(p => p !== '' && p !== '.')) {
      if (!cur || !isDir(cur)) return null
      cur = (await this.children(cur)).get(name)
    }
    return cur ?? null
  }

  /** Reads file bytes of a record of this table. */
  read (r: InodeRecord, buf: Buffer, len: number, pos: number): number {
    return this.ws.readRecord(r, buf, len, pos, false)
  }
}
