/**
 * The lower layer: the workspace directory as it was when a mount session
 * started, read through a directory fd opened before the mount covered it
 * (`/proc/self/fd/N/...` resolves below the mount point, not through it, so
 * the daemon never touches its own mount). Nothing here ever writes the lower
 * directory.
 *
 * Unmount writes the final state back into the directory (fs/writeback.ts),
 * which would change what old checkpoints' lower references point at. Before
 * it changes a path it freezes that path: a directory's listing (with each
 * child's stat) or a file's content (copied into blocks) is recorded for the
 * range of sessions that saw it, and references into those sessions resolve
 * to the frozen copy from then on (see FrozenPath).
 */
import fs from 'node:fs'
import { execFileSync } from 'node:child_process'
import { BlockList } from './blocklist.js'
import { type InodeRecord, type LowerRef, ROOT_INO, S_IFMT, S_IFDIR, S_IFREG, S_IFLNK, storedName, nameOfStored } from './inode.js'
import { FsError, EIO } from '../base/errno.js'
import { decodeName, encodeName, isByteName, osPath, readdirNames, readlinkName } from '../base/names.js'

/** Name prefix of write-back's temporary files in the directory (`<prefix><pid>`, renamed over their target). */
export const WRITEBACK_TEMP_PREFIX = '.rewindfs-wb-'

/** The stat fields the workspace keeps of a lower entry (times in ns). */
export interface LowerStat {
  mode: number
  uid: number
  gid: number
  rdev: number
  size: number
  atime: bigint
  mtime: bigint
  ctime: bigint
  nlink: number
  /** "dev:ino" of the lower file, joins hard links */
  key: string
  /** extended attributes (user.*, trusted.*, security.*), absent when none or not read */
  xattrs?: Record<string, Uint8Array>
}

/**
 * Reads all xattrs of a native path without following symlinks, null when
 * none (fuse/xattr.ts lxattrs; daemon.ts passes it in, daemon/ never loads
 * the binding itself).
 */
export type ReadXattrs = (path: string) => Record<string, Uint8Array> | null

/** xattr namespaces the workspace serves (fs/workspace.ts checkXattrName); others are not imported. */
const IMPORTED_XATTR = /^(user|trusted|security)\./

/**
 * The importable xattrs of `abs` (one llistxattr, lgetxattr only when it
 * lists something), or undefined. A failure to read them (the entry vanished,
 * EACCES) imports none rather than failing the listing.
 */
export function lowerXattrs (abs: string, read: ReadXattrs | undefined): Record<string, Uint8Array> | undefined {
  if (!read) return undefined
  let all: Record<string, Uint8Array> | null
  try { all = read(abs) } catch { return undefined }
  if (!all) return undefined
  let out: Record<string, Uint8Array> | undefined
  for (const name of Object.keys(all)) {
    if (!IMPORTED_XATTR.test(name)) continue
    ;(out ??= {})[name] = new Uint8Array(all[name])
  }
  return out
}

/** lstat (and xattrs) of `dir/name` as a LowerEntry. */
export function lowerEntry (dir: string, name: string, read?: ReadXattrs): LowerEntry {
  const abs = `${dir}/${name}`
  const st = lowerStat(fs.lstatSync(osPath(abs), { bigint: true }))
  const x = lowerXattrs(abs, read)
  if (x) st.xattrs = x
  return { name, st }
}

/** One entry of a lower directory listing. */
export interface LowerEntry { name: string, st: LowerStat }

/**
 * A frozen copy of a lower path, valid for references of sessions
 * `from`..`to` (inclusive): a directory listing, a file's content as blocks,
 * or `absent` for a path that did not exist in those sessions.
 */
export interface FrozenPath {
  from: number
  to: number
  listing?: LowerEntry[]
  /** the file's block list in its persisted form (BlockList.encode; format 2's dense arrays too) */
  blocks?: number[]
  target?: string
}

/**
 * The store key (kind `lower`) of a lower path's frozen copies: the path
 * itself when it is valid UTF-8 (as always), else NUL followed by the hex of
 * its bytes (LevelDB keys are written as UTF-8 and no path holds NUL, so the
 * two forms never meet). FORMAT.md "Names that are not UTF-8".
 */
export function frozenKey (rel: string): string {
  return isByteName(rel) ? '\0' + Buffer.from(encodeName(rel)).toString('hex') : rel
}

/** Inverse of frozenKey. */
export function relOfFrozenKey (key: string): string {
  return key.startsWith('\0') ? decodeName(Buffer.from(key.slice(1), 'hex')) : key
}

/** FrozenPath[] in the store's form: listing names and symlink targets that are not UTF-8 as bin (fs/inode.ts storedName). */
export function encodeFrozen (list: FrozenPath[]): unknown {
  if (!list.some(f => (f.target !== undefined && isByteName(f.target)) || f.listing?.some(e => isByteName(e.name)))) return list
  return list.map(f => {
    const o: Record<string, unknown> = { ...f }
    if (f.target !== undefined) o.target = storedName(f.target)
    if (f.listing) o.listing = f.listing.map(e => ({ ...e, name: storedName(e.name) }))
    return o
  })
}

/** Inverse of encodeFrozen (in place). */
export function decodeFrozen (list: any[]): FrozenPath[] {
  for (const f of list) {
    if (f.target !== undefined) f.target = nameOfStored(f.target)
    if (Array.isArray(f.listing)) for (const e of f.listing) e.name = nameOfStored(e.name)
  }
  return list as FrozenPath[]
}

const decoded = new WeakMap<number[], BlockList>()

/**
 * The BlockList of a frozen copy's persisted block list, decoded once per
 * array (frozen copies are never changed). Callers must not change it.
 */
export function frozenBlocks (blocks: number[]): BlockList {
  let l = decoded.get(blocks)
  if (!l) { l = BlockList.decode(blocks); decoded.set(blocks, l) }
  return l
}

/**
 * True when two frozen copies hold the same thing: the same block ids (blocks
 * are content-addressed, so equal ids are equal bytes), the same symlink
 * target, or listings with the same names and every LowerStat field equal
 * (times to the ns, xattr bytes). Ranges are not compared.
 */
export function sameFrozen (a: Omit<FrozenPath, 'from' | 'to'>, b: Omit<FrozenPath, 'from' | 'to'>): boolean {
  if (a.target !== b.target) return false
  if ((a.blocks === undefined) !== (b.blocks === undefined) || (a.listing === undefined) !== (b.listing === undefined)) return false
  if (a.blocks && b.blocks && !frozenBlocks(a.blocks).equals(frozenBlocks(b.blocks))) return false
  if (a.listing && b.listing) {
    if (a.listing.length !== b.listing.length) return false
    for (let i = 0; i < a.listing.length; i++) {
      const x = a.listing[i]!
      const y = b.listing[i]!
      if (x.name !== y.name || !sameLowerStat(x.st, y.st)) return false
    }
  }
  return true
}

function sameLowerStat (x: LowerStat, y: LowerStat): boolean {
  if (x.mode !== y.mode || x.uid !== y.uid || x.gid !== y.gid || x.rdev !== y.rdev || x.size !== y.size || x.nlink !== y.nlink || x.key !== y.key) return false
  if (x.atime !== y.atime || x.mtime !== y.mtime || x.ctime !== y.ctime) return false
  const xn = Object.keys(x.xattrs ?? {}).sort()
  const yn = Object.keys(y.xattrs ?? {}).sort()
  if (xn.join('\0') !== yn.join('\0')) return false
  return xn.every(n => Buffer.from(x.xattrs![n]!).equals(Buffer.from(y.xattrs![n]!)))
}

/** Debian's python3 when present (as fs/materialize.ts). */
const PYTHON = fs.existsSync('/usr/bin/python3') ? '/usr/bin/python3' : 'python3'

/**
 * Lists every directory below `root` (bytes as hex, so no name is lost to
 * decoding) through fds opened with O_NOATIME: getdents on such an fd does not
 * touch the directory's atime (Linux file_accessed), which Node's readdir
 * cannot avoid. Falls back to a plain open where O_NOATIME is refused (EPERM:
 * not the owner and no CAP_FOWNER).
 */
const LIST_TREE = `import os,sys,json
root=os.fsencode(sys.argv[1]); out={}; stack=[b'']
F=os.O_RDONLY|os.O_DIRECTORY|os.O_NOFOLLOW
while stack:
 rel=stack.pop(); p=root+b'/'+rel if rel else root
 try:
  try: fd=os.open(p,F|os.O_NOATIME)
  except PermissionError: fd=os.open(p,F)
 except OSError: continue
 try:
  names=[os.fsencode(n) for n in os.listdir(fd)]
  out[rel.hex()]=[n.hex() for n in names]
  for n in names:
   try:
    if os.stat(n,dir_fd=fd,follow_symlinks=False).st_mode&0o170000==0o040000: stack.append(rel+b'/'+n if rel else n)
   except OSError: pass
 finally: os.close(fd)
json.dump(out,sys.stdout)
`

/**
 * The names in every directory below `root` (workspace-relative paths, ''
 * for `root` itself), read without changing any directory's atime (one
 * python3 process, see LIST_TREE). Names are decoded losslessly
 * (base/names.ts: bytes that are not UTF-8 become lone surrogates). Throws
 * when python3 fails.
 */
export function listTreeNoAtime (root: string): Map<string, string[]> {
  const raw = JSON.parse(execFileSync(PYTHON, ['-c', LIST_TREE, root], { maxBuffer: 1024 * 1024 * 1024 }).toString()) as Record<string, string[]>
  const dec = (hex: string): string => decodeName(Buffer.from(hex, 'hex'))
  return new Map(Object.entries(raw).map(([rel, names]) => [dec(rel), names.map(dec)]))
}

/** Converts Node's bigint lstat to LowerStat. */
export function lowerStat (st: fs.BigIntStats): LowerStat {
  return {
    mode: Number(st.mode),
    uid: Number(st.uid),
    gid: Number(st.gid),
    rdev: Number(st.rdev),
    size: Number(st.size),
    atime: st.atimeNs,
    mtime: st.mtimeNs,
    ctime: st.ctimeNs,
    nlink: Number(st.nlink),
    key: `${st.dev}:${st.ino}`
  }
}

/** Read access to lower layers of the current and earlier sessions. */
export class LowerLayer {
  /**
   * @param root path that reaches the workspace directory below the mount (`/proc/self/fd/N`)
   * @param session number of the current mount session
   * @param frozen frozen copies by workspace-relative path (loaded from the store at start)
   * @param readXattrs reads a lower path's xattrs (fuse/xattr.ts lxattrs); without it none are imported
   */
  constructor (readonly root: string, readonly session: number, private readonly frozen: Map<string, FrozenPath[]>, readonly readXattrs?: ReadXattrs) {}

  /**
   * Freezes `rel` for every session up to `session` not frozen yet: the
   * copy `f` answers their references from now on. A copy with the same
   * content as the one of the sessions just before extends that copy's
   * range instead of adding one. Returns the path's list of copies (to
   * persist, kind `lower`), or null when `rel` is already frozen for
   * `session`. In memory only; the caller writes the list.
   */
  freeze (rel: string, session: number, f: Omit<FrozenPath, 'from' | 'to'>): FrozenPath[] | null {
    const list = this.frozen.get(rel) ?? []
    const from = list.reduce((m, x) => Math.max(m, x.to), 0) + 1
    if (from > session) return null
    const last = list.find(x => x.to === from - 1)
    if (last !== undefined && sameFrozen(last, f)) last.to = session
    else list.push({ from, to: session, ...f })
    this.frozen.set(rel, list)
    return list
  }

  /** Replaces the frozen copies of `rel` (garbage collection keeps `kept`; [] removes the path's entry). */
  setFrozen (rel: string, kept: FrozenPath[]): void {
    if (kept.length > 0) this.frozen.set(rel, kept)
    else this.frozen.delete(rel)
  }

  /** A copy of every frozen list, sharing the copies themselves (write-back's view of the layer as it was before it froze anything). */
  frozenCopy (): Map<string, FrozenPath[]> {
    return new Map([...this.frozen].map(([k, v]) => [k, v.slice()]))
  }

  /**
   * Listings read from the live directory by this process, by path. Reading
   * the directory changes what it shows: getdents updates the directory's
   * atime and readlink a symlink's (relatime), so a second listing of the
   * same path (a restore to a checkpoint where it was not listed yet, a view
   * of such a checkpoint) would show other atimes than the first, and the
   * restored state would not be the checkpoint's. The first listing answers
   * every later one (O(entries listed) memory, as the records themselves).
   */
  private readonly listings = new Map<string, LowerEntry[]>()

  /** Absolute path of a workspace-relative lower path. */
  pathOf (p: string): string { return p === '' ? this.root : `${this.root}/${p}` }

  /** The frozen copy that answers `ref`, or undefined when the live lower directory does. */
  frozenFor (ref: LowerRef): FrozenPath | undefined {
    const list = this.frozen.get(ref.p)
    if (!list) return undefined
    return list.find(f => f.from <= ref.s && ref.s <= f.to)
  }

  /** True when the directory on disk still holds what `ref` names (not frozen). */
  isLive (ref: LowerRef): boolean { return this.frozenFor(ref) === undefined }

  /** stat of the lower root (the workspace directory itself; the fd path is a magic link, so it is followed). */
  statRoot (): LowerStat {
    const st = lowerStat(fs.statSync(this.root, { bigint: true }))
    // the fd path is a magic link: lxattrs would read the link itself, so go through "."
    const x = lowerXattrs(`${this.root}/.`, this.readXattrs)
    if (x) st.xattrs = x
    return st
  }

  /** Listing of a lower directory with each child's stat and xattrs. Throws FsError(EIO) when it cannot be read. */
  list (ref: LowerRef): LowerEntry[] {
    const f = this.frozenFor(ref)
    if (f) {
      if (!f.listing) throw new FsError(EIO, `frozen lower path ${ref.p} is not a directory`)
      return f.listing
    }
    const known = this.listings.get(ref.p)
    if (known) return known
    const dir = this.pathOf(ref.p)
    try {
      const names = readdirNames(dir)
      const out: LowerEntry[] = []
      for (const name of names) out.push(lowerEntry(dir, name, this.readXattrs))
      this.listings.set(ref.p, out)
      return out
    } catch (e: any) {
      throw new FsError(EIO, `cannot read lower directory ${ref.p || '.'}: ${e.message}`)
    }
  }

  /** The listing of lower path `p` this process read from the live directory, if it did (see `listings`). */
  known (p: string): LowerEntry[] | undefined { return this.listings.get(p) }

  /** Target of a lower symlink. */
  readlink (ref: LowerRef): string {
    const f = this.frozenFor(ref)
    if (f?.target !== undefined) return f.target
    return readlinkName(this.pathOf(ref.p))
  }

  /**
   * Content source of a lower file: frozen blocks, or an fd opened read-only
   * on the live lower file (the caller closes it).
   */
  openContent (ref: LowerRef): { blocks: BlockList } | { fd: number } {
    const f = this.frozenFor(ref)
    if (f) {
      if (!f.blocks) throw new FsError(EIO, `frozen lower path ${ref.p} is not a file`)
      return { blocks: frozenBlocks(f.blocks) }
    }
    const flags = fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW
    try {
      // O_NOATIME: reading through the mount must not change the user's files (needs ownership or CAP_FOWNER)
      const abs = osPath(this.pathOf(ref.p))
      try { return { fd: fs.openSync(abs, flags | fs.constants.O_NOATIME) } } catch (e: any) { if (e.code !== 'EPERM') throw e }
      return { fd: fs.openSync(abs, flags) }
    } catch (e: any) {
      throw new FsError(EIO, `cannot open lower file ${ref.p}: ${e.message}`)
    }
  }
}

/**
 * The root record of a new session: the lower directory's root as it is
 * now (mode, owner, times, xattrs, subdirectory count), its listing left
 * in the directory (lower reference `{ s: lower.session, p: '' }`), so a
 * mount is O(1). The daemon's fresh start and the FUSE-free test builder
 * both make their root with it.
 */
export function rootOfLower (lower: LowerLayer): InodeRecord {
  const ls = lower.statRoot()
  const root: InodeRecord = {
    ino: ROOT_INO, mode: ls.mode, uid: ls.uid, gid: ls.gid, rdev: 0, size: 0,
    atime: ls.atime, mtime: ls.mtime, ctime: ls.ctime, links: [], lower: { s: lower.session, p: '' }, subdirs: Math.max(0, ls.nlink - 2)
  }
  if (ls.xattrs) root.xattrs = ls.xattrs
  return root
}

/**
 * The record of a lower entry `e` named `name` in directory `parent` (whose
 * listing comes from lower reference `ref`), with inode number `ino`:
 * content and listing stay lower, a symlink's target is read now, and a hard
 * link counts its names not seen yet in `unseen`.
 */
export function recordOfLower (lower: LowerLayer, ino: number, parent: number, ref: LowerRef, e: LowerEntry): InodeRecord {
  const st = e.st
  const type = st.mode & S_IFMT
  const sub = { s: ref.s, p: ref.p === '' ? e.name : `${ref.p}/${e.name}` }
  const r: InodeRecord = {
    ino, mode: st.mode, uid: st.uid, gid: st.gid, rdev: st.rdev, size: st.size,
    atime: st.atime, mtime: st.mtime, ctime: st.ctime, links: [[parent, e.name]]
  }
  if (st.xattrs) r.xattrs = { ...st.xattrs }
  if (type === S_IFDIR) { r.lower = sub; r.size = 0; r.subdirs = Math.max(0, st.nlink - 2) } else if (type === S_IFREG) r.lower = sub
  else if (type === S_IFLNK) r.target = lower.readlink(sub)
  if (type !== S_IFDIR && st.nlink > 1) { r.lowerKey = st.key; r.unseen = st.nlink - 1 }
  return r
}

/**
 * The paths of the lower directory of `lower` (the current session) changed
 * since `sinceMs` (ms since the epoch) by something other than this
 * session's daemon: ctime later than the session's start (any write, chmod,
 * rename, or an entry added or removed in a directory changes it, and no one
 * can set it back). Paths frozen for the session do not count (write-back
 * froze them before it changed them), nor paths a frozen listing does not
 * name (the session never saw them), nor write-back's temporary files.
 * Walks the whole directory `dir` by its path (listTreeNoAtime runs in
 * another process, to which /proc/self/fd/N means nothing; call it before
 * the mount covers `dir`), one lstat a path. Returns
 * workspace-relative paths ('' is the directory itself), sorted.
 */
export function changedOutside (lower: LowerLayer, dir: string, sinceMs: number): string[] {
  const since = BigInt(Math.floor(sinceMs) + 1) * 1000000n // the whole start millisecond counts as before
  const s = lower.session
  const out: string[] = []
  const tree = listTreeNoAtime(dir)
  const visit = (rel: string): void => {
    const frozen = lower.frozenFor({ s, p: rel })
    let st: fs.BigIntStats | undefined
    try { st = fs.lstatSync(osPath(rel === '' ? dir : `${dir}/${rel}`), { bigint: true }) } catch { return }
    if (frozen === undefined && st.ctimeNs > since) out.push(rel)
    if (!st.isDirectory()) return
    const seen = frozen?.listing !== undefined ? new Set(frozen.listing.map(e => e.name)) : null
    for (const name of tree.get(rel) ?? []) {
      if (name.startsWith(WRITEBACK_TEMP_PREFIX)) continue
      if (seen !== null && !seen.has(name)) continue
      visit(rel === '' ? name : `${rel}/${name}`)
    }
  }
  visit('')
  return out.sort()
}
