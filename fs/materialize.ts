/**
 * Writing records of a tree view as plain files on a native filesystem
 * (export and write-back). Never used on the mount itself.
 *
 * Times are exact to the nanosecond: Node's utimes takes seconds as a
 * double (about a quarter of a microsecond), so times are collected in a
 * TimeBatch and set at the end by one python3 process calling
 * os.utime(ns=..., follow_symlinks=False) (utimensat(2)), children before
 * their directories. Extended attributes in the user.* and trusted.*
 * namespaces are written through the XattrIo calls the daemon passes in
 * (fuse/xattr.ts: Node has no xattr API); security.* and system.* belong to
 * the kernel and LSMs and are neither written nor removed. Everything else is
 * written too: content with holes, modes, owners, symlinks, hard links,
 * fifos and device nodes, empty directories.
 */
import fs from 'node:fs'
import { isByteName, osPath } from '../base/names.js'
import { execFileSync, execFile } from 'node:child_process'
import { BLOCK_SIZE } from '../base/types.js'
import { type InodeRecord, S_IFMT, S_IFDIR, S_IFREG, S_IFLNK, S_IFIFO, S_IFCHR, S_IFBLK } from './inode.js'
import type { TreeView } from './tree.js'
import { isZeroBlock } from './blocklist.js'


/**
 * Writes the content of a file record to `abs` (created or truncated),
 * keeping holes: only the ranges that may hold data are read (a 10 TiB
 * sparse file costs its data, not 10 TiB of reads). Returns its size in bytes.
 */
export function writeContent (view: TreeView, r: InodeRecord, abs: string): number {
  const fd = fs.openSync(osPath(abs), fs.constants.O_WRONLY | fs.constants.O_CREAT | fs.constants.O_TRUNC | fs.constants.O_NOFOLLOW, 0o600)
  try {
    const buf = Buffer.allocUnsafe(BLOCK_SIZE)
    for (const [start, end] of view.ranges(r)) {
      for (let off = Math.floor(start / BLOCK_SIZE) * BLOCK_SIZE; off < end; off += BLOCK_SIZE) {
        const n = view.read(r, buf, Math.min(BLOCK_SIZE, r.size - off), off)
        const chunk = buf.subarray(0, n)
        if (isZeroBlock(chunk)) continue
        let done = 0
        while (done < n) done += fs.writeSync(fd, chunk, done, n - done, off + done)
      }
    }
    fs.ftruncateSync(fd, r.size)
  } finally { fs.closeSync(fd) }
  return r.size
}

/** Times to set, in order: [path, atime ns, mtime ns] (decimal strings). */
export type TimeBatch = Array<[string, string, string]>

/** Debian's python3 when present: a version-manager shim on PATH can cost a second per start. */
const PYTHON = fs.existsSync('/usr/bin/python3') ? '/usr/bin/python3' : 'python3'

/** mkfifo or mknod of a path given as JSON on stdin: [path, permission bits, type bits (0: fifo), major, minor]; then the mode exactly (umask) */
const MKNOD = 'import json,os,sys\np,m,t,a,b=json.load(sys.stdin)\nos.mknod(p,m|t,os.makedev(a,b)) if t else os.mkfifo(p,m)\nos.chmod(p,m)\n'

const SET_TIMES = 'import json,os,sys\nfor p,a,m in json.load(sys.stdin):\n os.utime(p, ns=(int(a), int(m)), follow_symlinks=False)\n'

/** Sets every time of the batch exactly (one python3 process). Throws with its stderr on failure. */
export async function setTimes (batch: TimeBatch): Promise<void> {
  if (batch.length === 0) return
  await new Promise<void>((resolve, reject) => {
    const child = execFile(PYTHON, ['-c', SET_TIMES], { maxBuffer: 16 * 1024 * 1024 }, (err, _out, stderr) => {
      if (err) reject(new Error(`setting file times failed: ${stderr || err.message}`)); else resolve()
    })
    child.stdin!.end(JSON.stringify(batch))
  })
}

/**
 * xattr syscalls on the native filesystem, never following symlinks
 * (fuse/xattr.ts lxattrs/lsetxattr/lremovexattr, passed in by daemon.ts).
 * Failures throw an Error whose `code` is the errno name.
 */
export interface XattrIo {
  /** all xattrs of a path, null when none */
  read(path: string): Record<string, Uint8Array> | null
  set(path: string, name: string, value: Uint8Array): void
  remove(path: string, name: string): void
}

/** Namespaces export and write-back write (and, on write-back, remove). */
const WRITTEN_XATTR = /^(user|trusted)\./
/**
 * Failures that skip one xattr instead of failing the export or write-back:
 * no privilege, no xattr support, a symlink's user.*, or a value or list the
 * target filesystem cannot hold (ext4 keeps about 4 KiB per inode; the store
 * keeps the xattr all the same).
 */
const SKIPPED_XATTR_ERRORS = new Set(['EPERM', 'EACCES', 'ENOTSUP', 'EOPNOTSUPP', 'ENOSPC', 'E2BIG', 'ERANGE'])

function skippable (e: any, alsoAbsent = false): boolean {
  return SKIPPED_XATTR_ERRORS.has(e?.code) || (alsoAbsent && e?.code === 'ENODATA')
}

function sameBytes (a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && Buffer.compare(a, b) === 0
}

/** The written-namespace xattrs of `abs` on disk (empty when none or unreadable for lack of support/privilege). */
function diskXattrs (abs: string, io: XattrIo): Record<string, Uint8Array> {
  let all: Record<string, Uint8Array> | null
  try { all = io.read(abs) } catch (e: any) { if (skippable(e)) return {}; throw e }
  const out: Record<string, Uint8Array> = {}
  for (const name of Object.keys(all ?? {})) if (WRITTEN_XATTR.test(name)) out[name] = all![name]
  return out
}

/** True when the user.* and trusted.* xattrs of `abs` on disk differ from the record's. */
export function xattrsDiffer (r: InodeRecord, abs: string, io: XattrIo): boolean {
  const have = diskXattrs(abs, io)
  const want = Object.keys(r.xattrs ?? {}).filter(n => WRITTEN_XATTR.test(n))
  if (want.length !== Object.keys(have).length) return true
  return want.some(n => have[n] === undefined || !sameBytes(have[n], r.xattrs![n]))
}

/**
 * Writes the user.* and trusted.* xattrs of the record to `abs`; with
 * `prune` (write-back over an existing path) values already on disk are left
 * alone and names on disk that the record lacks are removed. A failure for
 * lack of privilege or support skips that xattr.
 */
export function writeXattrs (r: InodeRecord, abs: string, io: XattrIo, prune: boolean): void {
  const want = r.xattrs ?? {}
  const have = prune ? diskXattrs(abs, io) : {}
  for (const name of Object.keys(want)) {
    if (!WRITTEN_XATTR.test(name)) continue
    if (have[name] !== undefined && sameBytes(have[name], want[name])) continue
    try { io.set(abs, name, want[name]) } catch (e: any) { if (!skippable(e)) throw e }
  }
  for (const name of Object.keys(have)) {
    if (Object.prototype.hasOwnProperty.call(want, name)) continue
    try { io.remove(abs, name) } catch (e: any) { if (!skippable(e, true)) throw e }
  }
}

/**
 * Sets owner, xattrs (when `xattrs` is given; `prune` removes those the
 * record lacks) and mode of `abs` from the record and queues its times
 * (lchown for symlinks). xattrs go before chmod, so the read-only mode of a
 * file just written cannot refuse them (an unprivileged daemon).
 */
export function applyMeta (r: InodeRecord, abs: string, times: TimeBatch, xattrs?: XattrIo, prune = false): void {
  const type = r.mode & S_IFMT
  try { fs.lchownSync(osPath(abs), r.uid, r.gid) } catch (e: any) { if (e.code !== 'EPERM') throw e }
  if (xattrs) writeXattrs(r, abs, xattrs, prune)
  if (type !== S_IFLNK) fs.chmodSync(osPath(abs), r.mode & 0o7777)
  times.push([abs, r.atime.toString(), r.mtime.toString()])
}

/** Creates a non-directory, non-regular node (symlink, fifo, device) at `abs`. */
export function makeSpecial (r: InodeRecord, abs: string): void {
  const type = r.mode & S_IFMT
  // mkfifo and mknod take permission bits only (-m 7755 fails): setuid, setgid and sticky by chmod after
  const mode = (r.mode & 0o777).toString(8)
  if (type === S_IFLNK) { fs.symlinkSync(osPath(r.target ?? ''), osPath(abs)); return }
  const major = Math.floor(r.rdev / 256)
  const minor = r.rdev % 256
  if (type !== S_IFIFO && type !== S_IFCHR && type !== S_IFBLK) fs.writeFileSync(osPath(abs), '') // sockets cannot be recreated without a listener: an empty file marks the place
  // mkfifo(1) and mknod(1) take the path as an argument, which Node passes as UTF-8: a path that is
  // not UTF-8 (issue 18) goes to python3 as JSON instead (os.fsencode gives back its bytes)
  else if (isByteName(abs)) execFileSync(PYTHON, ['-c', MKNOD], { input: JSON.stringify([abs, r.mode & 0o777, type === S_IFIFO ? 0 : type, major, minor]) })
  else if (type === S_IFIFO) execFileSync('mkfifo', ['-m', mode, abs])
  else execFileSync('mknod', ['-m', mode, abs, type === S_IFCHR ? 'c' : 'b', String(major), String(minor)])
  if ((r.mode & 0o7000) !== 0) fs.chmodSync(osPath(abs), r.mode & 0o7777)
}

/**
 * Writes `r` at `abs` (which must not exist) and, for a directory, its
 * whole subtree. `links` joins hard links: ino → first path written.
 */
export async function writeNode (view: TreeView, r: InodeRecord, abs: string, links: Map<string, string>, count: { files: number, bytes: number }, times: TimeBatch, xattrs?: XattrIo): Promise<void> {
  const type = r.mode & S_IFMT
  const key = r.ino !== 0 ? `i${r.ino}` : r.lowerKey ? `l${r.lowerKey}` : null
  if (type !== S_IFDIR && key && links.has(key)) { fs.linkSync(osPath(links.get(key)!), osPath(abs)); return }
  if (type === S_IFDIR) {
    fs.mkdirSync(osPath(abs), { mode: 0o700 })
    for (const [name, c] of await view.children(r)) await writeNode(view, c, `${abs}/${name}`, links, count, times, xattrs)
  } else if (type === S_IFREG) {
    count.bytes += writeContent(view, r, abs)
  } else {
    makeSpecial(r, abs)
  }
  count.files++
  applyMeta(r, abs, times, xattrs)
  if (type !== S_IFDIR && key && (r.links.length > 1 || r.lowerKey)) links.set(key, abs)
}
