/**
 * The workload of test/crash/crash.test.ts, run as a child process (fork, IPC) so
 * that it keeps writing while the test process kills the daemon: many
 * files, big files written in chunks that straddle 64 KiB block
 * boundaries, writes at offsets (holes beyond the end), appends, truncates,
 * overwrites, renames of files and directories (over existing names too),
 * hard links, symlinks, chmod, unlink, mkdir, rmdir, and fsync/fdatasync of
 * files and directories.
 *
 * It keeps a model of the tree (every file's bytes, modes, symlink targets,
 * which names share an inode), so that at each fsync it can say exactly
 * what the daemon must hold from then on: the whole live state (fsync makes
 * the whole workspace durable, fs/history/generations.ts `sync`). The model's
 * view is the projection of scripts/manifest.sh's lines the test compares
 * (`path type mode size sha256|-> target|-`, see `projectManifest`).
 *
 * Every path goes through a directory fd opened on the mount
 * (`/proc/self/fd/N/...`): once the daemon is dead every call fails with
 * ENOTCONN instead of landing in the directory under the mount.
 *
 * A file whose fsync returned is "sealed": later ops never change, move or
 * remove it, so the test can check its exact bytes after any later kill.
 *
 * Messages from the test (`WriterCommand`) and to it (`WriterEvent`) are
 * typed below. One command at a time; `run` returns at once and ends with
 * `idle` (its budget spent), `paused` (after `pause`) or `error`.
 */
import fs from 'node:fs'
import { createHash } from 'node:crypto'
import { Prng } from './prng.js'

const KiB = 1024
const MiB = 1024 * KiB
const BLOCK = 64 * KiB

/** Commands the test sends. */
export type WriterCommand =
  /** (re)open the mounted workspace `dir` and read the whole tree into the model; `sealed` stay untouched */
  | { cmd: 'open', dir: string, sealed: string[], maxBytes: number }
  /**
   * run ops: 'mixed' (all kinds, fsync with probability `fsync`), 'bulk'
   * (new and overwritten big files, no fsync) or 'scatter' (small writes at
   * unaligned offsets of big files, no fsync: each leaves a partly written
   * block for the next checkpoint to seal) until `ops` ops or `bytes` bytes
   * written (0 = no limit: until `pause`)
   */
  | { cmd: 'run', seed: number, mode: WriterMode, ops: number, bytes: number, fsync: number }
  | { cmd: 'pause' }
  /** the model's lines now */
  | { cmd: 'lines' }
  /** the last ops done, for a failure report */
  | { cmd: 'oplog' }
  /** close the directory fd (before a remount) */
  | { cmd: 'close' }

/** Kinds of runs (see WriterCommand 'run'). */
export type WriterMode = 'mixed' | 'bulk' | 'scatter'

/** Events the writer sends. `lines` are model lines, sorted. */
export type WriterEvent =
  | { ev: 'ready', lines: string[], files: number, bytes: number }
  | { ev: 'idle', ops: number, bytes: number }
  | { ev: 'paused', ops: number, bytes: number }
  /** an fsync is about to be called: the state it makes durable */
  | { ev: 'fsync-start', n: number, lines: string[], what: string }
  /** fsync returned 0; `file` is sealed from now on */
  | { ev: 'fsync-done', n: number, file: { path: string, sha: string } | null }
  | { ev: 'fsync-fail', n: number, code: string }
  /** an op failed: the loop stopped (after a kill this is expected: ENOTCONN) */
  | { ev: 'error', code: string, message: string, op: string }
  | { ev: 'lines', lines: string[] }
  | { ev: 'oplog', lines: string[] }
  | { ev: 'closed' }

interface FileNode { t: 'f', data: Buffer, mode: number, sha: string | null, frozen: boolean }
interface DirNode { t: 'd', mode: number }
interface LinkNode { t: 'l', target: string }
type MNode = FileNode | DirNode | LinkNode

const FILE_MODES = [0o644, 0o600, 0o755, 0o640, 0o444, 0o700]
const DIR_MODES = [0o755, 0o700, 0o750, 0o775, 0o1777]
const NAMES = ['src', 'lib', 'data', 'out', 'tmp', 'log', 'a', 'b', 'c', 'cache', 'obj', 'pkg']

/** sha256 hex of bytes. */
function sha (b: Buffer): string { return createHash('sha256').update(b).digest('hex') }

class Writer {
  private root = ''
  private fd = -1
  private readonly tree = new Map<string, MNode>()
  private sealed = new Set<string>()
  private maxBytes = 48 * MiB
  private rng = new Prng(1)
  private running: { mode: WriterMode, ops: number, bytes: number, fsync: number, done: number, written: number } | null = null
  private pauseAsked = false
  private fsyncs = 0
  private readonly oplog: string[] = []

  send (e: WriterEvent): void { process.send!(e) }

  handle (c: WriterCommand): void {
    try {
      switch (c.cmd) {
        case 'open': this.open(c.dir, c.sealed, c.maxBytes); break
        case 'run':
          this.rng = new Prng(c.seed)
          this.running = { mode: c.mode, ops: c.ops, bytes: c.bytes, fsync: c.fsync, done: 0, written: 0 }
          this.pauseAsked = false
          setImmediate(() => this.loop())
          break
        case 'pause':
          // a run that already ended said so (idle or error): nothing to answer
          if (this.running) this.pauseAsked = true
          break
        case 'lines': this.send({ ev: 'lines', lines: this.lines() }); break
        case 'oplog': this.send({ ev: 'oplog', lines: this.oplog.slice(-300) }); break
        case 'close':
          if (this.fd >= 0) { try { fs.closeSync(this.fd) } catch {} }
          this.fd = -1
          this.send({ ev: 'closed' })
          break
      }
    } catch (e: any) {
      this.send({ ev: 'error', code: e.code ?? 'EUNKNOWN', message: String(e.stack ?? e.message), op: c.cmd })
    }
  }

  // ---- model --------------------------------------------------------------

  private P (rel: string): string { return rel === '' ? this.root : `${this.root}/${rel}` }

  private open (dir: string, sealed: string[], maxBytes: number): void {
    if (this.fd >= 0) { try { fs.closeSync(this.fd) } catch {} }
    this.fd = fs.openSync(dir, fs.constants.O_RDONLY | fs.constants.O_DIRECTORY)
    this.root = `/proc/self/fd/${this.fd}`
    this.maxBytes = maxBytes
    this.tree.clear()
    const byIno = new Map<bigint, { node: FileNode, names: number, nlink: number }>()
    const rootSt = fs.statSync(this.root, { bigint: true })
    this.tree.set('', { t: 'd', mode: Number(rootSt.mode) & 0o7777 })
    const walk = (rel: string): void => {
      for (const name of fs.readdirSync(this.P(rel)).sort()) {
        const r = rel === '' ? name : `${rel}/${name}`
        const st = fs.lstatSync(this.P(r), { bigint: true })
        if (st.isDirectory()) { this.tree.set(r, { t: 'd', mode: Number(st.mode) & 0o7777 }); walk(r) } else if (st.isSymbolicLink()) this.tree.set(r, { t: 'l', target: fs.readlinkSync(this.P(r)) })
        else if (st.isFile()) {
          const seen = st.nlink > 1n ? byIno.get(st.ino) : undefined
          if (seen) { seen.names++; this.tree.set(r, seen.node); continue }
          const node: FileNode = { t: 'f', data: fs.readFileSync(this.P(r)), mode: Number(st.mode) & 0o7777, sha: null, frozen: false }
          if (st.nlink > 1n) byIno.set(st.ino, { node, names: 1, nlink: Number(st.nlink) })
          this.tree.set(r, node)
        } else throw new Error(`crash writer: unexpected file type at ${r}`)
      }
    }
    walk('')
    // a hard link with names outside what we listed: writing it would change files we do not model
    for (const g of byIno.values()) if (g.names !== g.nlink) g.node.frozen = true
    this.sealed = new Set(sealed.filter(p => this.tree.get(p)?.t === 'f'))
    let bytes = 0
    for (const n of new Set(this.tree.values())) if (n.t === 'f') bytes += n.data.length
    this.send({ ev: 'ready', lines: this.lines(), files: [...this.tree.values()].filter(n => n.t === 'f').length, bytes })
  }

  /** The model as projected manifest lines (see projectManifest in crash.ts), sorted. */
  lines (): string[] {
    const out: string[] = []
    for (const [rel, n] of this.tree) {
      const p = rel === '' ? '.' : `./${rel}`
      if (n.t === 'd') out.push(`${p} d ${n.mode.toString(8)} - -`)
      else if (n.t === 'l') out.push(`${p} l 777 ${Buffer.byteLength(n.target)} -> ${n.target}`)
      else { n.sha ??= sha(n.data); out.push(`${p} f ${n.mode.toString(8)} ${n.data.length} ${n.sha}`) }
    }
    return out.sort()
  }

  private totalBytes (): number {
    let b = 0
    for (const n of new Set(this.tree.values())) if (n.t === 'f') b += n.data.length
    return b
  }

  private refs (node: MNode): number {
    let k = 0
    for (const n of this.tree.values()) if (n === node) k++
    return k
  }

  private children (rel: string): string[] {
    const pre = rel === '' ? '' : rel + '/'
    return [...this.tree.keys()].filter(k => k !== '' && k.startsWith(pre) && !k.slice(pre.length).includes('/'))
  }

  private hasSealedBelow (rel: string): boolean {
    for (const s of this.sealed) if (s.startsWith(rel + '/')) return true
    return false
  }

  private fresh (parent: string): string {
    for (let i = 0; i < 20; i++) {
      const n = this.rng.pick(NAMES) + this.rng.int(1000)
      const rel = parent === '' ? n : `${parent}/${n}`
      if (!this.tree.has(rel)) return rel
    }
    return (parent === '' ? '' : parent + '/') + `x${Date.now()}${this.rng.int(1e9)}`
  }

  private depth (rel: string): number { return rel === '' ? 0 : rel.split('/').length }

  // ---- content ------------------------------------------------------------

  /** n bytes: random (xorshift, fast), a byte pattern, zeros (holes) or a copy of a block of another file (dedup). */
  private content (n: number): Buffer {
    const b = Buffer.alloc(n)
    const kind = this.rng.int(10)
    if (kind === 0 || n === 0) return b
    if (kind === 1) return b.fill(this.rng.int(256))
    if (kind === 2) {
      const files = [...this.tree.values()].filter((x): x is FileNode => x.t === 'f' && x.data.length >= BLOCK)
      if (files.length) {
        const src = this.rng.pick(files).data
        for (let o = 0; o < n; o += BLOCK) src.copy(b, o, 0, Math.min(BLOCK, n - o))
        return b
      }
    }
    let x = (this.rng.next() * 4294967296) >>> 0 || 1
    const words = Math.floor(n / 4)
    for (let i = 0; i < words; i++) {
      x ^= x << 13; x >>>= 0; x ^= x >>> 17; x ^= x << 5; x >>>= 0
      b.writeUInt32LE(x, i * 4)
    }
    for (let i = words * 4; i < n; i++) b[i] = this.rng.int(256)
    return b
  }

  /** Writes `data` at `pos` of the open fd in chunks of varied sizes (so writes straddle block boundaries). */
  private writeChunks (fd: number, data: Buffer, pos: number): void {
    let off = 0
    while (off < data.length) {
      const want = this.rng.pick([4 * KiB, BLOCK, 2 * BLOCK, this.rng.range(1, 200 * KiB), this.rng.range(BLOCK - 100, BLOCK + 100)])
      const n = Math.min(want, data.length - off)
      let done = 0
      while (done < n) done += fs.writeSync(fd, data, off + done, n - done, pos + off + done)
      off += n
      if (this.running) this.running.written += n
    }
  }

  /** Model: write `data` at `pos` of a file node. */
  private static put (node: FileNode, data: Buffer, pos: number): void {
    const end = pos + data.length
    if (end > node.data.length) {
      const grown = Buffer.alloc(end)
      node.data.copy(grown, 0)
      node.data = grown
    }
    data.copy(node.data, pos)
    node.sha = null
  }

  private static truncate (node: FileNode, len: number): void {
    if (len <= node.data.length) node.data = Buffer.from(node.data.subarray(0, len))
    else { const g = Buffer.alloc(len); node.data.copy(g, 0); node.data = g }
    node.sha = null
  }

  // ---- fsync --------------------------------------------------------------

  /** fsync (or fdatasync) of an open fd; `rel` is sealed afterwards when it names a file with one name. */
  private fsync (fd: number, what: string, rel: string | null): void {
    const n = ++this.fsyncs
    this.send({ ev: 'fsync-start', n, lines: this.lines(), what })
    try {
      if (this.rng.chance(0.3)) fs.fdatasyncSync(fd)
      else fs.fsyncSync(fd)
    } catch (e: any) {
      this.send({ ev: 'fsync-fail', n, code: e.code ?? 'EUNKNOWN' })
      throw e
    }
    let file: { path: string, sha: string } | null = null
    const node = rel === null ? undefined : this.tree.get(rel)
    if (rel !== null && node?.t === 'f' && this.refs(node) === 1) {
      node.sha ??= sha(node.data)
      file = { path: rel, sha: node.sha }
      this.sealed.add(rel)
    }
    this.send({ ev: 'fsync-done', n, file })
  }

  // ---- ops ----------------------------------------------------------------

  private loop (): void {
    const r = this.running
    if (!r) return
    if (this.pauseAsked) { this.running = null; this.pauseAsked = false; this.send({ ev: 'paused', ops: r.done, bytes: r.written }); return }
    if ((r.ops > 0 && r.done >= r.ops) || (r.bytes > 0 && r.written >= r.bytes)) { this.running = null; this.send({ ev: 'idle', ops: r.done, bytes: r.written }); return }
    try {
      const line = r.mode === 'bulk' ? this.bulkOp() : r.mode === 'scatter' ? this.scatterOp() : this.mixedOp(r.fsync)
      this.oplog.push(line)
      if (this.oplog.length > 1000) this.oplog.splice(0, 500)
      r.done++
    } catch (e: any) {
      this.oplog.push(`failed: ${e.message}`)
      this.running = null
      this.send({ ev: 'error', code: e.code ?? 'EUNKNOWN', message: String(e.message), op: this.oplog[this.oplog.length - 1] })
      return
    }
    setImmediate(() => this.loop())
  }

  private files (pred: (rel: string, n: FileNode) => boolean = () => true): string[] {
    const out: string[] = []
    for (const [rel, n] of this.tree) if (n.t === 'f' && !this.sealed.has(rel) && pred(rel, n)) out.push(rel)
    return out
  }

  private dirs (): string[] { return [...this.tree].filter(([, n]) => n.t === 'd').map(([rel]) => rel) }

  private bigSize (): number { return this.rng.range(1 * MiB, 6 * MiB) + this.rng.int(BLOCK) }

  private sizeOf (): number {
    const k = this.rng.int(10)
    if (k < 5) return this.rng.int(200 * KiB)
    if (k < 9) return this.rng.range(200 * KiB, 1536 * KiB)
    return this.bigSize()
  }

  /** 'bulk': big new or overwritten files, no fsync (a checkpoint after it has much to seal). */
  private bulkOp (): string {
    const big = this.files((rel, n) => !n.frozen && this.refs(n) === 1 && n.data.length >= MiB)
    if (big.length && this.rng.chance(0.4)) return this.overwrite(this.rng.pick(big), this.bigSize(), 0)
    const parent = this.rng.pick(this.dirs().filter(d => this.depth(d) < 4))
    return this.create(this.fresh(parent), this.bigSize(), 0)
  }

  /** 'scatter': 1..32 KiB at an unaligned offset of a big file. */
  private scatterOp (): string {
    const big = this.files((rel, n) => !n.frozen && n.data.length >= 4 * BLOCK)
    if (!big.length) return this.bulkOp()
    const rel = this.rng.pick(big)
    const node = this.tree.get(rel) as FileNode
    const off = this.rng.int(node.data.length)
    const data = this.content(this.rng.range(1, 32 * KiB))
    const fd = fs.openSync(this.P(rel), 'r+')
    try {
      let done = 0
      while (done < data.length) done += fs.writeSync(fd, data, done, data.length - done, off + done)
    } finally { fs.closeSync(fd) }
    Writer.put(node, data, off)
    if (this.running) this.running.written += data.length
    return `scatter ${rel} off=${off} len=${data.length}`
  }

  private mixedOp (pFsync: number): string {
    if (this.totalBytes() > this.maxBytes) {
      const victims = this.files((rel, n) => this.refs(n) === 1).sort((a, b) => (this.tree.get(b) as FileNode).data.length - (this.tree.get(a) as FileNode).data.length)
      if (victims.length) { fs.unlinkSync(this.P(victims[0])); this.tree.delete(victims[0]); return `unlink ${victims[0]} (tree over budget)` }
    }
    const kind = this.rng.pick(['create', 'create', 'create', 'writeAt', 'writeAt', 'writeAt', 'append', 'truncate', 'overwrite',
      'renameFile', 'renameFile', 'renameDir', 'link', 'symlink', 'unlink', 'mkdir', 'mkdir', 'rmdir', 'chmod', 'fsyncdir'] as const)
    const ds = this.dirs()
    const shallow = ds.filter(d => this.depth(d) < 4)
    const writable = this.files((rel, n) => !n.frozen)
    switch (kind) {
      case 'create': return this.create(this.fresh(this.rng.pick(shallow)), this.sizeOf(), pFsync)
      case 'overwrite':
        if (!writable.length) return 'skip overwrite'
        return this.overwrite(this.rng.pick(writable), this.sizeOf(), pFsync)
      case 'writeAt': {
        if (!writable.length) return 'skip writeAt'
        const rel = this.rng.pick(writable)
        const node = this.tree.get(rel) as FileNode
        const size = node.data.length
        const off = this.rng.chance(0.7)
          ? Math.max(0, this.rng.int(Math.floor(size / BLOCK) + 2) * BLOCK + this.rng.range(-3000, 3000))
          : this.rng.int(size + 100 * KiB)
        const data = this.content(this.rng.range(1, 200 * KiB))
        const fd = fs.openSync(this.P(rel), 'r+')
        try {
          this.writeChunks(fd, data, off)
          Writer.put(node, data, off)
          if (this.rng.chance(pFsync)) this.fsync(fd, `writeAt ${rel}`, rel)
        } finally { fs.closeSync(fd) }
        return `writeAt ${rel} off=${off} len=${data.length} (size was ${size})`
      }
      case 'append': {
        if (!writable.length) return 'skip append'
        const rel = this.rng.pick(writable)
        const node = this.tree.get(rel) as FileNode
        const data = this.content(this.rng.range(1, 150 * KiB))
        const fd = fs.openSync(this.P(rel), 'a')
        try {
          // O_APPEND: the position is ignored, every write goes to the end
          let off = 0
          while (off < data.length) { const n = Math.min(this.rng.range(1, 100 * KiB), data.length - off); off += fs.writeSync(fd, data, off, n) }
          Writer.put(node, data, node.data.length)
        } finally { fs.closeSync(fd) }
        return `append ${rel} len=${data.length}`
      }
      case 'truncate': {
        if (!writable.length) return 'skip truncate'
        const rel = this.rng.pick(writable)
        const node = this.tree.get(rel) as FileNode
        const size = node.data.length
        const to = this.rng.chance(0.5) ? this.rng.int(size + 1) : size + this.rng.int(300 * KiB)
        fs.truncateSync(this.P(rel), to)
        Writer.truncate(node, to)
        return `truncate ${rel} ${size} -> ${to}`
      }
      case 'renameFile': {
        const srcs = [...this.tree].filter(([rel, n]) => (n.t === 'f' || n.t === 'l') && !this.sealed.has(rel)).map(([rel]) => rel)
        if (!srcs.length) return 'skip rename'
        const src = this.rng.pick(srcs)
        const node = this.tree.get(src)!
        const overs = srcs.filter(d => d !== src && this.tree.get(d) !== node)
        const dst = overs.length && this.rng.chance(0.4) ? this.rng.pick(overs) : this.fresh(this.rng.pick(shallow))
        fs.renameSync(this.P(src), this.P(dst))
        this.tree.delete(src)
        this.tree.set(dst, node)
        return `rename ${src} -> ${dst}`
      }
      case 'renameDir': {
        const srcs = ds.filter(d => d !== '' && !this.hasSealedBelow(d))
        if (!srcs.length) return 'skip renameDir'
        const src = this.rng.pick(srcs)
        const parents = shallow.filter(d => d !== src && !d.startsWith(src + '/'))
        if (!parents.length) return 'skip renameDir'
        const dst = this.fresh(this.rng.pick(parents))
        fs.renameSync(this.P(src), this.P(dst))
        for (const k of [...this.tree.keys()]) {
          if (k === src || k.startsWith(src + '/')) { const n = this.tree.get(k)!; this.tree.delete(k); this.tree.set(dst + k.slice(src.length), n) }
        }
        return `rename dir ${src} -> ${dst}`
      }
      case 'link': {
        if (!writable.length) return 'skip link'
        const src = this.rng.pick(writable)
        const dst = this.fresh(this.rng.pick(shallow))
        fs.linkSync(this.P(src), this.P(dst))
        this.tree.set(dst, this.tree.get(src)!)
        return `link ${src} ${dst}`
      }
      case 'symlink': {
        const target = this.rng.chance(0.7) ? this.rng.pick([...this.tree.keys()].filter(k => k !== '')) ?? 'x' : 'missing/x'
        const dst = this.fresh(this.rng.pick(shallow))
        fs.symlinkSync(target, this.P(dst))
        this.tree.set(dst, { t: 'l', target })
        return `symlink ${dst} -> ${target}`
      }
      case 'unlink': {
        const srcs = [...this.tree].filter(([rel, n]) => (n.t === 'f' || n.t === 'l') && !this.sealed.has(rel)).map(([rel]) => rel)
        if (!srcs.length) return 'skip unlink'
        const rel = this.rng.pick(srcs)
        fs.unlinkSync(this.P(rel))
        this.tree.delete(rel)
        return `unlink ${rel}`
      }
      case 'mkdir': {
        const rel = this.fresh(this.rng.pick(shallow))
        const mode = this.rng.pick(DIR_MODES)
        fs.mkdirSync(this.P(rel), { mode })
        this.tree.set(rel, { t: 'd', mode })
        return `mkdir ${rel} ${mode.toString(8)}`
      }
      case 'rmdir': {
        const empty = ds.filter(d => d !== '' && this.children(d).length === 0)
        if (!empty.length) return 'skip rmdir'
        const rel = this.rng.pick(empty)
        fs.rmdirSync(this.P(rel))
        this.tree.delete(rel)
        return `rmdir ${rel}`
      }
      case 'chmod': {
        const cands = [...writable, ...ds.filter(d => d !== '')]
        if (!cands.length) return 'skip chmod'
        const rel = this.rng.pick(cands)
        const node = this.tree.get(rel) as FileNode | DirNode
        const mode = node.t === 'd' ? this.rng.pick(DIR_MODES) : this.rng.pick(FILE_MODES)
        fs.chmodSync(this.P(rel), mode)
        node.mode = mode
        return `chmod ${rel} ${mode.toString(8)}`
      }
      case 'fsyncdir': {
        if (!this.rng.chance(pFsync * 2)) return 'skip fsyncdir'
        const rel = this.rng.pick(ds)
        const fd = fs.openSync(this.P(rel), fs.constants.O_RDONLY | fs.constants.O_DIRECTORY)
        try { this.fsync(fd, `fsyncdir ${rel || '.'}`, null) } finally { fs.closeSync(fd) }
        return `fsyncdir ${rel || '.'}`
      }
    }
  }

  /** Creates `rel` with `size` bytes written in chunks; fsynced (and sealed) with probability pFsync. */
  private create (rel: string, size: number, pFsync: number): string {
    const mode = this.rng.pick(FILE_MODES)
    const data = this.content(size)
    // O_EXCL: the name is fresh in the model, so the file must not exist
    const fd = fs.openSync(this.P(rel), fs.constants.O_CREAT | fs.constants.O_EXCL | fs.constants.O_RDWR, mode)
    const node: FileNode = { t: 'f', data: Buffer.alloc(0), mode, sha: null, frozen: false }
    this.tree.set(rel, node)
    let synced = false
    try {
      this.writeChunks(fd, data, 0)
      node.data = data
      if (size <= 2 * MiB && this.rng.chance(pFsync)) { this.fsync(fd, `create ${rel}`, rel); synced = true }
    } finally { fs.closeSync(fd) }
    return `create ${rel} size=${size} mode=${mode.toString(8)}${synced ? ' fsync' : ''}`
  }

  /** Rewrites `rel` with O_TRUNC and `size` new bytes. */
  private overwrite (rel: string, size: number, pFsync: number): string {
    const node = this.tree.get(rel) as FileNode
    const data = this.content(size)
    const fd = fs.openSync(this.P(rel), fs.constants.O_WRONLY | fs.constants.O_TRUNC)
    Writer.truncate(node, 0)
    let synced = false
    try {
      this.writeChunks(fd, data, 0)
      node.data = data
      node.sha = null
      if (size <= 2 * MiB && this.rng.chance(pFsync)) { this.fsync(fd, `overwrite ${rel}`, rel); synced = true }
    } finally { fs.closeSync(fd) }
    return `overwrite ${rel} size=${size}${synced ? ' fsync' : ''}`
  }
}

const w = new Writer()
process.umask(0)
process.on('message', (c: WriterCommand) => w.handle(c))
process.on('disconnect', () => process.exit(0))
