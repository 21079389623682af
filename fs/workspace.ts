/**
 * The live workspace: the namespace and file data of the current generation,
 * answered synchronously from memory (fuse-native.md §8: no syscall on the
 * metadata path). Operations take workspace paths ('/' is the root) and throw
 * FsError with a positive errno.
 *
 * State = `base` (the sealed inode table the generation started from) +
 * `dirty` (records changed since, null for removed) + `dirtyData` (unsealed
 * block buffers of files written since). A checkpoint folds dirty into a new
 * table (fs/history/generations.ts); a restore swaps the base (swapTo).
 *
 * Lifetimes (go-fuse "Decisions" style):
 * - An open handle names an inode, not a path. Unlinking the last name of an
 *   open file moves the inode to `orphans` until the last handle closes, so
 *   nothing is left in the namespace (no `.fuse_hidden*`) and checkpoints do
 *   not contain it.
 * - After a restore a handle keeps working on its inode if the inode is in
 *   the restored state at the path the handle was opened by (it sees the
 *   restored content); otherwise every operation on it fails with ESTALE
 *   ("Stale file handle"). libfuse 2.9 knows an open file by that name, so a
 *   handle whose name now holds another file would share the kernel's inode
 *   (size, pages) with it. A handle whose name was unlinked (libfuse forgets
 *   the name) keeps its inode, as natively. On the low-level layer a restore
 *   that changes or removes a file gives it a new kernel identity, and the
 *   adapter answers the old one (handles opened before included) from the
 *   file as it was (fs/frozen.ts, its record retained here for gc;
 *   fuse/old-incarnation.ts); the workspace only releases those handles.
 * - atime is not updated by reads (as with the noatime mount option), so
 *   reading never dirties the generation.
 */
import fs from 'node:fs'
import { BLOCK_SIZE, type BlockId, type Ino } from '../base/types.js'
import {
  type InodeRecord, type Link, ROOT_INO, S_IFMT, S_IFDIR, S_IFREG, S_IFLNK, S_IFIFO,
  cloneRecord, isDir, isFile, isSymlink, nowNs
} from './inode.js'
import { type TableNode, applyChanges, lookup } from './itable.js'
import { isByteName, nameByteLength, osPath } from '../base/names.js'
import { LowerLayer, type LowerEntry, recordOfLower, frozenBlocks, lowerEntry } from './lower.js'
import { BlockList, MAX_BLOCKS, isZeroBlock } from './blocklist.js'
import { copyIntoBlocks, dataExtents, forOtherProcess } from './sparse.js'
import { isNoSpace } from '../store/errors.js'
import { type AttrChange, type Caller, type FsOps, type InodeOps, type Stat, RENAME_NOREPLACE, RENAME_EXCHANGE } from './api.js'
import {
  fail, ENOENT, EEXIST, ENOTDIR, EISDIR, ENOTEMPTY, EINVAL, EPERM, ESTALE, ENODATA,
  ENAMETOOLONG, E2BIG, ERANGE, EBADF, EFBIG, ENOTSUP, EILSEQ
} from '../base/errno.js'

/** The block store as the workspace uses it (store/blocks.ts implements it). */
export interface Blocks {
  /** stores bytes (≤ BLOCK_SIZE), dedup confirmed byte-for-byte; returns its id */
  put(data: Uint8Array): BlockId
  /** copies up to `length` stored bytes from `fromByte` of block `id` into target; returns bytes copied */
  readInto(id: BlockId, target: Buffer, targetOffset: number, fromByte: number, length: number): number
  /** throws E_NO_SPACE when `bytes` more new bytes would eat into the store's reserve (store/space.ts); absent: never refuses */
  ensureSpace?(bytes: number): void
  /** makes the next read of every block hash it again (before a bulk copy out of the store) */
  recheck?(): void
}

/**
 * An open file: its inode, and the path the kernel knows it by (the name it
 * was opened by, following renames; null once that name is unlinked or
 * replaced); stale once a restore gave that path another file or none
 * (see markStaleHandles).
 */
interface Handle { ino: Ino, flags: number, path: string | null, stale?: boolean }

const O_ACCMODE = 3
const O_APPEND = fs.constants.O_APPEND
const O_TRUNC = fs.constants.O_TRUNC
const XATTR_CREATE = 1
const XATTR_REPLACE = 2
/** Largest xattr value accepted, bytes (Linux XATTR_SIZE_MAX). */
const XATTR_SIZE_MAX = 65536
/**
 * Largest file size, bytes: 16 TiB - 64 KiB (2^28 - 1 blocks), where ext4
 * with 4 KiB blocks stops too (it answers EFBIG above 16 TiB - 4 KiB);
 * bigger sizes and writes past it fail with EFBIG, as there.
 */
export const MAX_FILE_SIZE = (MAX_BLOCKS - 1) * BLOCK_SIZE
/** Unsealed block buffers above this many bytes are sealed into packs at once (bounds memory). */
export const DIRTY_DATA_LIMIT = 256 * 1024 * 1024

/** Smallest unsealed buffer, bytes (one page). */
const MIN_BUFFER = 4096

/** Bytes of a new unsealed buffer that must hold `need` bytes: the power of two from MIN_BUFFER up to BLOCK_SIZE. */
function firstBufferSize (need: number): number {
  let n = MIN_BUFFER
  while (n < need && n < BLOCK_SIZE) n *= 2
  return n
}

export interface WorkspaceOptions {
  blocks: Blocks
  lower: LowerLayer
  /** table the live generation starts from */
  base: TableNode
  /** next inode number to allocate (never reused across branches) */
  nextIno: number
}

/** The live generation of one mounted workspace. */
export class Workspace implements FsOps, InodeOps {
  readonly blocks: Blocks
  readonly lower: LowerLayer
  /**
   * The live generation is owned here alone: `baseTable` + `dirty` +
   * `dirtyData` + `orphans` change only through this class's methods
   * (fold, swapTo and the FS operations); history reads them through
   * base, unsavedRecords, liveTable, hasUnsealedData and orphanRecords.
   */
  private baseTable: TableNode
  /** records changed in this generation; null = removed */
  private dirty = new Map<Ino, InodeRecord | null>()
  /**
   * unsealed block buffers of files written in this generation: block k's
   * bytes from its start, up to BLOCK_SIZE; bytes past a buffer's length
   * are zeros (see blockBuffer: a small file gets a small buffer)
   */
  private readonly dirtyData = new Map<Ino, Map<number, Buffer>>()
  /** bytes written since the last checkpoint (reported, not a limit) */
  private written = 0
  /** bytes held in dirtyData (the buffers' lengths) */
  private dirtyDataBytes = 0
  /** inodes unlinked while open: alive until their last handle closes */
  private readonly orphans = new Map<Ino, InodeRecord>()
  /** next inode number to allocate (never reused across branches; persisted by history with every state record) */
  nextIno: number
  private readonly handles = new Map<number, Handle>()
  /** handles whose name is gone (path null) and not stale: namelessOpen and hasNamelessHandles look only here, not at every handle (write asks it) */
  private readonly nameless = new Set<number>()
  private readonly openCount = new Map<Ino, number>()
  private nextFh = 1
  /** read fds on lower files, by ino; closed when the inode leaves the lower layer or at close() */
  private readonly lowerFds = new Map<Ino, number>()
  /**
   * lower "dev:ino" → every ino of ours made for it (one per branch that
   * listed a name of it first), so hard links of the lower layer stay one
   * inode: the live state and TreeView join a name to the one among them
   * present in their table (inos are never reused, so one is)
   */
  private readonly lowerKeys = new Map<string, Set<Ino>>()
  /**
   * Inodes written since the adapter last looked through a handle while they
   * have names other than the handle's own (hard links, or a handle whose
   * name was unlinked): the adapter drains the set at write, flush, fsync and
   * release to drop the kernel's cached attributes and pages of those names
   * (libfuse2 gives every name its own kernel inode).
   */
  readonly linkedWrites = new Set<Ino>()

  constructor (o: WorkspaceOptions) {
    this.blocks = o.blocks
    this.lower = o.lower
    this.baseTable = o.base
    this.nextIno = o.nextIno
  }

  // ---- the live generation, as history sees it ---------------------------

  /** The sealed inode table this generation started from (changed only by fold and swapTo). */
  get base (): TableNode { return this.baseTable }

  /** Bytes written since the last checkpoint (reported, not a limit). */
  get dirtyBytes (): number { return this.written }

  /** Records changed in this generation over `base` (null: removed). O(1); a read-only view. */
  unsavedRecords (): ReadonlyMap<Ino, InodeRecord | null> { return this.dirty }

  /** The live state as one table, changing nothing (diff against the live state). O(dirty) pointer copies. */
  liveTable (): TableNode { return applyChanges(this.baseTable, this.dirty) }

  /**
   * The consistent cut (DECISIONS.md "The live generation"): folds this
   * generation's changed records into a new base table, synchronously, and
   * starts counting written bytes from zero. Returns the new table and the
   * bytes written since the last fold. Unsealed block buffers stay (the
   * caller seals them first, sealAll). O(dirty).
   */
  fold (): { table: TableNode, dirtyBytes: number } {
    const table = applyChanges(this.baseTable, this.dirty)
    const dirtyBytes = this.written
    this.baseTable = table
    this.dirty = new Map()
    this.written = 0
    return { table, dirtyBytes }
  }

  /** After a fold whose checkpoint could not be written: its written bytes count again toward the next one. */
  unfoldBytes (dirtyBytes: number): void { this.written += dirtyBytes }

  /** True when some file has written bytes not sealed into blocks yet. O(files with buffers). */
  hasUnsealedData (): boolean {
    for (const m of this.dirtyData.values()) if (m.size > 0) return true
    return false
  }

  /** True when `r` is the live record of its inode and has writes not sealed into blocks yet. */
  hasUnsealedWrites (r: InodeRecord): boolean {
    if (r.ino === 0 || !r.blocks) return false
    return (this.dirtyData.get(r.ino)?.size ?? 0) > 0 && this.get(r.ino) === r
  }

  /** Inodes unlinked while open (alive until their last handle closes; in no checkpoint). */
  orphanRecords (): IterableIterator<InodeRecord> { return this.orphans.values() }

  /**
   * Records of the state before a restore that an old incarnation still
   * reads (fs/frozen.ts, issue 13), with how many holders each has: gc
   * keeps their blocks and lower sessions live, as it does an orphan's.
   */
  private readonly retained = new Map<InodeRecord, number>()

  /** Keeps `r` (a record no longer in the live state) live for gc until the returned function is called (once counts; later calls do nothing). O(1). */
  retain (r: InodeRecord): () => void {
    this.retained.set(r, (this.retained.get(r) ?? 0) + 1)
    let done = false
    return () => {
      if (done) return
      done = true
      const n = (this.retained.get(r) ?? 1) - 1
      if (n > 0) this.retained.set(r, n)
      else this.retained.delete(r)
    }
  }

  /** Records retained for old incarnations (see retain). */
  retainedRecords (): IterableIterator<InodeRecord> { return this.retained.keys() }

  // ---- records ----------------------------------------------------------

  /** Record of `ino` in the live state (orphans included), or undefined. */
  get (ino: Ino): InodeRecord | undefined {
    if (this.dirty.has(ino)) return this.dirty.get(ino) ?? this.orphans.get(ino)
    return lookup(this.baseTable, ino) ?? this.orphans.get(ino)
  }

  private must (ino: Ino): InodeRecord {
    const r = this.get(ino)
    if (!r) fail(ESTALE, `inode ${ino} no longer exists (it was removed or a restore replaced it)`)
    return r
  }

  /**
   * A record this generation may change: cloned from the sealed one on first
   * change. `listing` is true only where a lower directory is listed into
   * records (listed, fromLower); every other caller changes the record.
   */
  mutable (ino: Ino, listing = false): InodeRecord {
    const d = this.dirty.get(ino)
    if (d) { if (!listing) this.listedOnly.delete(d); return d }
    const o = this.orphans.get(ino)
    if (o) return o
    const r = lookup(this.baseTable, ino)
    if (!r) fail(ESTALE, `inode ${ino} no longer exists`)
    const c = cloneRecord(r)
    this.dirty.set(ino, c)
    if (listing) this.listedOnly.add(c)
    return c
  }

  /**
   * Dirty records that listing lower directories made and nothing changed
   * since: a listed directory's record, the records of its children. They
   * change nothing the workspace shows (see onlyListed).
   */
  private readonly listedOnly = new WeakSet<InodeRecord>()

  /**
   * True when the changes of this generation (over `base`) only list lower
   * directories: no write, no unsealed data, no record changed otherwise.
   * Then the live state shows exactly what `base` shows, and a restore has
   * nothing to save first. Each record is also checked against its base
   * record (same attributes and content source), so that a change made
   * without mutable() is never taken for a listing. O(dirty).
   */
  onlyListed (): boolean {
    for (const m of this.dirtyData.values()) if (m.size > 0) return false
    for (const [ino, r] of this.dirty) {
      if (r === null || !this.listedOnly.has(r) || r.blocks !== undefined) return false
      let b: InodeRecord | undefined
      try { b = lookup(this.baseTable, ino) } catch { return false }
      if (b === undefined) {
        // a child record made by the listing: a file's content is still lower (a directory may be listed too)
        if (isFile(r) && r.lower === undefined) return false
        continue
      }
      if (b.mode !== r.mode || b.uid !== r.uid || b.gid !== r.gid || b.size !== r.size || b.mtime !== r.mtime || b.ctime !== r.ctime ||
        b.atime !== r.atime || b.target !== r.target || b.rdev !== r.rdev || b.blocks !== undefined || b.xattrs !== r.xattrs &&
        !(b.xattrs && r.xattrs && Object.keys(b.xattrs).length === Object.keys(r.xattrs).length && Object.keys(b.xattrs).every(k => b!.xattrs![k] === r.xattrs![k]))) return false
      // a directory listed now (it had no entries), or a lower hard link that gained a name the listing found
      if (isDir(r) ? b.entries !== undefined || r.entries === undefined : b.lower?.p !== r.lower?.p || b.lower?.s !== r.lower?.s) return false
    }
    return true
  }

  /** A new inode number, never used before on any branch (selective restore gives grafted records one where theirs is taken). Throws EFBIG past 2^32. */
  allocIno (): Ino {
    const ino = this.nextIno++
    if (ino >= 2 ** 32) fail(EFBIG, 'out of inode numbers (2^32 created)')
    return ino
  }

  private newRecord (mode: number, caller: Caller, parent: InodeRecord): InodeRecord {
    const t = nowNs()
    let gid = caller.gid
    if (parent.mode & 0o2000) { gid = parent.gid; if ((mode & S_IFMT) === S_IFDIR) mode |= 0o2000 }
    const r: InodeRecord = { ino: this.allocIno(), mode, uid: caller.uid, gid, rdev: 0, size: 0, atime: t, mtime: t, ctime: t, links: [] }
    this.dirty.set(r.ino, r)
    return r
  }

  // ---- lower layer ------------------------------------------------------

  /** Record for a lower entry listed under `dir` (or the existing inode of a lower hard link). */
  private fromLower (dir: InodeRecord, e: LowerEntry): InodeRecord {
    const st = e.st
    if ((st.mode & S_IFMT) !== S_IFDIR && st.nlink > 1) {
      // a lower hard link: its other names join this inode when their directories are listed
      const known = this.lowerInoIn(st.key, ino => this.get(ino))
      if (known !== undefined) {
        const k = this.mutable(known, true)
        k.links.push([dir.ino, e.name])
        if (k.unseen) k.unseen--
        return k
      }
    }
    const r = recordOfLower(this.lower, this.allocIno(), dir.ino, dir.lower!, e)
    this.noteLowerKey(r)
    this.dirty.set(r.ino, r)
    this.listedOnly.add(r)
    return r
  }

  /** Lists a directory still in the lower layer into records (once per directory). */
  private listed (r: InodeRecord): InodeRecord {
    if (r.entries || !isDir(r)) return r
    const m = this.mutable(r.ino, true)
    if (m.entries) return m
    const ref = m.lower!
    const entries = new Map<string, Ino>()
    let subdirs = 0
    for (const e of this.lower.list(ref)) {
      const c = this.fromLower(m, e)
      entries.set(e.name, c.ino)
      if (isDir(c)) subdirs++
    }
    m.entries = entries
    ;m.subdirs = subdirs
    delete m.lower
    return m
  }

  /**
   * Crash resume's "the directory wins" (fs/outside-edits.ts): `path`
   * becomes the workspace directory's entry at the same path as it is now,
   * a record of lower as a listing makes it (content and listing are read
   * from the directory, nothing is copied). The live state must have no
   * entry at `path` (the caller removes it first) and a directory as its
   * parent. Throws FsError ENOENT/ENOTDIR for the parent, EEXIST when the
   * entry exists, and the lstat's error when the directory has no such entry.
   */
  adoptLower (path: string): void {
    const [dir, name] = this.parentOf(path)
    if (dir.entries!.has(name)) fail(EEXIST, `${path}: file exists`)
    const i = path.lastIndexOf('/')
    const parent = i < 0 ? '' : path.slice(0, i)
    const e = lowerEntry(this.lower.pathOf(parent), name, this.lower.readXattrs)
    const d = this.mutable(dir.ino)
    const r = this.fromLower({ ...d, lower: { s: this.lower.session, p: parent } }, e)
    this.listedOnly.delete(r)
    d.entries!.set(name, r.ino)
    if (isDir(r)) d.subdirs = (d.subdirs ?? 0) + 1
  }

  /**
   * Removes entry `path` without listing it (crash resume, fs/outside-edits.ts:
   * the directory no longer has what it names): a non-directory, or a
   * directory whose listing was never read or is empty. Throws ENOTEMPTY
   * for a listed directory with entries, ENOENT when there is no entry.
   */
  dropEntry (path: string): void {
    const [dir, name] = this.parentOf(path)
    const ino = dir.entries!.get(name)
    if (ino === undefined) fail(ENOENT, `${path}: no such file or directory`)
    const r = this.must(ino)
    if (isDir(r) && r.entries !== undefined && r.entries.size > 0) fail(ENOTEMPTY, `${path}: directory not empty`)
    this.removeEntry(dir, name)
  }

  /** Registers the lower hard-link key of a record (made by a listing, or loaded at start-up after a restart). */
  noteLowerKey (r: InodeRecord): void {
    if (!r.lowerKey) return
    let s = this.lowerKeys.get(r.lowerKey)
    if (s === undefined) this.lowerKeys.set(r.lowerKey, s = new Set())
    s.add(r.ino)
  }

  /**
   * The ino made for lower file `key` ("dev:ino") whose record `recordOf`
   * finds with that key (the live state's, or a checkpoint's table), or
   * undefined when none of those this process knows is there. O(inos made
   * for that key).
   */
  lowerInoIn (key: string, recordOf: (ino: Ino) => InodeRecord | undefined): Ino | undefined {
    for (const ino of this.lowerKeys.get(key) ?? []) if (recordOf(ino)?.lowerKey === key) return ino
    return undefined
  }

  /** The inos this process made or loaded for lower file `key` ("dev:ino"). */
  lowerInos (key: string): Iterable<Ino> { return this.lowerKeys.get(key) ?? [] }

  /** Copies a lower file's content into blocks (first write). Holes stay holes. */
  private copyUp (m: InodeRecord): void {
    if (!m.lower || !isFile(m)) return
    m.blocks = this.lowerContentBlocks(m)
    delete m.lower
    this.closeLowerFd(m.ino)
  }

  /**
   * The content of file record `r`, whose content is still its lower file
   * (`r.lower`), copied into blocks now (data extents only; frozen blocks are
   * cloned); `r` itself is not changed. Copy-up uses it, and selective
   * restore for a record that gets a name of its own while its lower file
   * stays shared with other names (one name of a hard link restored alone).
   * Throws FsError EIO when the lower file cannot be opened.
   */
  lowerContentBlocks (r: InodeRecord): BlockList {
    const ref = r.lower!
    const src = this.lower.openContent(ref)
    if ('blocks' in src) return src.blocks.clone()
    // a sparse file of the directory: its data extents only (fs/sparse.ts)
    try {
      return copyIntoBlocks(src.fd, forOtherProcess(this.lower.pathOf(ref.p)), r.size, chunk => this.blocks.put(chunk))
    } finally { fs.closeSync(src.fd) }
  }

  private closeLowerFd (ino: Ino): void {
    const fd = this.lowerFds.get(ino)
    if (fd !== undefined) { this.lowerFds.delete(ino); try { fs.closeSync(fd) } catch {} }
  }

  // ---- paths ------------------------------------------------------------

  /** The ino at `path` ('/'-separated, from the root). Throws ENOENT / ENOTDIR. */
  resolve (path: string): Ino {
    let cur = this.must(ROOT_INO)
    if (path === '/' || path === '') return ROOT_INO
    let start = path.charCodeAt(0) === 47 ? 1 : 0
    while (start < path.length) {
      let end = path.indexOf('/', start)
      if (end === -1) end = path.length
      if (end > start) {
        const name = path.slice(start, end)
        if (!isDir(cur)) fail(ENOTDIR, `${path}: a component is not a directory`)
        cur = this.listed(cur)
        const next = cur.entries!.get(name)
        if (next === undefined) {
          // a name over 255 bytes cannot exist: ENAMETOOLONG as on ext4 (checked on the miss path only)
          if (end - start > 85 && nameByteLength(name) > 255) fail(ENAMETOOLONG, `${path}: name longer than 255 bytes`)
          fail(ENOENT, `${path}: no such file or directory`)
        }
        cur = this.must(next)
      }
      start = end + 1
    }
    return cur.ino
  }

  /** Directory record and entry name of `path` (the entry may not exist). */
  private parentOf (path: string): [InodeRecord, string] {
    const i = path.lastIndexOf('/')
    const name = path.slice(i + 1)
    if (name === '' || name === '.' || name === '..') fail(EINVAL, `${path}: invalid name`)
    if (nameByteLength(name) > 255) fail(ENAMETOOLONG, `${path}: name longer than 255 bytes`)
    const dir = this.must(this.resolve(i <= 0 ? '/' : path.slice(0, i)))
    if (!isDir(dir)) fail(ENOTDIR, `${path}: parent is not a directory`)
    return [this.listed(dir), name]
  }

  /** Directory entries of a directory record, listing it from the lower layer first if needed. */
  entriesOf (r: InodeRecord): Map<string, Ino> { return this.listed(r).entries! }

  /** A path of `ino` in the live state (its first name), or null when unreachable. O(depth). */
  pathOf (ino: Ino): string | null { return pathIn(i => this.get(i), ino) }

  /**
   * Paths of the names of `ino` other than `except` (all names when except is
   * null). O(1) for an inode with at most one name when `except` is given
   * (that name is then `except`); O(names × depth) otherwise. Used by the
   * adapter to drop the kernel's cached attributes of hard-link siblings.
   */
  otherNames (ino: Ino, except: string | null): string[] {
    const r = this.get(ino)
    if (!r || r.links.length === 0 || isDir(r) || (except !== null && r.links.length === 1)) return []
    const out: string[] = []
    for (const [parent, name] of r.links) {
      const dir = pathIn(i => this.get(i), parent)
      if (dir === null) continue
      const p = dir === '/' ? '/' + name : dir + '/' + name
      if (p !== except) out.push(p)
    }
    return out
  }

  /** The inode an open handle names. */
  handleIno (fh: number): Ino { return this.handle(fh).ino }

  // ---- attributes -------------------------------------------------------

  /** stat of a record as the kernel sees it; `live` false: a record not of the live state (its unsealed buffers, if any, are another record's). */
  statOf (r: InodeRecord, live = true): Stat {
    const type = r.mode & S_IFMT
    let nlink = r.links.length + (r.unseen ?? 0)
    let size = r.size
    let blocks = Math.ceil(r.size / 512)
    if (type === S_IFDIR) { nlink = 2 + (r.subdirs ?? 0); size = 4096; blocks = 8 }
    else if (type === S_IFREG && r.blocks) {
      let used = r.blocks.dataBlocks
      const dd = live ? this.dirtyData.get(r.ino) : undefined
      if (dd) for (const k of dd.keys()) if (r.blocks.get(k) === 0) used++
      blocks = Math.min(blocks, used * (BLOCK_SIZE / 512))
    }
    return { mode: r.mode, uid: r.uid, gid: r.gid, size, nlink, ino: r.ino, rdev: r.rdev, blksize: 4096, blocks, atime: r.atime, mtime: r.mtime, ctime: r.ctime }
  }

  getattr (path: string): Stat { return this.statOf(this.must(this.resolve(path))) }

  fgetattr (fh: number): Stat { return this.statOf(this.must(this.handle(fh).ino)) }

  /** Names with stats, '.' and '..' first. */
  readdir (path: string): { names: string[], stats: Stat[] } {
    const d = this.must(this.resolve(path))
    if (!isDir(d)) fail(ENOTDIR, `${path}: not a directory`)
    const entries = this.entriesOf(d)
    const names = ['.', '..']
    const self = this.statOf(d)
    const parent = d.links.length ? this.get(d.links[0][0]) : undefined
    const stats = [self, parent ? this.statOf(parent) : self]
    for (const [name, ino] of entries) {
      const c = this.get(ino)
      if (!c) continue
      names.push(name)
      stats.push(this.statOf(c))
    }
    return { names, stats }
  }

  readlink (path: string): string {
    const r = this.must(this.resolve(path))
    if (!isSymlink(r)) fail(EINVAL, `${path}: not a symlink`)
    return r.target!
  }

  chmod (path: string, mode: number): void {
    const m = this.mutable(this.resolve(path))
    m.mode = (m.mode & S_IFMT) | (mode & 0o7777)
    m.ctime = nowNs()
  }

  /** uid or gid of 0xffffffff (-1) leaves that id unchanged (chown(2)). */
  chown (path: string, uid: number, gid: number): void {
    const m = this.mutable(this.resolve(path))
    if (uid !== 0xffffffff && uid !== -1) m.uid = uid
    if (gid !== 0xffffffff && gid !== -1) m.gid = gid
    m.ctime = nowNs()
  }

  /** Times in ns; null leaves that time unchanged (UTIME_OMIT). */
  utimens (path: string, atime: bigint | null, mtime: bigint | null): void {
    const m = this.mutable(this.resolve(path))
    if (atime !== null) m.atime = atime
    if (mtime !== null) m.mtime = mtime
    m.ctime = nowNs()
  }

  // ---- namespace --------------------------------------------------------

  private addEntry (dir: InodeRecord, name: string, child: InodeRecord): void {
    const d = this.mutable(dir.ino)
    d.entries!.set(name, child.ino)
    child.links.push([d.ino, name])
    if (isDir(child)) d.subdirs = (d.subdirs ?? 0) + 1
    d.mtime = d.ctime = nowNs()
  }

  /** Removes entry `name` of `dir`; the inode dies with its last name unless open (then it is an orphan). */
  private removeEntry (dir: InodeRecord, name: string): void {
    const d = this.mutable(dir.ino)
    const ino = d.entries!.get(name)!
    d.entries!.delete(name)
    const c = this.mutable(ino)
    const i = c.links.findIndex(l => l[0] === d.ino && l[1] === name)
    if (i >= 0) c.links.splice(i, 1)
    if (isDir(c)) d.subdirs = Math.max(0, (d.subdirs ?? 1) - 1)
    const t = nowNs()
    d.mtime = d.ctime = t
    c.ctime = t
    if (c.links.length === 0) {
      if ((this.openCount.get(ino) ?? 0) > 0 && !isDir(c)) this.orphans.set(ino, c)
      else this.forget(ino)
      this.dirty.set(ino, null)
    }
  }

  private forget (ino: Ino): void {
    const dd = this.dirtyData.get(ino)
    if (dd) { for (const b of dd.values()) this.dirtyDataBytes -= b.length; this.dirtyData.delete(ino) }
    this.orphans.delete(ino)
    this.closeLowerFd(ino)
  }

  private create0 (path: string, mode: number, caller: Caller, init?: (r: InodeRecord) => void): InodeRecord {
    const [dir, name] = this.parentOf(path)
    return this.createIn(dir, name, mode, caller, init, path)
  }

  /** A new inode named `name` in the (listed) directory `dir`. */
  private createIn (dir: InodeRecord, name: string, mode: number, caller: Caller, init?: (r: InodeRecord) => void, path = name): InodeRecord {
    if (dir.entries!.has(name)) fail(EEXIST, `${path}: file exists`)
    const r = this.newRecord(mode, caller, dir)
    if (init) init(r)
    this.addEntry(dir, name, r)
    return r
  }

  mkdir (path: string, mode: number, caller: Caller): void {
    this.create0(path, S_IFDIR | (mode & 0o7777), caller, r => { r.entries = new Map(); r.subdirs = 0 })
  }

  /** mknod for fifos, sockets and device nodes (regular files too, as mknod(2) allows). */
  mknod (path: string, mode: number, rdev: number, caller: Caller): void {
    const type = mode & S_IFMT || S_IFREG
    this.create0(path, type | (mode & 0o7777), caller, r => {
      if (type === S_IFREG) r.blocks = BlockList.empty()
      else r.rdev = rdev
    })
  }

  symlink (target: string, path: string, caller: Caller): void {
    this.create0(path, S_IFLNK | 0o777, caller, r => { r.target = target; r.size = nameByteLength(target) })
  }

  unlink (path: string): void {
    const [dir, name] = this.parentOf(path)
    const ino = dir.entries!.get(name)
    if (ino === undefined) fail(ENOENT, `${path}: no such file`)
    if (isDir(this.must(ino))) fail(EISDIR, `${path}: is a directory`)
    this.removeEntry(dir, name)
    this.renameHandles(path, null)
  }

  rmdir (path: string): void {
    const [dir, name] = this.parentOf(path)
    const ino = dir.entries!.get(name)
    if (ino === undefined) fail(ENOENT, `${path}: no such directory`)
    const r = this.must(ino)
    if (!isDir(r)) fail(ENOTDIR, `${path}: not a directory`)
    if (this.entriesOf(r).size > 0) fail(ENOTEMPTY, `${path}: directory not empty`)
    this.removeEntry(dir, name)
  }

  link (existing: string, path: string): void {
    const r = this.must(this.resolve(existing))
    if (isDir(r)) fail(EPERM, `${existing}: cannot hard-link a directory`)
    const [dir, name] = this.parentOf(path)
    if (dir.entries!.has(name)) fail(EEXIST, `${path}: file exists`)
    const m = this.mutable(r.ino)
    this.addEntry(dir, name, m)
    m.ctime = nowNs()
  }

  /** rename(2) without flags: replaces an existing target of a compatible type. */
  rename (from: string, to: string): void {
    const [sdir, sname] = this.parentOf(from)
    const [ddir, dname] = this.parentOf(to)
    const r = this.renameIn(sdir, sname, ddir, dname, from, to)
    if (r === 'same') return
    if (r === 'replaced') this.renameHandles(to, null)
    this.renameHandles(from, to)
  }

  /** Fails with EINVAL when directory `dir` is `ino` or below it (a directory moved into itself). */
  private notBelow (dir: InodeRecord, ino: Ino, to: string): void {
    for (let p: InodeRecord | undefined = dir; p; p = p.links.length ? this.get(p.links[0][0]) : undefined) {
      if (p.ino === ino) fail(EINVAL, `${to}: cannot move a directory into itself`)
      if (p.ino === ROOT_INO) break
    }
  }

  /**
   * Moves entry `sname` of `sdir` to `dname` of `ddir` (both listed),
   * replacing a target of a compatible type as rename(2) does. Returns
   * 'same' when both names are links of one inode (nothing changes, as
   * rename(2) says), 'replaced' when a target was replaced, else 'moved'.
   * `from`/`to` name the two in errors.
   */
  private renameIn (sdir: InodeRecord, sname: string, ddir0: InodeRecord, dname: string, from: string, to: string): 'same' | 'replaced' | 'moved' {
    const sino = sdir.entries!.get(sname)
    if (sino === undefined) fail(ENOENT, `${from}: no such file or directory`)
    const src = this.must(sino)
    const dino = ddir0.entries!.get(dname)
    if (dino === sino) return 'same'
    if (isDir(src)) this.notBelow(ddir0, sino, to)
    let replaced = false
    if (dino !== undefined) {
      const dst = this.must(dino)
      if (isDir(src) && !isDir(dst)) fail(ENOTDIR, `${to}: not a directory`)
      if (!isDir(src) && isDir(dst)) fail(EISDIR, `${to}: is a directory`)
      if (isDir(dst) && this.entriesOf(dst).size > 0) fail(ENOTEMPTY, `${to}: directory not empty`)
      this.removeEntry(ddir0, dname)
      replaced = true
    }
    const s = this.mutable(sdir.ino)
    s.entries!.delete(sname)
    const c = this.mutable(sino)
    const i = c.links.findIndex(l => l[0] === s.ino && l[1] === sname)
    if (i >= 0) c.links.splice(i, 1)
    if (isDir(c)) s.subdirs = Math.max(0, (s.subdirs ?? 1) - 1)
    s.mtime = s.ctime = nowNs()
    this.addEntry(this.mutable(ddir0.ino), dname, c)
    c.ctime = nowNs()
    return replaced ? 'replaced' : 'moved'
  }

  /** RENAME_EXCHANGE: `sname` of `sdir` and `dname` of `ddir` (both listed, both must exist) swap their inodes. */
  private exchangeIn (sdir: InodeRecord, sname: string, ddir: InodeRecord, dname: string): void {
    const a = sdir.entries!.get(sname)
    const b = ddir.entries!.get(dname)
    if (a === undefined) fail(ENOENT, `${sname}: no such file or directory`)
    if (b === undefined) fail(ENOENT, `${dname}: no such file or directory`)
    if (a === b) return
    const ra = this.mutable(a)
    const rb = this.mutable(b)
    if (isDir(ra)) this.notBelow(ddir, a, dname)
    if (isDir(rb)) this.notBelow(sdir, b, sname)
    const s = this.mutable(sdir.ino)
    const d = this.mutable(ddir.ino)
    s.entries!.set(sname, b)
    d.entries!.set(dname, a)
    const relink = (r: InodeRecord, fromDir: Ino, fromName: string, toDir: Ino, toName: string): void => {
      const i = r.links.findIndex(l => l[0] === fromDir && l[1] === fromName)
      if (i >= 0) r.links[i] = [toDir, toName]
    }
    relink(ra, s.ino, sname, d.ino, dname)
    relink(rb, d.ino, dname, s.ino, sname)
    if (s !== d) {
      if (isDir(ra)) { s.subdirs = Math.max(0, (s.subdirs ?? 1) - 1); d.subdirs = (d.subdirs ?? 0) + 1 }
      if (isDir(rb)) { d.subdirs = Math.max(0, (d.subdirs ?? 1) - 1); s.subdirs = (s.subdirs ?? 0) + 1 }
    }
    const t = nowNs()
    s.mtime = s.ctime = d.mtime = d.ctime = t
    ra.ctime = rb.ctime = t
  }

  /**
   * Follows a rename (to = null: an unlink or a replaced target) in the
   * paths of open handles, as libfuse does in its node names. O(handles).
   */
  private renameHandles (from: string, to: string | null): void {
    if (this.handles.size === 0) return
    const prefix = from + '/'
    for (const [fh, h] of this.handles) {
      if (h.path === null) continue
      if (h.path === from) { h.path = to; if (to === null && !h.stale) this.nameless.add(fh) }
      else if (to !== null && h.path.startsWith(prefix)) h.path = to + h.path.slice(from.length)
    }
  }

  // ---- xattrs -----------------------------------------------------------

  setxattr (path: string, name: string, value: Uint8Array, flags: number): void {
    if (value.length > XATTR_SIZE_MAX) fail(E2BIG, `${path}: xattr value larger than ${XATTR_SIZE_MAX} bytes`)
    const r = this.must(this.resolve(path))
    checkXattrName(path, name)
    const has = r.xattrs !== undefined && Object.prototype.hasOwnProperty.call(r.xattrs, name)
    if ((flags & XATTR_CREATE) && has) fail(EEXIST, `${path}: xattr ${name} exists`)
    if ((flags & XATTR_REPLACE) && !has) fail(ENODATA, `${path}: no xattr ${name}`)
    const m = this.mutable(r.ino)
    m.xattrs = { ...(m.xattrs ?? {}), [name]: new Uint8Array(value) }
    m.ctime = nowNs()
  }

  getxattr (path: string, name: string): Uint8Array {
    const v = this.xattr(path, name)
    if (v === undefined) fail(ENODATA, `${path}: no xattr ${name}`)
    return v
  }

  /** Value of xattr `name`, or undefined when the inode has none by that name (no exception on a miss). */
  xattr (path: string, name: string): Uint8Array | undefined {
    const r = this.must(this.resolve(path))
    checkXattrName(path, name)
    if (!r.xattrs || !Object.prototype.hasOwnProperty.call(r.xattrs, name)) return undefined
    return r.xattrs[name]
  }

  listxattr (path: string): string[] {
    const r = this.must(this.resolve(path))
    return r.xattrs ? Object.keys(r.xattrs) : []
  }

  removexattr (path: string, name: string): void {
    const r = this.must(this.resolve(path))
    checkXattrName(path, name)
    if (!r.xattrs || !Object.prototype.hasOwnProperty.call(r.xattrs, name)) fail(ENODATA, `${path}: no xattr ${name}`)
    const m = this.mutable(r.ino)
    const x = { ...m.xattrs! }
    delete x[name]
    m.xattrs = Object.keys(x).length ? x : undefined
    if (!m.xattrs) delete m.xattrs
    m.ctime = nowNs()
  }

  // ---- handles and data -------------------------------------------------

  private handle (fh: number): Handle {
    const h = this.handles.get(fh)
    if (!h) fail(EBADF, `file handle ${fh} is not open`)
    if (h.stale) fail(ESTALE, `file handle ${fh}: a restore moved, replaced or removed the file it was opened on`)
    return h
  }

  private openHandle (ino: Ino, flags: number, path: string | null): number {
    const fh = this.nextFh++
    if (this.nextFh > 0x7fffffff) this.nextFh = 1
    this.handles.set(fh, { ino, flags, path })
    this.openCount.set(ino, (this.openCount.get(ino) ?? 0) + 1)
    return fh
  }

  /** open(2) of an existing file; returns a handle (> 0). */
  open (path: string, flags: number): number {
    const r = this.must(this.resolve(path))
    if (isDir(r) && (flags & O_ACCMODE) !== 0) fail(EISDIR, `${path}: is a directory`)
    return this.openHandle(r.ino, flags, path)
  }

  /** create(2): O_EXCL is honoured when the flags are known; an existing file is opened. */
  create (path: string, mode: number, flags: number, caller: Caller): number {
    const [dir, name] = this.parentOf(path)
    const existing = dir.entries!.get(name)
    if (existing !== undefined) {
      if (flags & fs.constants.O_EXCL) fail(EEXIST, `${path}: file exists`)
      return this.openHandle(existing, flags, path)
    }
    const r = this.create0(path, S_IFREG | (mode & 0o7777), caller, x => { x.blocks = BlockList.empty() })
    return this.openHandle(r.ino, flags, path)
  }

  release (fh: number): void {
    const h = this.handles.get(fh)
    if (!h) return
    this.handles.delete(fh)
    this.nameless.delete(fh)
    const n = (this.openCount.get(h.ino) ?? 1) - 1
    if (n > 0) { this.openCount.set(h.ino, n); return }
    this.openCount.delete(h.ino)
    if (this.orphans.has(h.ino)) this.forget(h.ino)
    else this.closeLowerFd(h.ino)
  }

  /** Reads up to `len` bytes at `pos` into buf; returns the count (0 at end of file). */
  read (fh: number, buf: Buffer, len: number, pos: number): number {
    const r = this.must(this.handle(fh).ino)
    return this.readRecord(r, buf, len, pos)
  }

  /**
   * Reads file content of a record into buf. `live` is false for a record
   * of a sealed checkpoint: the live generation's unsealed buffers are then
   * not consulted.
   */
  readRecord (r: InodeRecord, buf: Buffer, len: number, pos: number, live = true): number {
    if (!isFile(r)) fail(EISDIR, 'not a regular file')
    const end = Math.min(pos + len, r.size)
    if (end <= pos) return 0
    if (r.lower && !r.blocks) {
      const src = this.lower.frozenFor(r.lower)
      if (!src) {
        let fd = live ? this.lowerFds.get(r.ino) : undefined
        if (fd === undefined) {
          fd = (this.lower.openContent(r.lower) as { fd: number }).fd
          if (live) this.lowerFds.set(r.ino, fd)
        }
        try {
          let done = 0
          while (done < end - pos) {
            const n = fs.readSync(fd, buf, done, end - pos - done, pos + done)
            if (n === 0) break
            done += n
          }
          if (done < end - pos) buf.fill(0, done, end - pos)
        } finally { if (!live) fs.closeSync(fd) }
        return end - pos
      }
      return this.readBlocks(undefined, frozenBlocks(src.blocks!), buf, pos, end)
    }
    return this.readBlocks(live ? this.dirtyData.get(r.ino) : undefined, r.blocks!, buf, pos, end)
  }

  /**
   * Byte ranges [start, end) of a sealed file record that may hold data, in
   * increasing order (the rest are holes): its blocks holding data, or the
   * data extents of its lower file (fs/sparse.ts). O(blocks holding data).
   */
  dataRanges (r: InodeRecord): Array<[number, number]> {
    if (!isFile(r) || r.size === 0) return []
    let list = r.blocks
    if (!list && r.lower) {
      const f = this.lower.frozenFor(r.lower)
      if (f?.blocks) list = frozenBlocks(f.blocks)
      else {
        try {
          const st = fs.lstatSync(osPath(this.lower.pathOf(r.lower.p)))
          return dataExtents(forOtherProcess(this.lower.pathOf(r.lower.p)), r.size, st.blocks * 512)
        } catch { return [[0, r.size]] }
      }
    }
    const out: Array<[number, number]> = []
    for (const [k] of list?.entries() ?? []) {
      const start = k * BLOCK_SIZE; const end = Math.min(start + BLOCK_SIZE, r.size)
      if (start >= r.size) break
      const last = out[out.length - 1]
      if (last && last[1] === start) last[1] = end; else out.push([start, end])
    }
    return out
  }

  private readBlocks (dd: Map<number, Buffer> | undefined, blocks: BlockList, buf: Buffer, pos: number, end: number): number {
    let out = 0
    while (pos < end) {
      const k = Math.floor(pos / BLOCK_SIZE)
      const from = pos - k * BLOCK_SIZE
      const n = Math.min(BLOCK_SIZE - from, end - pos)
      const d = dd?.get(k)
      if (d) {
        // a buffer may end before the block does: zeros follow
        const got = from < d.length ? d.copy(buf, out, from, Math.min(from + n, d.length)) : 0
        if (got < n) buf.fill(0, out + got, out + n)
      } else {
        const id = blocks.get(k)
        let got = 0
        if (id) got = this.blocks.readInto(id, buf, out, from, n)
        if (got < n) buf.fill(0, out + got, out + n)
      }
      out += n
      pos += n
    }
    return out
  }

  /**
   * The unsealed buffer of block k of a mutable file, at least `need` bytes
   * long (need <= BLOCK_SIZE), loading the block's current content first.
   * A block with no content yet gets the smallest power of two from 4 KiB
   * up that holds `need` bytes (most files are far smaller than a block:
   * a 64 KiB buffer for each was most of the daemon's garbage collection in
   * an npm ci, DECISIONS.md "Where a request's time goes"); a buffer that
   * must grow, or a stored block being changed, gets BLOCK_SIZE at once.
   */
  private blockBuffer (m: InodeRecord, k: number, need: number): Buffer {
    let dd = this.dirtyData.get(m.ino)
    if (!dd) { dd = new Map(); this.dirtyData.set(m.ino, dd) }
    const had = dd.get(k)
    if (had !== undefined && had.length >= need) return had
    let b: Buffer
    if (had !== undefined) {
      b = Buffer.alloc(BLOCK_SIZE)
      had.copy(b)
      this.dirtyDataBytes -= had.length
    } else {
      const id = m.blocks!.get(k)
      b = Buffer.alloc(id ? BLOCK_SIZE : firstBufferSize(need))
      if (id) this.blocks.readInto(id, b, 0, 0, BLOCK_SIZE)
    }
    dd.set(k, b)
    this.dirtyDataBytes += b.length
    return b
  }

  /** Seals block k of a file into the store (it stays writable: the next write makes a new block). */
  /**
   * Stores block k of a mutable file from `data`, a write that covers the
   * block whole, straight from the request's bytes: the block it would be
   * sealed into anyway, without an unsealed buffer (a 64 KiB zeroed
   * allocation and a copy less per block of a sequential write). An
   * unsealed buffer of block k is dropped (every byte of it is overwritten).
   * False when the store is full: the caller then buffers the write (kept
   * in memory, as a partial write is).
   */
  private putWhole (m: InodeRecord, k: number, data: Buffer): boolean {
    let id: BlockId
    try { id = isZeroBlock(data) ? 0 : this.blocks.put(data) } catch (e) { if (isNoSpace(e)) return false; throw e }
    const dd = this.dirtyData.get(m.ino)
    const old = dd?.get(k)
    if (old !== undefined) {
      dd!.delete(k)
      this.dirtyDataBytes -= old.length
      if (dd!.size === 0) this.dirtyData.delete(m.ino)
    }
    m.blocks!.set(k, id)
    return true
  }

  private sealBlock (m: InodeRecord, k: number): void {
    const dd = this.dirtyData.get(m.ino)
    const b = dd?.get(k)
    if (!b) return
    const len = Math.min(BLOCK_SIZE, m.size - k * BLOCK_SIZE)
    if (len > 0) {
      // the stored bytes are the block's whole length, as if the buffer had been BLOCK_SIZE (same content, same block)
      let data = b.subarray(0, len)
      if (data.length < len) { data = Buffer.alloc(len); b.copy(data) }
      m.blocks!.set(k, isZeroBlock(data) ? 0 : this.blocks.put(data))
    }
    dd!.delete(k)
    this.dirtyDataBytes -= b.length
    if (dd!.size === 0) this.dirtyData.delete(m.ino)
  }

  /** Seals every unsealed block (checkpoint, memory bound). O(dirty data). */
  sealAll (): void {
    for (const ino of [...this.dirtyData.keys()]) {
      const m = this.get(ino)
      if (!m) { this.forget(ino); continue }
      const mm = this.orphans.has(ino) ? m : this.mutable(ino)
      for (const k of [...this.dirtyData.get(ino)!.keys()]) this.sealBlock(mm, k)
      this.dirtyData.delete(ino) // also when it held no block (sealBlock removes non-empty maps itself)
    }
  }

  /**
   * Writes `len` bytes of buf at `pos` (at the end with O_APPEND); returns
   * len. When the store's disk is full (below its reserve) the write fails
   * with E_NO_SPACE before anything changes; a block that cannot be sealed
   * because the disk filled meanwhile stays buffered (the write succeeded,
   * the next checkpoint seals it).
   */
  write (fh: number, buf: Buffer, len: number, pos: number): number {
    const h = this.handle(fh)
    const r = this.must(h.ino)
    if (!isFile(r)) fail(EISDIR, 'not a regular file')
    this.blocks.ensureSpace?.(len + (r.lower && !r.blocks ? r.size : 0))
    const m = this.mutable(h.ino)
    if (m.lower) this.copyUp(m)
    if (h.flags & O_APPEND) pos = m.size
    if (pos + len > MAX_FILE_SIZE) fail(EFBIG, `a write up to byte ${pos + len} would pass the largest file size (${MAX_FILE_SIZE} bytes, 16 TiB - 64 KiB)`)
    const end = pos + len
    if (end > m.size) m.size = end
    let src = 0
    while (pos < end) {
      const k = Math.floor(pos / BLOCK_SIZE)
      const from = pos - k * BLOCK_SIZE
      const n = Math.min(BLOCK_SIZE - from, end - pos)
      if (n === BLOCK_SIZE && this.putWhole(m, k, buf.subarray(src, src + n))) { src += n; pos += n; continue }
      const b = this.blockBuffer(m, k, from + n)
      buf.copy(b, from, src, src + n)
      src += n
      pos += n
      if (from + n === BLOCK_SIZE) keepIfNoSpace(() => this.sealBlock(m, k))
    }
    m.mtime = m.ctime = nowNs()
    // other names show a stale size and mtime now: more than one name, or one name the handle is not open by,
    // or another handle open by a name that is gone (its nameless node; openCount first: the usual write is O(1))
    if (m.links.length > 1 || (m.links.length === 1 && h.path === null) || ((this.openCount.get(m.ino) ?? 0) > 1 && this.namelessOpen(m.ino, fh))) this.linkedWrites.add(m.ino)
    this.written += len
    if (this.dirtyDataBytes > DIRTY_DATA_LIMIT) keepIfNoSpace(() => this.sealAll())
    return len
  }

  truncate (path: string, size: number): void { this.truncateIno(this.resolve(path), size) }

  ftruncate (fh: number, size: number): void { this.truncateIno(this.handle(fh).ino, size) }

  private truncateIno (ino: Ino, size: number): void {
    if (size < 0) fail(EINVAL, `invalid size ${size}`)
    if (size > MAX_FILE_SIZE) fail(EFBIG, `size ${size} is above the largest file size (${MAX_FILE_SIZE} bytes, 16 TiB - 64 KiB)`)
    const m = this.mutable(ino)
    if (isDir(m)) fail(EISDIR, 'is a directory')
    if (!isFile(m)) fail(EINVAL, 'not a regular file')
    if (m.lower) {
      if (size === 0) { m.blocks = BlockList.empty(); delete m.lower; this.closeLowerFd(ino) } else { this.blocks.ensureSpace?.(m.size); this.copyUp(m) }
    }
    const count = Math.ceil(size / BLOCK_SIZE)
    const dd = this.dirtyData.get(ino)
    if (size < m.size) {
      const tail = size % BLOCK_SIZE
      // past a buffer's length the bytes are zeros already
      if (tail !== 0 && m.blocks!.get(count - 1)) this.blockBuffer(m, count - 1, tail).fill(0, tail)
      else if (tail !== 0) { const b = dd?.get(count - 1); if (b !== undefined && b.length > tail) b.fill(0, tail) }
      m.blocks!.truncate(count)
      if (dd) {
        for (const [k, b] of [...dd]) if (k >= count) { dd.delete(k); this.dirtyDataBytes -= b.length }
        // no empty buffer maps: the generation would look dirty forever (a restore's "seal until clean" loop never ended)
        if (dd.size === 0) this.dirtyData.delete(ino)
      }
    }
    m.size = size
    m.mtime = m.ctime = nowNs()
  }

  /**
   * True when a handle other than `exceptFh` is open on `ino` by a name that
   * is gone (unlinked or replaced): libfuse keeps that handle's node without
   * a name, so a change of the inode made through another name or handle
   * cannot reach the kernel's cached attributes and pages of it by path
   * (only [6] does). O(handles whose name is gone), usually none.
   */
  namelessOpen (ino: Ino, exceptFh?: number): boolean {
    const n = this.openCount.get(ino) ?? 0
    if (n === 0 || (n === 1 && exceptFh !== undefined && this.handles.get(exceptFh)?.ino === ino)) return false
    for (const fh of this.nameless) if (fh !== exceptFh && this.handles.get(fh)?.ino === ino) return true
    return false
  }

  /** True when an open handle's name is gone (unlinked or replaced): the kernel's caches of it are out of reach by path. O(1). */
  hasNamelessHandles (): boolean { return this.nameless.size > 0 }

  /** Every open handle's ino (restore uses it to report stale handles). */
  openInodes (): Set<Ino> { return new Set(this.openCount.keys()) }

  /**
   * Replaces the live state by a sealed table (restore). Unsealed data is
   * dropped; orphans stay alive for their handles. Synchronous: no FUSE
   * request sees a half-swapped state.
   */
  swapTo (table: TableNode): void {
    this.markStaleHandles(table)
    this.baseTable = table
    this.dirty.clear()
    this.dirtyData.clear()
    this.dirtyDataBytes = 0
    this.written = 0
    for (const ino of [...this.lowerFds.keys()]) this.closeLowerFd(ino)
  }

  /**
   * Marks the handles whose path does not name their inode in `table`
   * (about to be restored) stale. libfuse 2.9's high-level API gives the
   * kernel one node per name and keeps the node of a handle's name while it
   * is open; if the name then holds another file (now, or when one is
   * created there later), the kernel merges the two and the old handle would
   * read through the new file's size and pages. Such a handle answers ESTALE
   * instead (the adapter also has libfuse renew the name's generation, see
   * invalidationItems). A handle without a path (its name was unlinked)
   * keeps its inode: the restored one if the restore has it, else its own
   * (an orphan lives on); the kernel's caches of it, which no path reaches,
   * are dropped by the [6] invalidation (hasNamelessHandles).
   * O(handles × depth); records not loaded in `table` are unchanged by the
   * restore (loadDifferences loaded every record that differs, and the live
   * state equals its base here).
   */
  private markStaleHandles (table: TableNode): void {
    for (const [fh, h] of this.handles) if (this.losesPath(table, h)) { h.stale = true; this.nameless.delete(fh) }
  }

  private losesPath (table: TableNode, h: Handle): boolean {
    return !h.stale && h.path !== null && resolveIn(table, (ino) => this.get(ino), h.path) !== h.ino
  }

  /**
   * The paths (as the kernel knows them: libfuse's names are not told about
   * a restore) of the handles a swap to `table` will make stale, with
   * whether each names a directory. The restore drops the kernel's caches
   * of those inodes, so their next access asks and gets ESTALE, even where
   * the inode itself did not change (a file under a directory that moved).
   */
  stalePaths (table: TableNode): Array<[string, boolean]> {
    const out = new Map<string, boolean>()
    for (const h of this.handles.values()) {
      if (!this.losesPath(table, h)) continue
      const r = this.get(h.ino)
      out.set(h.path!, r !== undefined && isDir(r))
    }
    return [...out]
  }

  // ---- by inode number (the low-level adapter: fs/api.ts InodeOps) --------

  /** A listed directory by inode number (ENOTDIR, ESTALE). */
  private dirAt (ino: Ino): InodeRecord {
    const d = this.must(ino)
    if (!isDir(d)) fail(ENOTDIR, `inode ${ino}: not a directory`)
    return this.listed(d)
  }

  /** A name that may be created in a directory: not empty, '.', '..', no '/', at most 255 bytes. */
  private newName (name: string): string {
    if (name === '' || name === '.' || name === '..' || name.includes('/')) fail(EINVAL, `${JSON.stringify(name)}: invalid name`)
    if (name.length > 85 && nameByteLength(name) > 255) fail(ENAMETOOLONG, `${name}: name longer than 255 bytes`)
    return name
  }

  /** The stat of `name` in directory `parent` (ENOENT; ENAMETOOLONG for a name over 255 bytes, as on ext4). */
  lookupAt (parent: Ino, name: string): Stat {
    const d = this.dirAt(parent)
    const ino = d.entries!.get(name)
    if (ino === undefined) {
      if (name.length > 85 && nameByteLength(name) > 255) fail(ENAMETOOLONG, `${name}: name longer than 255 bytes`)
      fail(ENOENT, `${name}: no such file or directory`)
    }
    return this.statOf(this.must(ino))
  }

  statIno (ino: Ino): Stat { return this.statOf(this.must(ino)) }

  /**
   * setattr(2)-like: mode, owner (each id alone), size, times, in that
   * order, each setting ctime. A size change through a handle acts on the
   * handle's inode. Returns the new stat.
   */
  setattrIno (ino: Ino, change: AttrChange, fh: number | null): Stat {
    if (fh !== null && this.handles.has(fh)) ino = this.handle(fh).ino
    const r = this.must(ino)
    if (change.mode !== undefined || change.uid !== undefined || change.gid !== undefined) {
      const m = this.mutable(r.ino)
      if (change.mode !== undefined) m.mode = (m.mode & S_IFMT) | (change.mode & 0o7777)
      if (change.uid !== undefined) m.uid = change.uid
      if (change.gid !== undefined) m.gid = change.gid
      m.ctime = nowNs()
    }
    if (change.size !== undefined) this.truncateIno(r.ino, change.size)
    if (change.atime !== undefined || change.mtime !== undefined) {
      const m = this.mutable(r.ino)
      const now = nowNs()
      if (change.atime !== undefined) m.atime = change.atime === 'now' ? now : change.atime
      if (change.mtime !== undefined) m.mtime = change.mtime === 'now' ? now : change.mtime
      m.ctime = now
    }
    return this.statOf(this.must(r.ino))
  }

  /** Entries of a directory with their stats, in the directory's order ('.' and '..' excluded). O(entries). */
  readdirIno (ino: Ino): Array<[string, Stat]> {
    const d = this.dirAt(ino)
    const out: Array<[string, Stat]> = []
    for (const [name, c] of d.entries!) {
      const r = this.get(c)
      if (r) out.push([name, this.statOf(r)])
    }
    return out
  }

  parentIno (ino: Ino): Ino {
    const r = this.must(ino)
    return ino === ROOT_INO || r.links.length === 0 ? ino : r.links[0][0]
  }

  readlinkIno (ino: Ino): string {
    const r = this.must(ino)
    if (!isSymlink(r)) fail(EINVAL, `inode ${ino}: not a symlink`)
    return r.target!
  }

  mknodAt (parent: Ino, name: string, mode: number, rdev: number, caller: Caller): Stat {
    const type = mode & S_IFMT || S_IFREG
    return this.statOf(this.createIn(this.dirAt(parent), this.newName(name), type | (mode & 0o7777), caller, r => {
      if (type === S_IFREG) r.blocks = BlockList.empty()
      else r.rdev = rdev
    }))
  }

  mkdirAt (parent: Ino, name: string, mode: number, caller: Caller): Stat {
    return this.statOf(this.createIn(this.dirAt(parent), this.newName(name), S_IFDIR | (mode & 0o7777), caller, r => { r.entries = new Map(); r.subdirs = 0 }))
  }

  symlinkAt (parent: Ino, name: string, target: string, caller: Caller): Stat {
    return this.statOf(this.createIn(this.dirAt(parent), this.newName(name), S_IFLNK | 0o777, caller, r => { r.target = target; r.size = nameByteLength(target) }))
  }

  linkAt (ino: Ino, parent: Ino, name: string): Stat {
    const r = this.must(ino)
    if (isDir(r)) fail(EPERM, `inode ${ino}: cannot hard-link a directory`)
    const dir = this.dirAt(parent)
    if (dir.entries!.has(this.newName(name))) fail(EEXIST, `${name}: file exists`)
    const m = this.mutable(r.ino)
    this.addEntry(dir, name, m)
    m.ctime = nowNs()
    return this.statOf(m)
  }

  unlinkAt (parent: Ino, name: string): void {
    const dir = this.dirAt(parent)
    const ino = dir.entries!.get(name)
    if (ino === undefined) fail(ENOENT, `${name}: no such file`)
    if (isDir(this.must(ino))) fail(EISDIR, `${name}: is a directory`)
    this.removeEntry(dir, name)
  }

  rmdirAt (parent: Ino, name: string): void {
    const dir = this.dirAt(parent)
    const ino = dir.entries!.get(name)
    if (ino === undefined) fail(ENOENT, `${name}: no such directory`)
    const r = this.must(ino)
    if (!isDir(r)) fail(ENOTDIR, `${name}: not a directory`)
    if (this.entriesOf(r).size > 0) fail(ENOTEMPTY, `${name}: directory not empty`)
    this.removeEntry(dir, name)
  }

  renameAt (parent: Ino, name: string, newParent: Ino, newName: string, flags: number): void {
    if ((flags & ~(RENAME_NOREPLACE | RENAME_EXCHANGE)) !== 0 || flags === (RENAME_NOREPLACE | RENAME_EXCHANGE)) fail(EINVAL, `rename flags ${flags} not supported`)
    const sdir = this.dirAt(parent)
    const ddir = this.dirAt(newParent)
    this.newName(newName)
    if (flags & RENAME_EXCHANGE) { this.exchangeIn(sdir, name, ddir, newName); return }
    if ((flags & RENAME_NOREPLACE) && ddir.entries!.has(newName)) {
      if (!sdir.entries!.has(name)) fail(ENOENT, `${name}: no such file or directory`)
      fail(EEXIST, `${newName}: file exists`)
    }
    this.renameIn(sdir, name, ddir, newName, name, newName)
  }

  /**
   * open(2) by inode: a handle that follows the inode, never a name. O_TRUNC
   * truncates (atomic_o_trunc), also with O_RDONLY as Linux does (the kernel
   * has checked write permission for it).
   */
  openAt (ino: Ino, flags: number): number {
    const r = this.must(ino)
    if (isDir(r) && (flags & O_ACCMODE) !== 0) fail(EISDIR, `inode ${ino}: is a directory`)
    if ((flags & O_TRUNC) && isFile(r)) this.truncateIno(ino, 0)
    return this.openHandle(ino, flags, null)
  }

  createAt (parent: Ino, name: string, mode: number, flags: number, caller: Caller): { fh: number, stat: Stat } {
    const dir = this.dirAt(parent)
    const existing = dir.entries!.get(this.newName(name))
    if (existing !== undefined) {
      if (flags & fs.constants.O_EXCL) fail(EEXIST, `${name}: file exists`)
      const fh = this.openAt(existing, flags)
      return { fh, stat: this.statOf(this.must(existing)) }
    }
    const r = this.createIn(dir, name, S_IFREG | (mode & 0o7777), caller, x => { x.blocks = BlockList.empty() })
    return { fh: this.openHandle(r.ino, flags, null), stat: this.statOf(r) }
  }

  setxattrIno (ino: Ino, name: string, value: Uint8Array, flags: number): void {
    const what = `inode ${ino}`
    if (value.length > XATTR_SIZE_MAX) fail(E2BIG, `${what}: xattr value larger than ${XATTR_SIZE_MAX} bytes`)
    const r = this.must(ino)
    checkXattrName(what, name)
    const has = r.xattrs !== undefined && Object.prototype.hasOwnProperty.call(r.xattrs, name)
    if ((flags & XATTR_CREATE) && has) fail(EEXIST, `${what}: xattr ${name} exists`)
    if ((flags & XATTR_REPLACE) && !has) fail(ENODATA, `${what}: no xattr ${name}`)
    const m = this.mutable(r.ino)
    m.xattrs = { ...(m.xattrs ?? {}), [name]: new Uint8Array(value) }
    m.ctime = nowNs()
  }

  xattrIno (ino: Ino, name: string): Uint8Array | undefined {
    const r = this.must(ino)
    checkXattrName(`inode ${ino}`, name)
    if (!r.xattrs || !Object.prototype.hasOwnProperty.call(r.xattrs, name)) return undefined
    return r.xattrs[name]
  }

  listxattrIno (ino: Ino): string[] {
    const r = this.must(ino)
    return r.xattrs ? Object.keys(r.xattrs) : []
  }

  removexattrIno (ino: Ino, name: string): void {
    const r = this.must(ino)
    checkXattrName(`inode ${ino}`, name)
    if (!r.xattrs || !Object.prototype.hasOwnProperty.call(r.xattrs, name)) fail(ENODATA, `inode ${ino}: no xattr ${name}`)
    const m = this.mutable(r.ino)
    const x = { ...m.xattrs! }
    delete x[name]
    if (Object.keys(x).length) m.xattrs = x
    else delete m.xattrs
    m.ctime = nowNs()
  }

  /**
   * Byte ranges [start, end) of an open file that may hold data (the rest
   * are holes), increasing: its blocks holding data and its unsealed
   * buffers, or a lower file's data extents. O(blocks holding data).
   */
  dataRangesOf (fh: number): Array<[number, number]> {
    const r = this.must(this.handle(fh).ino)
    if (!isFile(r)) fail(EINVAL, 'not a regular file')
    if (!r.blocks) return this.dataRanges(r)
    const ks = new Set<number>()
    for (const [k] of r.blocks.entries()) ks.add(k)
    for (const k of this.dirtyData.get(r.ino)?.keys() ?? []) ks.add(k)
    const out: Array<[number, number]> = []
    for (const k of [...ks].sort((a, b) => a - b)) {
      const start = k * BLOCK_SIZE; const end = Math.min(start + BLOCK_SIZE, r.size)
      if (start >= r.size) break
      const last = out[out.length - 1]
      if (last && last[1] === start) last[1] = end; else out.push([start, end])
    }
    return out
  }

  /** Closes lower fds (unmount). */
  close (): void {
    for (const ino of [...this.lowerFds.keys()]) this.closeLowerFd(ino)
  }
}

/**
 * Runs a seal; when it fails because the store's disk is full, the data
 * stays in its unsealed buffer (sealed at the next checkpoint) and the
 * SpaceGuard, told by the failed append, refuses the next write.
 */
function keepIfNoSpace (seal: () => void): void {
  try { seal() } catch (e) { if (!isNoSpace(e)) throw e }
}

/** A path of `ino` through the first names of it and its ancestors, or null. */
export function pathIn (get: (ino: Ino) => InodeRecord | undefined, ino: Ino): string | null {
  if (ino === ROOT_INO) return '/'
  const parts: string[] = []
  let cur = get(ino)
  for (let depth = 0; cur && cur.ino !== ROOT_INO; depth++) {
    if (cur.links.length === 0 || depth > 4096) return null
    const [parent, name] = cur.links[0] as Link
    parts.push(name)
    cur = get(parent)
  }
  if (!cur) return null
  return '/' + parts.reverse().join('/')
}

/**
 * The inode at `path` (absolute) in `table`, or undefined. A record not
 * loaded in the table is taken from `live` (see markStaleHandles). A
 * directory still lower (not listed) resolves nothing below it: its
 * children get new inode numbers when it is listed.
 */
function resolveIn (table: TableNode, live: (ino: Ino) => InodeRecord | undefined, path: string): Ino | undefined {
  const get = (ino: Ino): InodeRecord | undefined => { try { return lookup(table, ino) } catch { return live(ino) } }
  let cur: Ino = ROOT_INO
  for (const name of path.split('/')) {
    if (name === '') continue
    const r = get(cur)
    if (!r || !r.entries) return undefined
    const next = r.entries.get(name)
    if (next === undefined) return undefined
    cur = next
  }
  return get(cur) ? cur : undefined
}


/**
 * xattr namespaces a Linux filesystem accepts. FUSE passes every name
 * through (the kernel's handler has an empty prefix), so an unknown
 * namespace ("bogus.x") must fail here with EOPNOTSUPP as on ext4/tmpfs.
 * "system." names other than POSIX ACLs (which the kernel intercepts before
 * FUSE) are not supported either. A name that is only a namespace prefix
 * ("user.") fails with EINVAL, as the kernel does for native filesystems.
 */
function checkXattrName (path: string, name: string): void {
  // xattrs are a msgpack map keyed by str in the store: a name that is not UTF-8 cannot be kept (issue 18)
  if (isByteName(name)) fail(EILSEQ, `${path}: an xattr name that is not valid UTF-8 is not supported: refused rather than merged with another name`)
  for (const prefix of XATTR_NAMESPACES) {
    if (!name.startsWith(prefix)) continue
    // "user." alone reaches us too; Linux refuses a name with nothing after its namespace
    if (name.length === prefix.length) fail(EINVAL, `${path}: xattr name ${name} has nothing after its namespace`)
    return
  }
  fail(ENOTSUP, `${path}: xattr namespace of ${name} is not supported`)
}

/** Namespaces of checkXattrName. */
const XATTR_NAMESPACES = ['user.', 'trusted.', 'security.']
