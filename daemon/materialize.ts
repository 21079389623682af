/**
 * Writing records of a tree view as plain files on a native filesystem
 * (export and write-back). Never used on the mount itself.
 *
 * Times are exact to the nanosecond: Node's utimes takes seconds as a
 * double (about a quarter of a microsecond), so times are collected in a
 * TimeBatch and set at the end by one python3 process calling
 * os.utime(ns=..., follow_symlinks=False) (utimensat(2)), children before
 * their directories. Extended attributes are not written (Node has no
 * xattr call); everything else is: content with holes, modes, owners,
 * symlinks, hard links, fifos and device nodes, empty directories.
 */
import fs from 'node:fs'
import { execFileSync, execFile } from 'node:child_process'
import { BLOCK_SIZE } from './types.js'
import { type InodeRecord, S_IFMT, S_IFDIR, S_IFREG, S_IFLNK, S_IFIFO, S_IFCHR, S_IFBLK } from './inode.js'
import type { TreeView } from './tree.js'

const ZERO = Buffer.alloc(BLOCK_SIZE)

/** Writes the content of a file record to `abs` (created or truncated), keeping holes. Returns bytes. */
export function writeContent (view: TreeView, r: InodeRecord, abs: string): number {
  const fd = fs.openSync(abs, fs.constants.O_WRONLY | fs.constants.O_CREAT | fs.constants.O_TRUNC | fs.constants.O_NOFOLLOW, 0o600)
  try {
    const buf = Buffer.allocUnsafe(BLOCK_SIZE)
    for (let off = 0; off < r.size; off += BLOCK_SIZE) {
      const n = view.read(r, buf, Math.min(BLOCK_SIZE, r.size - off), off)
      const chunk = buf.subarray(0, n)
      if (chunk.equals(ZERO.subarray(0, n))) continue
      let done = 0
      while (done < n) done += fs.writeSync(fd, chunk, done, n - done, off + done)
    }
    fs.ftruncateSync(fd, r.size)
  } finally { fs.closeSync(fd) }
  return r.size
}

/** Times to set, in order: [path, atime ns, mtime ns] (decimal strings). */
export type TimeBatch = Array<[string, string, string]>

const SET_TIMES = 'import json,os,sys\nfor p,a,m in json.load(sys.stdin):\n os.utime(p, ns=(int(a), int(m)), follow_symlinks=False)\n'

/** Sets every time of the batch exactly (one python3 process). Throws with its stderr on failure. */
export async function setTimes (batch: TimeBatch): Promise<void> {
  if (batch.length === 0) return
  await new Promise<void>((resolve, reject) => {
    const child = execFile('python3', ['-c', SET_TIMES], { maxBuffer: 16 * 1024 * 1024 }, (err, _out, stderr) => {
      if (err) reject(new Error(`setting file times failed: ${stderr || err.message}`)); else resolve()
    })
    child.stdin!.end(JSON.stringify(batch))
  })
}

/** Sets owner and mode of `abs` from the record and queues its times (lchown for symlinks). */
export function applyMeta (r: InodeRecord, abs: string, times: TimeBatch): void {
  const type = r.mode & S_IFMT
  try { fs.lchownSync(abs, r.uid, r.gid) } catch (e: any) { if (e.code !== 'EPERM') throw e }
  if (type !== S_IFLNK) fs.chmodSync(abs, r.mode & 0o7777)
  times.push([abs, r.atime.toString(), r.mtime.toString()])
}

/** Creates a non-directory, non-regular node (symlink, fifo, device) at `abs`. */
export function makeSpecial (r: InodeRecord, abs: string): void {
  const type = r.mode & S_IFMT
  const mode = (r.mode & 0o7777).toString(8)
  if (type === S_IFLNK) fs.symlinkSync(r.target ?? '', abs)
  else if (type === S_IFIFO) execFileSync('mkfifo', ['-m', mode, abs])
  else if (type === S_IFCHR || type === S_IFBLK) execFileSync('mknod', ['-m', mode, abs, type === S_IFCHR ? 'c' : 'b', String(Math.floor(r.rdev / 256)), String(r.rdev % 256)])
  else fs.writeFileSync(abs, '') // sockets cannot be recreated without a listener: an empty file marks the place
}

/**
 * Writes `r` at `abs` (which must not exist) and, for a directory, its
 * whole subtree. `links` joins hard links: ino → first path written.
 */
export async function writeNode (view: TreeView, r: InodeRecord, abs: string, links: Map<string, string>, count: { files: number, bytes: number }, times: TimeBatch): Promise<void> {
  const type = r.mode & S_IFMT
  const key = r.ino !== 0 ? `i${r.ino}` : r.lowerKey ? `l${r.lowerKey}` : null
  if (type !== S_IFDIR && key && links.has(key)) { fs.linkSync(links.get(key)!, abs); return }
  if (type === S_IFDIR) {
    fs.mkdirSync(abs, { mode: 0o700 })
    for (const [name, c] of await view.children(r)) await writeNode(view, c, `${abs}/${name}`, links, count, times)
  } else if (type === S_IFREG) {
    count.bytes += writeContent(view, r, abs)
  } else {
    makeSpecial(r, abs)
  }
  count.files++
  applyMeta(r, abs, times)
  if (type !== S_IFDIR && key && (r.links.length > 1 || r.lowerKey)) links.set(key, abs)
}
