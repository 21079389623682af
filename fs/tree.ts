/**
 * A read-only view of the tree of one sealed inode table (a checkpoint):
 * children of a directory, file bytes. Directories never listed are read
 * from their lower layer without changing the live state. Used by the
 * protocol's stat/readdir/read at a checkpoint, by export and by write-back.
 */
import type { Ino } from '../base/types.js'
import { type InodeRecord, ROOT_INO, S_IFMT, S_IFDIR, isDir } from './inode.js'
import { recordOfLower } from './lower.js'
import type { TableNode } from './itable.js'
import type { Workspace } from './workspace.js'

/** Reads a record of a sealed table, loading the nodes on its path from the store if needed (history/generations.ts implements it). */
export interface RecordReader {
  recordIn(t: TableNode, ino: Ino): Promise<InodeRecord | undefined>
  /** Every record of table `t`, loading it whole (O(inodes of t)); absent: TreeView joins lower hard links through the workspace's own index only */
  recordsOf?(t: TableNode): Promise<Iterable<InodeRecord>>
}

export class TreeView {
  /**
   * @param gens loads records of sealed tables from the store
   * @param ws the live workspace: its lower layer and block store read file bytes
   * @param table the sealed table viewed
   */
  constructor (readonly gens: RecordReader, readonly ws: Workspace, readonly table: TableNode) {}

  /** The root directory record. */
  async root (): Promise<InodeRecord> {
    const r = await this.gens.recordIn(this.table, ROOT_INO)
    if (!r) throw new Error('checkpoint has no root inode')
    return r
  }

  /** Record of an ino of this table (undefined when absent). */
  async get (ino: Ino): Promise<InodeRecord | undefined> { return await this.gens.recordIn(this.table, ino) }

  /** this table's records with a lowerKey, by key (built on first need: see lowerLink) */
  private byLowerKey: Map<string, InodeRecord> | null = null

  /**
   * The record of this table made for lower hard link `key` ("dev:ino")
   * under another name, or undefined. The workspace's index (inos this
   * process made or loaded for the key) is asked first; failing that, the
   * table is loaded and indexed once per view (O(inodes of the table)),
   * since a record made by an earlier process (an earlier session, before
   * a restart) is known only to the store.
   */
  private async lowerLink (key: string): Promise<InodeRecord | undefined> {
    for (const ino of this.ws.lowerInos(key)) {
      const r = await this.get(ino)
      if (r?.lowerKey === key) return r
    }
    if (this.byLowerKey === null) {
      this.byLowerKey = new Map()
      if (this.gens.recordsOf) for (const r of await this.gens.recordsOf(this.table)) if (r.lowerKey) this.byLowerKey.set(r.lowerKey, r)
    }
    return this.byLowerKey.get(key)
  }

  /**
   * Children of a directory by name. Children of a never-listed lower
   * directory are synthesised from the lower listing and report ino 0,
   * except a hard link of the directory with a name already listed in
   * this table: that name's record (one file, its content as written
   * through any of its names).
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
    for (const e of this.ws.lower.list(r.lower!)) {
      const joined = (e.st.mode & S_IFMT) !== S_IFDIR && e.st.nlink > 1 ? await this.lowerLink(e.st.key) : undefined
      out.set(e.name, joined ?? recordOfLower(this.ws.lower, 0, r.ino, r.lower!, e))
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

  /** Byte ranges [start, end) of a file record of this table that may hold data (Workspace.dataRanges). */
  ranges (r: InodeRecord): Array<[number, number]> { return this.ws.dataRanges(r) }

  /** Reads file bytes of a record of this table. */
  read (r: InodeRecord, buf: Buffer, len: number, pos: number): number {
    return this.ws.readRecord(r, buf, len, pos, false)
  }
}
