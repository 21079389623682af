/**
 * A small in-memory filesystem on the libfuse 3 low-level binding
 * (fuse/ll/session.ts), for the binding's tests and bench. Not the daemon:
 * it keeps everything in Maps, names as bytes (Map keys are the names'
 * latin1 spelling, one character per byte, so no two names collide), inode
 * numbers from 1 (the root) up, incarnation always 0.
 *
 * It counts lookups per inode (lookup, mknod, mkdir, symlink, link, create,
 * readdirplus entries) and honours forget: an inode whose last name is gone
 * lives until its last lookup is forgotten and its last handle released.
 * Every request naming an inode the kernel holds no lookup of is recorded in
 * `violations` (the forget accounting the tests check).
 *
 * `sink: true` (the bench) keeps no file data: writes only move the size,
 * reads answer zeros.
 */
import type { Answer, Attr, DirEntry, DirPlusEntry, Entry, LowLevelOps, Open, Request, SetAttr, Statfs } from '../../fuse/ll/session.js'
import { FuseError, SETATTR } from '../../fuse/ll/session.js'

const E = { ENOENT: 2, EIO: 5, EBADF: 9, EEXIST: 17, EXDEV: 18, ENOTDIR: 20, EISDIR: 21, EINVAL: 22, ENOTEMPTY: 39, ENODATA: 61, ENXIO: 6, EOPNOTSUPP: 95, ERANGE: 34 }
const S_IFMT = 0o170000; const S_IFDIR = 0o040000; const S_IFREG = 0o100000; const S_IFLNK = 0o120000
const CHUNK = 4096
const RENAME_NOREPLACE = 1; const RENAME_EXCHANGE = 2
const O_TRUNC = 0o1000; const O_EXCL = 0o200

/** ns since the epoch */
export function nowNs (): bigint { return BigInt(Date.now()) * 1000000n + BigInt(Number(process.hrtime.bigint() % 1000000n)) }

/** One inode of the in-memory filesystem. */
export interface MemNode {
  ino: number
  mode: number
  uid: number
  gid: number
  rdev: number
  nlink: number
  size: number
  atime: bigint
  mtime: bigint
  ctime: bigint
  /** file data by 4 KiB chunk index (absent chunk: a hole) */
  chunks: Map<number, Buffer>
  /** directory: name (latin1 key) -> child */
  entries: Map<string, { name: Buffer, ino: number, cookie: number }> | null
  nextCookie: number
  parent: number
  target: Buffer | null
  xattrs: Map<string, Buffer>
  lookups: number
  opens: number
}

export interface MemFsOptions {
  /** keep no file data (bench) */
  sink?: boolean
  /** entry timeout of every answer, s (default: the mount's) */
  entryTimeout?: number
  /** attr timeout of every answer, s */
  attrTimeout?: number
}

const key = (b: Uint8Array): string => Buffer.from(b.buffer, b.byteOffset, b.length).toString('latin1')

/** The in-memory filesystem; `ops` is what LowLevelSession.mount takes. */
export class MemFs {
  readonly nodes = new Map<number, MemNode>()
  /** requests that named an inode with no kernel lookup left: "op ino" */
  readonly violations: string[] = []
  /** open(2) flags of every open, in order (tests of O_TRUNC) */
  readonly opens: number[] = []
  private nextIno = 2
  private nextFh = 1
  private readonly handles = new Map<number, number>()

  constructor (private readonly opts: MemFsOptions = {}) {
    const root = this.newNode(S_IFDIR | 0o777, 0, 0)
    root.ino = 1; root.nlink = 2; root.parent = 1; root.lookups = 1 // the kernel's root never gets a lookup or forget
    this.nodes.delete(root.ino); this.nodes.set(1, root)
    this.nextIno = 2
  }

  /** Sum of outstanding kernel lookups over every inode but the root. */
  liveLookups (): number {
    let n = 0
    for (const x of this.nodes.values()) if (x.ino !== 1) n += x.lookups
    return n
  }

  private newNode (mode: number, uid: number, gid: number): MemNode {
    const t = nowNs()
    const n: MemNode = {
      ino: this.nextIno++, mode, uid, gid, rdev: 0, nlink: 1, size: 0, atime: t, mtime: t, ctime: t,
      chunks: new Map(), entries: (mode & S_IFMT) === S_IFDIR ? new Map() : null, nextCookie: 3, parent: 0,
      target: null, xattrs: new Map(), lookups: 0, opens: 0
    }
    this.nodes.set(n.ino, n)
    return n
  }

  /** The inode, or ENOENT; records a violation when the kernel holds no lookup of it. */
  node (ino: number, op: string): MemNode {
    const n = this.nodes.get(ino)
    if (n === undefined) { this.violations.push(`${op} ${ino} (unknown)`); throw new FuseError(E.ENOENT) }
    if (n.lookups <= 0 && n.opens <= 0) this.violations.push(`${op} ${ino}`)
    return n
  }

  private dir (ino: number, op: string): MemNode {
    const d = this.node(ino, op)
    if (d.entries === null) throw new FuseError(E.ENOTDIR)
    return d
  }

  attr (n: MemNode): Attr {
    return { ino: n.ino, mode: n.mode, nlink: n.nlink, uid: n.uid, gid: n.gid, rdev: n.rdev, size: n.size, blocks: n.chunks.size * (CHUNK / 512), blksize: CHUNK, atime: n.atime, mtime: n.mtime, ctime: n.ctime }
  }

  /** An entry for the kernel: counts one lookup. */
  entry (n: MemNode): Entry {
    n.lookups++
    return { ino: n.ino, attr: this.attr(n), entryTimeout: this.opts.entryTimeout, attrTimeout: this.opts.attrTimeout }
  }

  private maybeFree (n: MemNode): void {
    if (n.ino !== 1 && n.lookups <= 0 && n.opens <= 0 && n.nlink <= 0) this.nodes.delete(n.ino)
  }

  /** Adds a name without the kernel (tests populate and change the tree behind the kernel's back). */
  add (parent: number, name: string | Buffer, mode: number, data?: Buffer | string): MemNode {
    const d = this.nodes.get(parent)!
    const n = this.newNode(mode, 0, 0)
    n.parent = parent
    if ((mode & S_IFMT) === S_IFDIR) { n.nlink = 2; d.nlink++ }
    if (data !== undefined) this.writeData(n, Buffer.from(data), 0)
    const nb = Buffer.from(name)
    d.entries!.set(key(nb), { name: nb, ino: n.ino, cookie: d.nextCookie++ })
    return n
  }

  /** Removes a name without the kernel. */
  remove (parent: number, name: string | Buffer): MemNode | undefined {
    const d = this.nodes.get(parent)!
    const k = key(Buffer.from(name))
    const e = d.entries!.get(k)
    if (e === undefined) return undefined
    d.entries!.delete(k)
    const n = this.nodes.get(e.ino)!
    n.nlink -= (n.mode & S_IFMT) === S_IFDIR ? 2 : 1
    this.maybeFree(n)
    return n
  }

  /** Looks a child up without the kernel. */
  child (parent: number, name: string | Buffer): MemNode | undefined {
    const e = this.nodes.get(parent)?.entries?.get(key(Buffer.from(name)))
    return e === undefined ? undefined : this.nodes.get(e.ino)
  }

  writeData (n: MemNode, data: Buffer, off: number): void {
    const end = off + data.length
    if (!this.opts.sink) {
      let p = 0
      while (p < data.length) {
        const at = off + p
        const ci = Math.floor(at / CHUNK)
        const co = at - ci * CHUNK
        const len = Math.min(CHUNK - co, data.length - p)
        let c = n.chunks.get(ci)
        if (c === undefined) { c = Buffer.alloc(CHUNK); n.chunks.set(ci, c) }
        data.copy(c, co, p, p + len)
        p += len
      }
    }
    if (end > n.size) n.size = end
  }

  readData (n: MemNode, off: number, size: number): Buffer {
    const len = Math.max(0, Math.min(size, n.size - off))
    const out = Buffer.alloc(len)
    if (this.opts.sink) return out
    let p = 0
    while (p < len) {
      const at = off + p
      const ci = Math.floor(at / CHUNK)
      const co = at - ci * CHUNK
      const l = Math.min(CHUNK - co, len - p)
      const c = n.chunks.get(ci)
      if (c !== undefined) c.copy(out, p, co, co + l)
      p += l
    }
    return out
  }

  private truncate (n: MemNode, size: number): void {
    for (const ci of [...n.chunks.keys()]) {
      if (ci * CHUNK >= size) n.chunks.delete(ci)
      else if ((ci + 1) * CHUNK > size) n.chunks.get(ci)!.fill(0, size - ci * CHUNK)
    }
    n.size = size
  }

  private link (d: MemNode, name: Buffer, n: MemNode): void {
    if (d.entries!.has(key(name))) throw new FuseError(E.EEXIST)
    d.entries!.set(key(name), { name: Buffer.from(name), ino: n.ino, cookie: d.nextCookie++ })
    d.mtime = d.ctime = nowNs()
  }

  private create (req: Request, parent: number, name: Buffer, mode: number, op: string): MemNode {
    const d = this.dir(parent, op)
    if (d.entries!.has(key(name))) throw new FuseError(E.EEXIST)
    const n = this.newNode(mode, req.uid, req.gid)
    n.parent = parent
    if ((mode & S_IFMT) === S_IFDIR) { n.nlink = 2; d.nlink++ }
    this.link(d, name, n)
    return n
  }

  private unlinkName (parent: number, name: Buffer, wantDir: boolean, op: string): void {
    const d = this.dir(parent, op)
    const e = d.entries!.get(key(name))
    if (e === undefined) throw new FuseError(E.ENOENT)
    const n = this.nodes.get(e.ino)!
    const isDir = n.entries !== null
    if (wantDir && !isDir) throw new FuseError(E.ENOTDIR)
    if (!wantDir && isDir) throw new FuseError(E.EISDIR)
    if (isDir && n.entries!.size > 0) throw new FuseError(E.ENOTEMPTY)
    d.entries!.delete(key(name))
    d.mtime = d.ctime = nowNs()
    if (isDir) { d.nlink--; n.nlink = 0 } else n.nlink--
    n.ctime = nowNs()
    this.maybeFree(n)
  }

  readonly ops: LowLevelOps = {
    lookup: (req, parent, _pi, name) => {
      const d = this.dir(parent, 'lookup')
      const e = d.entries!.get(key(name))
      if (e === undefined) return -E.ENOENT
      return this.entry(this.nodes.get(e.ino)!)
    },
    forget: (ino, _inc, nlookup) => {
      const n = this.nodes.get(ino)
      if (n === undefined) { this.violations.push(`forget ${ino} (unknown)`); return }
      n.lookups -= nlookup
      if (n.lookups < 0) this.violations.push(`forget ${ino} below zero`)
      this.maybeFree(n)
    },
    getattr: (_req, ino) => this.attr(this.node(ino, 'getattr')),
    setattr: (_req, ino, _inc, s: SetAttr) => {
      const n = this.node(ino, 'setattr')
      const t = nowNs()
      if (s.mode !== undefined) n.mode = (n.mode & S_IFMT) | (s.mode & 0o7777)
      if (s.uid !== undefined) n.uid = s.uid
      if (s.gid !== undefined) n.gid = s.gid
      if (s.size !== undefined) { if (n.entries !== null) throw new FuseError(E.EISDIR); this.truncate(n, s.size); n.mtime = t }
      if (s.atime !== undefined) n.atime = s.atimeNow ? t : s.atime
      if (s.mtime !== undefined) n.mtime = s.mtimeNow ? t : s.mtime
      n.ctime = s.ctime ?? t
      return this.attr(n)
    },
    readlink: (_req, ino) => {
      const n = this.node(ino, 'readlink')
      if (n.target === null) return -E.EINVAL
      return n.target
    },
    mknod: (req, parent, _pi, name, mode, rdev) => {
      const n = this.create(req, parent, name, mode, 'mknod')
      n.rdev = rdev
      return this.entry(n)
    },
    mkdir: (req, parent, _pi, name, mode) => this.entry(this.create(req, parent, name, S_IFDIR | (mode & 0o7777), 'mkdir')),
    unlink: (_req, parent, _pi, name) => { this.unlinkName(parent, name, false, 'unlink') },
    rmdir: (_req, parent, _pi, name) => { this.unlinkName(parent, name, true, 'rmdir') },
    symlink: (req, parent, _pi, name, target) => {
      const n = this.create(req, parent, name, S_IFLNK | 0o777, 'symlink')
      n.target = Buffer.from(target)
      n.size = target.length
      return this.entry(n)
    },
    rename: (_req, parent, _pi, name, newParent, _npi, newName, flags) => {
      const d = this.dir(parent, 'rename'); const nd = this.dir(newParent, 'rename')
      const e = d.entries!.get(key(name))
      if (e === undefined) throw new FuseError(E.ENOENT)
      const t = nd.entries!.get(key(newName))
      if (flags & ~(RENAME_NOREPLACE | RENAME_EXCHANGE)) throw new FuseError(E.EINVAL)
      const now = nowNs()
      if (flags & RENAME_EXCHANGE) {
        if (t === undefined) throw new FuseError(E.ENOENT)
        const a = e.ino; const b = t.ino
        e.ino = b; t.ino = a
        d.mtime = d.ctime = nd.mtime = nd.ctime = now
        return
      }
      if (t !== undefined) {
        if (flags & RENAME_NOREPLACE) throw new FuseError(E.EEXIST)
        if (t.ino === e.ino) return
        const src = this.nodes.get(e.ino)!; const dst = this.nodes.get(t.ino)!
        if (dst.entries !== null && src.entries === null) throw new FuseError(E.EISDIR)
        if (dst.entries === null && src.entries !== null) throw new FuseError(E.ENOTDIR)
        this.unlinkName(newParent, newName, dst.entries !== null, 'rename')
      }
      d.entries!.delete(key(name))
      nd.entries!.set(key(newName), { name: Buffer.from(newName), ino: e.ino, cookie: nd.nextCookie++ })
      const n = this.nodes.get(e.ino)!
      if (n.entries !== null && parent !== newParent) { d.nlink--; nd.nlink++; n.parent = newParent }
      d.mtime = d.ctime = nd.mtime = nd.ctime = n.ctime = now
    },
    link: (_req, ino, _inc, newParent, _npi, newName) => {
      const n = this.node(ino, 'link')
      if (n.entries !== null) return -1 // EPERM
      this.link(this.dir(newParent, 'link'), newName, n)
      n.nlink++
      n.ctime = nowNs()
      return this.entry(n)
    },
    open: (_req, ino, _inc, flags) => {
      const n = this.node(ino, 'open')
      this.opens.push(flags)
      if (flags & O_TRUNC) { this.truncate(n, 0); n.mtime = n.ctime = nowNs() }
      return this.openHandle(n)
    },
    read: (_req, ino, _inc, _fh, size, off) => {
      const n = this.node(ino, 'read')
      return this.readData(n, off, size)
    },
    write: (_req, ino, _inc, _fh, data, off) => {
      const n = this.node(ino, 'write')
      this.writeData(n, data, off)
      n.mtime = n.ctime = nowNs()
      return data.length
    },
    flush: () => {},
    release: (_req, ino, _inc, fh) => this.closeHandle(ino, fh),
    fsync: () => {},
    opendir: (_req, ino) => this.openHandle(this.dir(ino, 'opendir')),
    readdir: (_req, ino, _inc, _fh, offset) => this.list(ino, offset).map(([name, n, off]): DirEntry => ({ name, ino: n.ino, mode: n.mode, off })),
    readdirplus: (_req, ino, _inc, _fh, offset) => this.list(ino, offset).map(([name, n, off]): DirPlusEntry => ({
      name, off, entry: { ino: n.ino, attr: this.attr(n), entryTimeout: this.opts.entryTimeout, attrTimeout: this.opts.attrTimeout }
    })),
    readdirplusSent: (_ino, _inc, entries, sent) => {
      for (let i = 0; i < sent; i++) {
        const nm = entries[i].name
        if ((nm.length === 1 && nm[0] === 0x2e) || (nm.length === 2 && nm[0] === 0x2e && nm[1] === 0x2e)) continue
        const n = this.nodes.get(entries[i].entry.ino)
        if (n !== undefined) n.lookups++
      }
    },
    releasedir: (_req, ino, _inc, fh) => this.closeHandle(ino, fh),
    fsyncdir: () => {},
    statfs: (): Statfs => ({ bsize: 4096, frsize: 4096, blocks: 2 ** 40, bfree: 2 ** 39, bavail: 2 ** 39, files: 2 ** 33, ffree: 2 ** 32 + 5, namemax: 255 }),
    setxattr: (_req, ino, _inc, name, value, flags) => {
      const n = this.node(ino, 'setxattr')
      const has = n.xattrs.has(key(name))
      if ((flags & 1) && has) throw new FuseError(E.EEXIST)
      if ((flags & 2) && !has) throw new FuseError(E.ENODATA)
      n.xattrs.set(key(name), Buffer.from(value))
      n.ctime = nowNs()
    },
    getxattr: (_req, ino, _inc, name) => {
      const v = this.node(ino, 'getxattr').xattrs.get(key(name))
      return v === undefined ? -E.ENODATA : v
    },
    listxattr: (_req, ino) => [...this.node(ino, 'listxattr').xattrs.keys()].map((k) => Buffer.from(k, 'latin1')),
    removexattr: (_req, ino, _inc, name) => {
      const n = this.node(ino, 'removexattr')
      if (!n.xattrs.delete(key(name))) throw new FuseError(E.ENODATA)
      n.ctime = nowNs()
    },
    create: (req, parent, _pi, name, mode, flags) => {
      const d = this.dir(parent, 'create')
      const e = d.entries!.get(key(name))
      if (e !== undefined) {
        if (flags & O_EXCL) throw new FuseError(E.EEXIST)
        const n = this.nodes.get(e.ino)!
        if (flags & O_TRUNC) this.truncate(n, 0)
        return { ...this.entry(n), fh: this.openHandle(n) }
      }
      const n = this.create(req, parent, name, S_IFREG | (mode & 0o7777), 'create')
      this.opens.push(flags)
      return { ...this.entry(n), fh: this.openHandle(n) }
    },
    fallocate: (_req, ino, _inc, _fh, mode, offset, length) => {
      const n = this.node(ino, 'fallocate')
      if (mode === 0) {
        for (let ci = Math.floor(offset / CHUNK); ci * CHUNK < offset + length; ci++) if (!n.chunks.has(ci) && !this.opts.sink) n.chunks.set(ci, Buffer.alloc(CHUNK))
        if (offset + length > n.size) n.size = offset + length
        return
      }
      if (mode === 3) { // PUNCH_HOLE | KEEP_SIZE, whole chunks only
        for (let ci = Math.ceil(offset / CHUNK); (ci + 1) * CHUNK <= offset + length; ci++) n.chunks.delete(ci)
        return
      }
      return -E.EOPNOTSUPP
    },
    lseek: (_req, ino, _inc, _fh, offset, whence) => {
      const n = this.node(ino, 'lseek')
      if (whence !== 3 && whence !== 4) return -E.EINVAL
      if (offset >= n.size) return -E.ENXIO
      const present = (ci: number): boolean => n.chunks.has(ci)
      for (let ci = Math.floor(offset / CHUNK); ci * CHUNK < n.size; ci++) {
        if (present(ci) === (whence === 3)) return Math.max(offset, ci * CHUNK)
      }
      return whence === 3 ? -E.ENXIO : n.size
    },
    copyFileRange: (_req, inIno, _ii, _ifh, inOff, outIno, _oi, _ofh, outOff, length) => {
      const a = this.node(inIno, 'copy_file_range'); const b = this.node(outIno, 'copy_file_range')
      const data = this.readData(a, inOff, length)
      this.writeData(b, data, outOff)
      b.mtime = b.ctime = nowNs()
      return data.length
    }
  }

  private openHandle (n: MemNode): number {
    const fh = this.nextFh++
    this.handles.set(fh, n.ino)
    n.opens++
    return fh
  }

  private closeHandle (ino: number, fh: number): Answer<void> {
    const owner = this.handles.get(fh)
    if (owner !== ino) { this.violations.push(`release of handle ${fh} for ${ino}, owned by ${owner}`); return -E.EBADF }
    this.handles.delete(fh)
    const n = this.nodes.get(ino)!
    n.opens--
    this.maybeFree(n)
  }

  /** Entries of a directory from cookie `offset` on: [name, node, cookie of the next], with . and .. first. */
  private list (ino: number, offset: number): Array<[Buffer, MemNode, number]> {
    const d = this.dir(ino, 'readdir')
    const out: Array<[Buffer, MemNode, number]> = []
    if (offset < 1) out.push([Buffer.from('.'), d, 1])
    if (offset < 2) out.push([Buffer.from('..'), this.nodes.get(d.parent) ?? d, 2])
    for (const e of d.entries!.values()) if (e.cookie > offset) out.push([e.name, this.nodes.get(e.ino)!, e.cookie])
    return out
  }
}

/** An Open for `fh` (exported for tests that wrap ops). */
export function asOpen (fh: number): Open { return { fh } }
export { SETATTR }
