/**
 * Write-back at unmount: makes the workspace directory hold the final state,
 * touching only what differs (O(paths the session changed) plus the
 * directories on their way; directories the session never listed are
 * skipped whole).
 *
 * Old checkpoints may still refer to lower content that write-back is about
 * to change. So it runs in two passes over the same decisions:
 *  1. freeze: for every path it will remove or overwrite, and every directory
 *     whose listing or children's attributes it will change, record the
 *     current content (file bytes into blocks, listings with stats) as a
 *     FrozenPath for the sessions that saw it; make that durable
 *     (pack fsync, then one LevelDB batch);
 *  2. apply: change the directory. New content is written to a temporary
 *     name and renamed over the old one.
 * A crash in pass 2 leaves frozen copies for everything changed so far, and
 * the next mount resumes the last checkpoint (see daemon.ts).
 */
import fs from 'node:fs'
import type { StoreDb } from '../store/db.js'
import type { BlockStore } from '../store/blocks.js'
import type { Generations } from './history/generations.js'
import type { Workspace } from './workspace.js'
import { type InodeRecord, S_IFMT, S_IFDIR, S_IFREG, S_IFLNK } from './inode.js'
import { type FrozenPath, type LowerEntry, lowerEntry, lowerStat, lowerXattrs, listTreeNoAtime, WRITEBACK_TEMP_PREFIX, LowerLayer, frozenKey, encodeFrozen } from './lower.js'
import { TreeView } from './tree.js'
import { isNoSpace } from '../store/errors.js'
import { osPath, readdirNames, readlinkName } from '../base/names.js'
import { BlockList } from './blocklist.js'
import { copyIntoBlocks, forOtherProcess } from './sparse.js'
import { writeContent, applyMeta, makeSpecial, setTimes, xattrsDiffer, type TimeBatch, type XattrIo } from './materialize.js'

export interface WriteBackOptions {
  ws: Workspace
  gens: Generations
  db: StoreDb
  blocks: BlockStore
  /** the workspace directory (no longer mounted) */
  dir: string
  /** fd of the workspace directory opened before the mount */
  dirFd: number
  log: (m: string) => void
  /**
   * xattr calls (fuse/xattr.ts via daemon.ts): user.* and trusted.* xattrs
   * are written and those the record lacks removed, frozen listings keep the
   * xattrs they had; without it xattrs on disk are left as they are
   */
  xattrs?: XattrIo
  /**
   * false for an unmount that discards the session (the directory keeps its
   * content): only the freezing runs, nothing in the directory is changed
   * (default true)
   */
  apply?: boolean
}

/** What a write-back did. */
export interface WriteBackStats {
  /** paths written, removed, frozen */
  written: number
  removed: number
  frozen: number
  /** the paths whose write failed, each "path: reason" */
  errors: string[]
  /**
   * set when the store had no space left to freeze the paths write-back did
   * not change (the reason): checkpoints of this session still read those
   * from the directory
   */
  unfrozen?: string
}


/**
 * Writes the live state (sealed by the caller) back into the directory, after
 * freezing everything the directory holds for this and earlier sessions
 * (pass 1). Returns the counts of paths written, removed and frozen, and the
 * paths whose write failed (each "path: reason"). Throws when freezing a path
 * it changes fails (the directory is unchanged then; StoreNoSpaceError when
 * the store is full); a full store while freezing the other paths only sets
 * `unfrozen`.
 */
export async function writeBack (o: WriteBackOptions): Promise<WriteBackStats> {
  o.blocks.recheck() // hash every block again before its bytes reach the directory
  const session = o.gens.state.session
  // the mount is gone: the directory's own path reaches it again
  const root = o.dir
  const times: TimeBatch = []
  const view = new TreeView(o.gens, o.ws, o.ws.base)
  const before = new LowerLayer(o.ws.lower.root, session, o.ws.lower.frozenCopy())
  const frozenNow = new Map<string, FrozenPath[]>()
  const stats: WriteBackStats = { written: 0, removed: 0, frozen: 0, errors: [] }
  const absOf = (rel: string): string => rel === '' ? root : `${root}/${rel}`
  const join = (rel: string, name: string): string => rel === '' ? name : `${rel}/${name}`

  // ---- freezing (pass 1) ----
  const freeze = (rel: string, f: Omit<FrozenPath, 'from' | 'to'>): void => {
    const list = o.ws.lower.freeze(rel, session, f)
    if (list === null) return // already frozen for this session
    frozenNow.set(rel, list)
    stats.frozen++
  }
  const frozenThisSession = (rel: string): boolean => o.ws.lower.frozenFor({ s: session, p: rel }) !== undefined
  // the listing the session read first: reading the directory since (getdents, readlink, reads
  // of files) changed atimes on disk, and the frozen copy must show what the session showed
  // the names of directories the session never listed, read once without changing their atimes
  let names: Map<string, string[]> | undefined
  const listingOf = (rel: string): LowerEntry[] => {
    const known = o.ws.lower.known(rel)
    if (known) return known
    const abs = absOf(rel)
    names ??= listTreeNoAtime(root)
    return (names.get(rel) ?? readdirNames(abs)).map(name => lowerEntry(abs, name, o.xattrs?.read))
  }
  // set while freezing the paths write-back leaves as they are (see freezeFile)
  let optional = false
  const freezeFile = (rel: string, size: number): void => {
    const flags = fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW
    let fd: number
    // O_NOATIME: freezing must not change the atime the file keeps (needs ownership or CAP_FOWNER)
    const p = osPath(absOf(rel))
    try { fd = fs.openSync(p, flags | fs.constants.O_NOATIME) } catch (e: any) { if (e.code !== 'EPERM') throw e; fd = fs.openSync(p, flags) }
    let blocks: BlockList
    try {
      // a sparse file: its data extents only (fs/sparse.ts), not its holes
      blocks = copyIntoBlocks(fd, forOtherProcess(absOf(rel)), size, chunk => {
        // the paths write-back changes may use the reserve kept for checkpoints; the others may not
        if (optional) o.blocks.ensureSpace(chunk.length)
        return o.blocks.put(chunk)
      })
    } finally { fs.closeSync(fd) }
    freeze(rel, { blocks: blocks.encode() })
  }
  // atimes the freezing itself changed on disk (readlink, a read where O_NOATIME is refused), set back before pass 2
  const restoreTimes: TimeBatch = []
  const freezeTree = (rel: string): void => {
    const abs = absOf(rel)
    // gone from disk: a write-back of this session killed half way removed it, after freezing it
    // (the listing of a frozen directory names what it held then)
    const st = fs.lstatSync(osPath(abs), { bigint: true, throwIfNoEntry: false })
    if (st === undefined) return
    const done = frozenThisSession(rel)
    if (st.isDirectory()) {
      const listing = done ? o.ws.lower.frozenFor({ s: session, p: rel })!.listing ?? [] : listingOf(rel)
      if (!done) freeze(rel, { listing })
      for (const e of listing) freezeTree(join(rel, e.name))
    } else if (done) return
    else if (st.isFile()) freezeFile(rel, Number(st.size))
    else if (st.isSymbolicLink()) freeze(rel, { target: readlinkName(abs) })
    else return
    const after = fs.lstatSync(osPath(abs), { bigint: true })
    if (after.atimeNs !== st.atimeNs) restoreTimes.push([abs, st.atimeNs.toString(), st.mtimeNs.toString()])
  }

  const links = new Map<number, string>()
  const metaDiffers = (c: InodeRecord, h: fs.BigIntStats): boolean =>
    Number(h.mode) !== c.mode || Number(h.uid) !== c.uid || Number(h.gid) !== c.gid || h.mtimeNs / 1000n !== c.mtime / 1000n ||
    h.atimeNs / 1000n !== c.atime / 1000n
  const pristine = (c: InodeRecord, rel: string): boolean =>
    c.lower !== undefined && c.lower.s === session && c.lower.p === rel && before.isLive(c.lower)

  const walk = async (r: InodeRecord, rel: string, apply: boolean): Promise<void> => {
    if (!r.entries && pristine(r, rel)) return
    const abs = absOf(rel)
    const have = new Map<string, fs.BigIntStats>()
    // what is on disk there may not be a directory (yet): in pass 1 a file or symlink the directory
    // replaces (frozen by the caller), nothing below it to compare or freeze
    // (a path the directory cannot hold, e.g. longer than PATH_MAX, reads as absent: its write fails and is reported)
    let dirOnDisk = false
    try { dirOnDisk = fs.lstatSync(osPath(abs), { throwIfNoEntry: false })?.isDirectory() === true } catch {}
    if (dirOnDisk) for (const name of readdirNames(abs)) have.set(name, fs.lstatSync(osPath(`${abs}/${name}`), { bigint: true }))
    const want = await view.children(r)
    let changed = false
    for (const [name] of have) {
      if (want.has(name)) continue
      changed = true
      if (!apply) freezeTree(join(rel, name))
      else {
        try { fs.rmSync(osPath(`${abs}/${name}`), { recursive: true, force: true }); stats.removed++ } catch (e: any) { stats.errors.push(`${join(rel, name)}: ${e.message}`) }
      }
    }
    for (const [name, c] of want) {
      const crel = join(rel, name)
      const cabs = `${abs}/${name}`
      let h = have.get(name)
      const type = c.mode & S_IFMT
      const sameType = h !== undefined && (Number(h.mode) & S_IFMT) === type
      const multi = type !== S_IFDIR && c.ino !== 0 && (c.links.length > 1 || c.lowerKey !== undefined)
      const linkTo = multi ? links.get(c.ino) : undefined
      let rewrite: boolean
      if (type === S_IFDIR) rewrite = !sameType
      else if (linkTo) rewrite = !(h && fs.existsSync(osPath(linkTo)) && fs.lstatSync(osPath(linkTo), { bigint: true }).ino === h.ino)
      else if (type === S_IFREG) rewrite = !sameType || !pristine(c, crel)
      else if (type === S_IFLNK) {
        rewrite = !sameType || readlinkName(cabs) !== c.target
        // readlink(2) may have just set its atime (relatime): compare the attributes it has now
        if (!rewrite) h = fs.lstatSync(osPath(cabs), { bigint: true })
      }
      else rewrite = !sameType
      // attributes to set on a path that stays: stat fields, or xattrs (setxattr does not change mtime)
      const metaChanged = h !== undefined && (metaDiffers(c, h) || (o.xattrs !== undefined && xattrsDiffer(c, cabs, o.xattrs)))
      if (rewrite || metaChanged) changed = true
      if (!apply) {
        if ((rewrite || multi) && h) freezeTree(crel)
        if (type === S_IFDIR) await walk(c, crel, false)
        continue
      }
      try {
      if (rewrite) {
        if (h && (type === S_IFDIR || !sameType || type !== S_IFREG)) fs.rmSync(osPath(cabs), { recursive: true, force: true })
        if (type === S_IFDIR) fs.mkdirSync(osPath(cabs), { mode: 0o700 })
        else if (linkTo) { const tmp = `${abs}/${WRITEBACK_TEMP_PREFIX}${process.pid}`; fs.linkSync(osPath(linkTo), osPath(tmp)); fs.renameSync(osPath(tmp), osPath(cabs)) }
        else if (type === S_IFREG && sameType && c.lowerKey && c.blocks) {
          // a lower hard link changed through the mount: write the shared inode in place, so its
          // other names (unlisted directories, outside the workspace) change too, as they would natively
          writeContent(view, c, cabs)
        } else if (type === S_IFREG) { const tmp = `${abs}/${WRITEBACK_TEMP_PREFIX}${process.pid}`; writeContent(view, c, tmp); fs.renameSync(osPath(tmp), osPath(cabs)) }
        else makeSpecial(c, cabs)
        stats.written++
      }
      if (type === S_IFDIR) await walk(c, crel, true)
      if (multi && !links.has(c.ino)) links.set(c.ino, cabs)
      if (rewrite || !h || metaChanged || type === S_IFDIR) applyMeta(c, cabs, times, o.xattrs, true)
      } catch (e: any) {
        // keep going with the siblings; the caller reports every path that failed
        stats.errors.push(`${crel}: ${e.code ?? ''} ${e.message}`.trim())
      }
    }
    if (!apply && changed && dirOnDisk) {
      // the stats taken before this walk touched the children (readlink above, freezing below)
      const listing = o.ws.lower.known(rel) ?? [...have].map(([name, hs]): LowerEntry => {
        const st = lowerStat(hs)
        const x = lowerXattrs(`${abs}/${name}`, o.xattrs?.read)
        if (x) st.xattrs = x
        return { name, st }
      })
      freeze(rel, { listing })
    }
  }

  const rootRec = await view.root()
  const apply = o.apply ?? true
  if (apply) await walk(rootRec, '', false)
  // the rest of the directory too: once the daemon is gone the directory is the user's again, and
  // an edit there must not change what a checkpoint of this session restores (copies of content
  // frozen before are shared: blocks are deduplicated and unchanged copies extend their range)
  try {
    optional = true
    freezeTree('')
  } catch (e) {
    // the paths write-back changes are frozen already (pass 1); the rest is not worth failing the unmount for
    if (!isNoSpace(e)) throw e
    stats.unfrozen = (e as Error).message
  }
  await setTimes(restoreTimes)
  if (frozenNow.size > 0) {
    await o.blocks.sync()
    const batch = o.db.batch()
    o.blocks.commitTo(batch)
    for (const [rel, list] of frozenNow) batch.put('lower', frozenKey(rel), encodeFrozen(list))
    await batch.write({ sync: true })
  }
  if (!apply) return stats
  await walk(rootRec, '', true)
  applyMeta(rootRec, root, times, o.xattrs, true)
  await setTimes(times)
  return stats
}
