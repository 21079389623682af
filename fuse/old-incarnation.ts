/**
 * One old incarnation of a file (issue 13; DECISIONS.md "Open files keep
 * their content across a restore"): the node id the kernel held for a file
 * when a restore changed its content or type (or removed it). The kernel
 * keeps that node id for as long as a descriptor, a mapping or a cached
 * dentry holds the old inode; until it forgets it, every request naming it
 * is answered here, from the file as it was before the restore
 * (fs/api.ts FrozenInode), never from the restored state.
 *
 * What it answers: the stat as it was, with nlink 0 (it is as if unlinked)
 * and the same st_ino (the inode number, which the new incarnation reports
 * too: git's index stays valid); reads; writes and setattr (truncate,
 * chmod, utimens) into a private copy held in memory, readable back through
 * the old node id and never reaching the workspace; xattrs, likewise
 * private once changed. The private copy is made of whole 64 KiB blocks,
 * copied from the frozen content on their first write; it is capped
 * (`OldWriteBudget`), past which a write fails with ENOSPC. It is dropped
 * with the incarnation when the kernel forgets the node id
 * (fuse/incarnations.ts counts what was dropped).
 */
import { BLOCK_SIZE, type Ino } from '../base/types.js'
import { FsError, ENOSPC, ENODATA, EEXIST, EINVAL, EFBIG, ENOTSUP } from '../base/errno.js'
import type { AttrChange, FrozenInode, Stat } from '../fs/api.js'

/** Bytes of private copy one old incarnation may hold (whole 64 KiB blocks). */
export const OLD_WRITE_LIMIT = 64 * 1024 * 1024
/** Bytes of private copy all old incarnations of a mount may hold together. */
export const OLD_WRITE_TOTAL_LIMIT = 256 * 1024 * 1024
/** Largest size an old incarnation may grow to (truncate), bytes: the workspace's own limit (16 TiB - 64 KiB). */
const MAX_SIZE = (2 ** 28 - 1) * BLOCK_SIZE

/** The private copies' memory, shared by all old incarnations of a mount: bytes held and the limit (OLD_WRITE_TOTAL_LIMIT). */
export interface OldWriteBudget { used: number, limit: number }

const XATTR_CREATE = 1
const XATTR_REPLACE = 2

/** An old incarnation: node id (ino, inc) the kernel still holds, answering from the file before a restore. */
export class OldIncarnation {
  /** the kernel's lookup count of this node id (forget takes it back; at 0 the incarnation is dropped) */
  lookups: number
  /** bytes written through it (into the private copy) */
  written = 0
  /** bytes of private copy held (whole blocks) */
  private held = 0
  /** private blocks, block index → BLOCK_SIZE bytes (the file's bytes there after the restore's writes) */
  private readonly blocks = new Map<number, Buffer>()
  /** the frozen bytes are read below this offset only (a truncate below the frozen size lowers it; zeros beyond) */
  private frozenEnd: number
  private readonly st: Stat
  private xattrs: Record<string, Uint8Array>

  /** `lookups`: the count the kernel held when the restore made it old; `budget`: shared with the mount's other old incarnations. */
  constructor (readonly ino: Ino, readonly inc: number, private readonly frozen: FrozenInode, lookups: number, private readonly budget: OldWriteBudget) {
    this.lookups = lookups
    this.st = { ...frozen.stat, nlink: 0 }
    this.frozenEnd = frozen.stat.size
    this.xattrs = frozen.xattrs
  }

  /** Its names before the restore (directory inode, name): the kernel's cached names of it are deleted at the restore. */
  get links (): ReadonlyArray<readonly [Ino, string]> { return this.frozen.links }

  /** Its stat: as before the restore, nlink 0, with what was changed through it since. */
  stat (): Stat { return { ...this.st } }

  /** Bytes of private copy held. */
  get privateBytes (): number { return this.held }

  /** Reads up to `len` bytes at `pos` into buf (from offset 0); returns the count. */
  read (buf: Buffer, len: number, pos: number): number {
    const end = Math.min(pos + len, this.st.size)
    if (end <= pos) return 0
    let out = 0
    while (pos < end) {
      const k = Math.floor(pos / BLOCK_SIZE)
      const from = pos - k * BLOCK_SIZE
      const n = Math.min(BLOCK_SIZE - from, end - pos)
      const b = this.blocks.get(k)
      if (b !== undefined) b.copy(buf, out, from, from + n)
      else {
        const fz = Math.max(0, Math.min(n, this.frozenEnd - pos))
        const got = fz > 0 ? this.frozen.read(buf.subarray(out, out + fz), fz, pos) : 0
        if (got < n) buf.fill(0, out + got, out + n)
      }
      out += n
      pos += n
    }
    return out
  }

  /** The private block k, copied from the frozen content on first use; ENOSPC past the limits. */
  private block (k: number): Buffer {
    const had = this.blocks.get(k)
    if (had !== undefined) return had
    if (this.held + BLOCK_SIZE > OLD_WRITE_LIMIT || this.budget.used + BLOCK_SIZE > this.budget.limit) throw this.noRoom()
    const b = Buffer.alloc(BLOCK_SIZE)
    const start = k * BLOCK_SIZE
    const fz = Math.min(BLOCK_SIZE, this.frozenEnd - start)
    if (fz > 0) this.frozen.read(b, fz, start)
    this.blocks.set(k, b)
    this.held += BLOCK_SIZE
    this.budget.used += BLOCK_SIZE
    return b
  }

  private noRoom (): FsError {
    return new FsError(ENOSPC, `inode ${this.ino}: a descriptor opened before a restore writes to a private copy of the file as it was, kept in memory up to ${OLD_WRITE_LIMIT >> 20} MiB per file and ${this.budget.limit >> 20} MiB in all; that is full (the workspace itself is not changed by such writes)`)
  }

  /** Writes `data` at `pos` (at the end with `append`) into the private copy; returns its length. ENOSPC past the limits (nothing written then), EFBIG past the largest size. */
  write (data: Buffer, pos: number, append: boolean, now: bigint): number {
    if (append) pos = this.st.size
    const end = pos + data.length
    if (end > MAX_SIZE) throw new FsError(EFBIG, `a write up to byte ${end} would pass the largest file size`)
    // every block first, so that a write refused for room changes nothing
    const first = Math.floor(pos / BLOCK_SIZE)
    const last = Math.floor((end - 1) / BLOCK_SIZE)
    let need = 0
    for (let k = first; k <= last && data.length > 0; k++) if (!this.blocks.has(k)) need += BLOCK_SIZE
    if (need > 0 && (this.held + need > OLD_WRITE_LIMIT || this.budget.used + need > this.budget.limit)) throw this.noRoom()
    let src = 0
    while (src < data.length) {
      const k = Math.floor(pos / BLOCK_SIZE)
      const from = pos - k * BLOCK_SIZE
      const n = Math.min(BLOCK_SIZE - from, data.length - src)
      data.copy(this.block(k), from, src, src + n)
      src += n
      pos += n
    }
    if (end > this.st.size) this.st.size = end
    this.st.blocks = Math.ceil(this.st.size / 512)
    this.st.mtime = this.st.ctime = now
    this.written += data.length
    return data.length
  }

  /** chmod, chown, truncate, utimens of the old incarnation only; returns the new stat. */
  setattr (c: AttrChange, now: bigint): Stat {
    if (c.mode !== undefined) this.st.mode = (this.st.mode & 0o170000) | (c.mode & 0o7777)
    if (c.uid !== undefined) this.st.uid = c.uid
    if (c.gid !== undefined) this.st.gid = c.gid
    if (c.size !== undefined) this.truncate(c.size)
    if (c.atime !== undefined) this.st.atime = c.atime === 'now' ? now : c.atime
    if (c.mtime !== undefined) this.st.mtime = c.mtime === 'now' ? now : c.mtime
    this.st.ctime = now
    if (c.size !== undefined && c.mtime === undefined) this.st.mtime = now
    return this.stat()
  }

  private truncate (size: number): void {
    if (size < 0) throw new FsError(EINVAL, `invalid size ${size}`)
    if (size > MAX_SIZE) throw new FsError(EFBIG, `size ${size} is above the largest file size`)
    if (size < this.st.size) {
      for (const [k, b] of [...this.blocks]) {
        const start = k * BLOCK_SIZE
        if (start >= size) { this.blocks.delete(k); this.held -= BLOCK_SIZE; this.budget.used -= BLOCK_SIZE } else if (start + BLOCK_SIZE > size) b.fill(0, size - start)
      }
      this.frozenEnd = Math.min(this.frozenEnd, size)
    }
    this.st.size = size
    this.st.blocks = Math.ceil(size / 512)
  }

  /** Byte ranges that may hold data, increasing (SEEK_DATA/SEEK_HOLE): the frozen ones below frozenEnd and the private blocks. */
  dataRanges (): Array<[number, number]> {
    const out: Array<[number, number]> = []
    for (const [s, e] of this.frozen.dataRanges()) if (s < this.frozenEnd) out.push([s, Math.min(e, this.frozenEnd)])
    for (const k of this.blocks.keys()) out.push([k * BLOCK_SIZE, Math.min((k + 1) * BLOCK_SIZE, this.st.size)])
    out.sort((a, b) => a[0] - b[0])
    const merged: Array<[number, number]> = []
    for (const [s, e] of out) {
      if (e <= s) continue
      const last = merged[merged.length - 1]
      if (last !== undefined && s <= last[1]) last[1] = Math.max(last[1], e)
      else merged.push([s, e])
    }
    return merged
  }

  /** The symlink target (EINVAL for anything else). */
  readlink (): string {
    if (this.frozen.target === undefined) throw new FsError(EINVAL, `inode ${this.ino}: not a symlink`)
    return this.frozen.target
  }

  /** An xattr's value, or undefined. */
  xattr (name: string): Uint8Array | undefined {
    return Object.prototype.hasOwnProperty.call(this.xattrs, name) ? this.xattrs[name] : undefined
  }

  /** Its xattr names (the kernel's caller filter is the adapter's). */
  listxattr (): string[] { return Object.keys(this.xattrs) }

  /** setxattr of the old incarnation only (XATTR_CREATE 1, XATTR_REPLACE 2); ENOTSUP outside user., trusted., security., EEXIST / ENODATA as the flags say. */
  setxattr (name: string, value: Uint8Array, flags: number, now: bigint): void {
    if (!/^(user|trusted|security)\../.test(name)) throw new FsError(ENOTSUP, `xattr namespace of ${name} is not supported`)
    const has = this.xattr(name) !== undefined
    if ((flags & XATTR_CREATE) !== 0 && has) throw new FsError(EEXIST, `xattr ${name} exists`)
    if ((flags & XATTR_REPLACE) !== 0 && !has) throw new FsError(ENODATA, `no xattr ${name}`)
    this.xattrs = { ...this.xattrs, [name]: new Uint8Array(value) }
    this.st.ctime = now
  }

  /** removexattr of the old incarnation only; ENODATA when it has no such xattr. */
  removexattr (name: string, now: bigint): void {
    if (this.xattr(name) === undefined) throw new FsError(ENODATA, `no xattr ${name}`)
    const x = { ...this.xattrs }
    delete x[name]
    this.xattrs = x
    this.st.ctime = now
  }

  /** The kernel forgot the node id: the private copy goes, the frozen record is released (gc may collect it). */
  drop (): void {
    this.budget.used -= this.held
    this.held = 0
    this.blocks.clear()
    this.frozen.release()
  }
}
