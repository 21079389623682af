/**
 * Differential fuzzing of a rewindfs mount against a native directory
 * (test/fuzz/fuzz.test.ts runs it).
 *
 * An operation sequence is a list of plain JSON objects (`Op`) with every
 * argument concrete (paths, offsets, lengths, the seed of the bytes
 * written), so a sequence replays exactly and can be shrunk by removing
 * operations. `Lockstep` applies each operation to the native directory and
 * to the mount, compares the outcomes (value or errno, bytes read) and the
 * stat fields of every path the operation touched; `mark` and `restore`
 * operations checkpoint and restore the mount through the protocol and the
 * native directory through `cp -a` snapshots, and compare whole-tree
 * manifests. `generate` draws the next operation from a seeded PRNG and the
 * native directory's current state; `shrink` reduces a failing sequence by
 * greedy chunk removal (ddmin-style, Zeller & Hildebrandt 2002) under a time
 * bound.
 *
 * What is compared, and why the rest is not:
 * - type, permission bits, uid, gid, nlink (directories included: ext4 and
 *   rewindfs both count 2 + subdirectories), size (not of directories),
 *   content bytes, symlink targets, directory listings, errno names.
 * - mtime only where a test operation set it explicitly (utimens with
 *   nanoseconds; every initial time is set so): when either side shows a
 *   value the fuzz set, both must show the same. A value set by the clock
 *   ("now") differs by the microseconds between the two calls.
 * - atime only while the native side still shows an explicitly set value:
 *   ext4 (relatime) updates atime on reads, rewindfs never does (README).
 * - ctime and inode numbers differ legitimately and are not compared
 *   between the two sides. A restore must reproduce the mount's own recorded
 *   manifest exactly, atime and mtime included.
 */
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { createHash } from 'node:crypto'
import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { Prng } from './prng.js'
import { fuseLayer } from '../../fuse/layer.js'
import type { RewindClient } from '../../client/client.js'

const KiB = 1024
const MiB = 1024 * KiB
/** The store's block size (base/types.ts); writes are aimed at its boundaries. */
export const BLOCK = 64 * KiB

// ---- operations -----------------------------------------------------------

/** Open flags by name (fs.constants), so sequences stay readable as JSON. */
export type FlagName = 'O_RDONLY' | 'O_WRONLY' | 'O_RDWR' | 'O_CREAT' | 'O_EXCL' | 'O_TRUNC' | 'O_APPEND' | 'O_DIRECTORY' | 'O_NOFOLLOW'

/**
 * One operation. Paths are relative to the tree's root ('' is the root).
 * `s` is a descriptor slot (0..SLOTS-1): `open` fills it on both sides, fd
 * operations on an empty slot are skipped on both. `d` seeds the bytes
 * written (Prng(d).bytes(len)). Times are decimal nanosecond strings (JSON
 * numbers lose precision beyond 2^53).
 */
export type Op =
  | { k: 'open', s: number, p: string, fl: FlagName[], mode: number }
  | { k: 'close', s: number }
  | { k: 'pwrite', s: number, off: number, len: number, d: number }
  | { k: 'write', s: number, len: number, d: number }
  | { k: 'pread', s: number, off: number, len: number }
  | { k: 'read', s: number, len: number }
  | { k: 'ftruncate', s: number, size: number }
  | { k: 'fsync', s: number, data?: boolean }
  | { k: 'fstat', s: number }
  | { k: 'writeFile', p: string, len: number, d: number, mode: number }
  | { k: 'append', p: string, len: number, d: number }
  | { k: 'readFile', p: string }
  | { k: 'truncate', p: string, size: number }
  | { k: 'rename', p: string, to: string }
  | { k: 'link', p: string, to: string }
  | { k: 'symlink', target: string, p: string }
  | { k: 'readlink', p: string }
  | { k: 'unlink', p: string }
  | { k: 'mkdir', p: string, mode: number }
  | { k: 'rmdir', p: string }
  | { k: 'chmod', p: string, mode: number }
  | { k: 'chown', p: string, uid: number, gid: number, follow: boolean }
  | { k: 'utimens', p: string, ns: [string, string] | null, follow: boolean }
  | { k: 'mmapWrite', p: string, off: number, len: number, d: number, flush: boolean }
  | { k: 'mmapRead', p: string, off: number, len: number }
  | { k: 'readdir', p: string }
  | { k: 'stat', p: string }
  | { k: 'check' }
  | { k: 'mark', c: string }
  | { k: 'remount', c: string }
  | { k: 'restore', c: string, auto: string, keep?: boolean }

/** A sequence to replay: the seed of the initial tree and the operations. */
export interface Repro {
  /** seed of the initial (lower) tree, see populate() */
  seed: number
  ops: Op[]
  /** what the sequence showed when it was saved */
  note?: string
}

/** Descriptor slots per tree. */
export const SLOTS = 6

/** Bytes written by an op with data seed d. */
export function dataOf (d: number, len: number): Buffer { return new Prng(d).bytes(len) }

const FLAG: Record<FlagName, number> = {
  O_RDONLY: fs.constants.O_RDONLY,
  O_WRONLY: fs.constants.O_WRONLY,
  O_RDWR: fs.constants.O_RDWR,
  O_CREAT: fs.constants.O_CREAT,
  O_EXCL: fs.constants.O_EXCL,
  O_TRUNC: fs.constants.O_TRUNC,
  O_APPEND: fs.constants.O_APPEND,
  O_DIRECTORY: fs.constants.O_DIRECTORY,
  O_NOFOLLOW: fs.constants.O_NOFOLLOW
}

/** Short one-line form of an op for logs. */
export function opLine (op: Op): string {
  const { k, ...rest } = op as any
  return `${k} ${JSON.stringify(rest)}`
}

// ---- the python helper (utime with ns, mmap) -------------------------------

/** A persistent python3 process answering JSON lines (test/python/fuzz_helper.py). */
export class PyHelper {
  private readonly proc: ChildProcess
  private readonly waiting: Array<{ resolve: (v: any) => void, reject: (e: Error) => void }> = []
  private buf = ''
  private stderr = ''
  private dead: Error | null = null

  constructor (script: string) {
    this.proc = spawn('python3', [script], { stdio: ['pipe', 'pipe', 'pipe'] })
    this.proc.stdout!.setEncoding('utf8')
    this.proc.stdout!.on('data', (s: string) => {
      this.buf += s
      let i: number
      while ((i = this.buf.indexOf('\n')) >= 0) {
        const line = this.buf.slice(0, i)
        this.buf = this.buf.slice(i + 1)
        const w = this.waiting.shift()
        if (w) w.resolve(JSON.parse(line))
      }
    })
    this.proc.stderr!.on('data', (s: Buffer) => { this.stderr = (this.stderr + s.toString()).slice(-4000) })
    this.proc.on('exit', (code, signal) => {
      this.dead = new Error(`fuzz_helper.py exited (code ${code}, signal ${signal}): ${this.stderr}`)
      for (const w of this.waiting.splice(0)) w.reject(this.dead)
    })
  }

  /** Sends one request; resolves with the reply object ({ok} | {err} | {exc}). */
  call (req: object): Promise<any> {
    if (this.dead) return Promise.reject(this.dead)
    return new Promise((resolve, reject) => {
      this.waiting.push({ resolve, reject })
      this.proc.stdin!.write(JSON.stringify(req) + '\n')
    })
  }

  /** Ends the process (stdin closed; killed if it lingers). */
  async close (): Promise<void> {
    if (this.dead) return
    const gone = new Promise(resolve => this.proc.once('exit', resolve))
    this.proc.stdin!.end()
    const t = setTimeout(() => this.proc.kill('SIGKILL'), 5000)
    await gone
    clearTimeout(t)
  }
}

// ---- stats and manifests ---------------------------------------------------

/** The stat fields the comparisons look at (times as decimal ns strings). */
export interface StatLite {
  type: string
  mode: string
  uid: number
  gid: number
  nlink: number
  size: number
  atime: string
  mtime: string
  ctime: string
  /** inode number (never compared between the two sides) */
  ino: string
}

function typeOf (mode: number): string {
  switch (mode & 0o170000) {
    case 0o100000: return 'file'
    case 0o040000: return 'dir'
    case 0o120000: return 'symlink'
    case 0o010000: return 'fifo'
    default: return 'other'
  }
}

/** Reduces a bigint stat to StatLite. */
export function statLite (s: fs.BigIntStats): StatLite {
  const mode = Number(s.mode)
  return {
    type: typeOf(mode), mode: (mode & 0o7777).toString(8), uid: Number(s.uid), gid: Number(s.gid), nlink: Number(s.nlink),
    size: Number(s.size), atime: s.atimeNs.toString(), mtime: s.mtimeNs.toString(), ctime: s.ctimeNs.toString(),
    ino: s.ino.toString()
  }
}

/**
 * Differences between a native and a mount stat under the comparison rules
 * (see the module comment); [] when they agree. `atime`: also apply the
 * atime rule.
 */
export function statDiff (nat: StatLite, mnt: StatLite, explicit: Set<string>, atime: boolean): string[] {
  const out: string[] = []
  for (const f of ['type', 'mode', 'uid', 'gid', 'nlink'] as const) if (nat[f] !== mnt[f]) out.push(`${f} ${nat[f]} vs ${mnt[f]}`)
  if (nat.type !== 'dir' && nat.size !== mnt.size) out.push(`size ${nat.size} vs ${mnt.size}`)
  if ((explicit.has(nat.mtime) || explicit.has(mnt.mtime)) && nat.mtime !== mnt.mtime) out.push(`mtime ${nat.mtime} vs ${mnt.mtime} (one side shows an explicitly set time)`)
  if (atime && explicit.has(nat.atime) && nat.atime !== mnt.atime) out.push(`atime ${nat.atime} vs ${mnt.atime} (native still shows the explicitly set time)`)
  return out
}

/** One path of a manifest: its StatLite and content (sha256 of a file, target of a symlink). */
export interface ManEntry { st: StatLite, content: string }
/** A tree's manifest: relative path ('' is the root) → entry. */
export type Manifest = Map<string, ManEntry>

/** Walks a tree (lstat, no symlink is followed) and hashes every file. */
export function manifestOf (root: string): Manifest {
  const out: Manifest = new Map()
  const rec = (rel: string): void => {
    const p = rel === '' ? root : path.join(root, rel)
    const st = statLite(fs.lstatSync(p, { bigint: true }))
    let content = '-'
    if (st.type === 'file') content = createHash('sha256').update(fs.readFileSync(p)).digest('hex')
    else if (st.type === 'symlink') content = '-> ' + fs.readlinkSync(p)
    out.set(rel, { st, content })
    if (st.type === 'dir') for (const name of fs.readdirSync(p).sort()) rec(rel === '' ? name : `${rel}/${name}`)
  }
  rec('')
  return out
}

/** Lines of manifest differences between native and mount under the comparison rules; [] when they agree. */
export function manifestDiffRelaxed (nat: Manifest, mnt: Manifest, explicit: Set<string>): string[] {
  const out: string[] = []
  for (const [p, a] of nat) {
    const b = mnt.get(p)
    if (!b) { out.push(`${p || '.'}: only in native (${a.st.type})`); continue }
    const d = statDiff(a.st, b.st, explicit, false)
    if (a.content !== b.content) d.push(`content ${a.content.slice(0, 20)} vs ${b.content.slice(0, 20)}`)
    if (d.length) out.push(`${p || '.'}: ${d.join(', ')}`)
  }
  for (const [p, b] of mnt) if (!nat.has(p)) out.push(`${p || '.'}: only on the mount (${b.st.type})`)
  return out
}

/**
 * Lines of differences between two manifests of the mount: a restore must be
 * exact, atime and mtime included, and ctime too when `ctime` (a checkpoint
 * of the same mount session: write-back sets times and modes on disk, which
 * gives the next session's lower layer new ctimes no filesystem lets one set).
 */
export function manifestDiffExact (want: Manifest, got: Manifest, ctime = false): string[] {
  const out: string[] = []
  for (const [p, a] of want) {
    const b = got.get(p)
    if (!b) { out.push(`${p || '.'}: missing after restore (${a.st.type})`); continue }
    const d: string[] = []
    for (const f of ['type', 'mode', 'uid', 'gid', 'nlink', 'atime', 'mtime'] as const) if (a.st[f] !== b.st[f]) d.push(`${f} ${a.st[f]} vs ${b.st[f]}`)
    if (ctime && a.st.ctime !== b.st.ctime) d.push(`ctime ${a.st.ctime} vs ${b.st.ctime}`)
    if (a.st.type !== 'dir' && a.st.size !== b.st.size) d.push(`size ${a.st.size} vs ${b.st.size}`)
    if (a.content !== b.content) d.push(`content ${a.content.slice(0, 20)} vs ${b.content.slice(0, 20)}`)
    if (d.length) out.push(`${p || '.'}: ${d.join(', ')}`)
  }
  for (const [p, b] of got) if (!want.has(p)) out.push(`${p || '.'}: present after restore but not at the checkpoint (${b.st.type})`)
  return out
}

// ---- the initial tree -----------------------------------------------------

/**
 * Fills `dir` with the initial tree of `seed` (it becomes the lower layer of
 * the mount): directories, files across block boundaries, a sparse file,
 * hard links, symlinks, special modes. Deterministic for a seed.
 */
export function populate (dir: string, seed: number): void {
  const rng = new Prng(seed ^ 0x5eed)
  const p = (r: string): string => path.join(dir, r)
  fs.mkdirSync(p('a/b'), { recursive: true })
  fs.mkdirSync(p('c'))
  fs.mkdirSync(p('d/e/f'), { recursive: true })
  fs.writeFileSync(p('a/x'), rng.bytes(rng.range(0, 3 * BLOCK + 100)))
  fs.writeFileSync(p('a/b/y'), rng.bytes(rng.range(BLOCK - 10, BLOCK + 10)))
  fs.writeFileSync(p('c/z'), rng.bytes(rng.range(0, 2000)))
  fs.writeFileSync(p('e'), '')
  const fd = fs.openSync(p('d/sparse'), 'w')
  fs.writeSync(fd, rng.bytes(100), 0, 100, rng.range(1, 40) * BLOCK - 50)
  fs.closeSync(fd)
  fs.linkSync(p('a/x'), p('c/x-link'))
  fs.symlinkSync('x', p('a/sym'))
  fs.symlinkSync('b', p('a/dirsym'))
  fs.symlinkSync('nowhere', p('d/dangling'))
  fs.chmodSync(p('c/z'), 0o4755)
  fs.chmodSync(p('d/e'), 0o2775)
  fs.chmodSync(p('c'), 0o1777)
}

/** Every path of a tree, children before their directory (for setting times). */
function pathsDeepestFirst (root: string): string[] {
  const out: string[] = []
  const rec = (rel: string): void => {
    const p = rel === '' ? root : path.join(root, rel)
    if (fs.lstatSync(p).isDirectory()) for (const n of fs.readdirSync(p)) rec(rel === '' ? n : `${rel}/${n}`)
    out.push(rel)
  }
  rec('')
  return out
}

// ---- value generation -------------------------------------------------------

/** A random explicit time (ns, decimal): mostly 2001..2023, sometimes before 1970 or after 2038. */
export function randomTimeNs (rng: Prng): string {
  const r = rng.next()
  let sec: bigint
  if (r < 0.05) sec = -BigInt(rng.range(1, 2 ** 31 - 1))
  else if (r < 0.1) sec = BigInt(2 ** 31) + BigInt(rng.range(0, 2 ** 31))
  else sec = BigInt(rng.range(1e9, 1.7e9))
  return (sec * 1000000000n + BigInt(rng.int(1e9))).toString()
}

/**
 * Sets every time of both trees to the same explicit values (deepest
 * first, no symlink followed), so the trees start identical and every
 * initial time is in `explicit`.
 */
export async function equalizeTimes (py: PyHelper, roots: string[], seed: number, explicit: Set<string>): Promise<void> {
  const rng = new Prng(seed ^ 0x71e5)
  const rels = pathsDeepestFirst(roots[0])
  for (const rel of rels) {
    const ns: [string, string] = [randomTimeNs(rng), randomTimeNs(rng)]
    explicit.add(ns[0]); explicit.add(ns[1])
    for (const root of roots) {
      const r = await py.call({ op: 'utime', path: rel === '' ? root : path.join(root, rel), ns, follow: false })
      if (!('ok' in r)) throw new Error(`setting initial times of ${rel} in ${root}: ${JSON.stringify(r)}`)
    }
  }
}

// ---- outcomes -------------------------------------------------------------

/** What an op did on one side: a comparable value or an errno name; `bytes` keeps data read (diagnostics). */
export interface Outcome { ok?: unknown, err?: string, bytes?: Buffer, st?: StatLite }

function sha (b: Uint8Array): string { return createHash('sha256').update(b).digest('hex').slice(0, 16) }

/** errno names by number (libuv has no name for some, e.g. ESTALE: Node then says "Unknown system error -116"). */
const ERRNO_NAMES = new Map(Object.entries(os.constants.errno).map(([k, v]) => [v, k]))

function errName (e: any): string {
  if (typeof e?.code === 'string' && /^E[A-Z0-9]+$/.test(e.code)) return e.code
  if (typeof e?.errno === 'number' && ERRNO_NAMES.has(-e.errno)) return ERRNO_NAMES.get(-e.errno)!
  return typeof e?.code === 'string' ? e.code : `EXCEPTION ${String(e?.message ?? e)}`
}

/** First difference of two buffers, for a report. */
function firstDiff (a: Buffer, b: Buffer): string {
  const n = Math.min(a.length, b.length)
  for (let i = 0; i < n; i++) if (a[i] !== b[i]) return `first different byte at ${i}: ${a[i]} vs ${b[i]} (lengths ${a.length}, ${b.length})`
  return `lengths ${a.length} vs ${b.length}`
}

// ---- lockstep -------------------------------------------------------------

/** A mismatch between the two sides. */
export interface Failure {
  /** index of the op in the sequence */
  index: number
  op: Op
  /** what differed: outcome | stat | manifest | restore | crash */
  what: string
  /** kind of op + what: the shrinker keeps sequences that fail the same way */
  signature: string
  native: unknown
  mount: unknown
  details: string[]
}

interface Side { root: string, fds: Map<number, number> }

/** Counters of one run. */
export interface Counts {
  ops: number
  checkpoints: number
  restores: number
  /** whole-tree comparisons outside marks and restores */
  checks: number
  /** unmounts with write-back and remounts */
  remounts: number
  /** descriptors held open across a restore and checked (README: restored content, or ESTALE) */
  held: number
  /** of those, how many answered ESTALE or EIO */
  stale: number
  /** outcomes accepted as a documented limitation (fstat of an fd whose name is gone: ESTALE, ENOENT before the binding's ESTALE patch) */
  limits: number
}

/** A checkpoint known to both sides. */
interface Cp {
  /** checkpoint id on the mount */
  id: number
  /** cp -a copy of the native tree at the checkpoint */
  snap: string
  /** the mount's manifest at the checkpoint */
  mnt: Manifest
  /** mount session it was taken in (Lockstep.session) */
  session: number
}

/** What a Lockstep needs from its mount (test/helpers/mount.ts Mounted). */
export interface LockstepMount {
  dir: string
  /** the store directory (the daemon leaves the outcome of an unmount in unmount.json there) */
  store: string
  /** replaced by remount() */
  client: RewindClient
  /** clean unmount through the daemon, writing the final state back */
  unmount(discard?: boolean): Promise<void>
  /** a new daemon on the same directory and store */
  remount(): Promise<void>
}

/**
 * Applies ops to a native tree and a mount in lockstep and compares them.
 * Construct with both trees already identical (populate + cp -a +
 * equalizeTimes), then call `step` per op; `close` closes every descriptor.
 */
export class Lockstep {
  readonly nat: Side
  readonly mnt: Side
  /**
   * Open slots: the current name (relative, symlinks resolved) of the file
   * each was opened by, following renames of it and of its directories;
   * null once that name is gone (unlinked, or replaced by a rename), which
   * is when libfuse 2.9 can no longer answer fstat (see step()).
   */
  readonly slotName = new Map<number, string | null>()
  /** inode number (on the mount) and type of the file each open slot names, taken at open */
  readonly slotIno = new Map<number, { ino: string, type: string, readable: boolean }>()
  /** ns values the fuzz set explicitly (see statDiff) */
  readonly explicit: Set<string>
  /** checkpoints by name (op.c of a mark, op.auto of a restore) */
  readonly cps = new Map<string, Cp>()
  /** mount session: incremented by each remount (write-back gives the lower layer new ctimes) */
  session = 1
  readonly counts: Counts = { ops: 0, checkpoints: 0, restores: 0, checks: 0, limits: 0, remounts: 0, held: 0, stale: 0 }

  constructor (
    readonly m: LockstepMount,
    nativeRoot: string,
    /** directory for native snapshots (created) */
    readonly snapRoot: string,
    readonly py: PyHelper,
    explicit: Set<string>
  ) {
    this.nat = { root: nativeRoot, fds: new Map() }
    this.mnt = { root: m.dir, fds: new Map() }
    this.explicit = explicit
    fs.mkdirSync(snapRoot, { recursive: true })
  }

  /** Records the state at mount time as checkpoint `name` (the daemon's "mount" checkpoint). */
  async adoptMountCheckpoint (name: string): Promise<void> {
    const log = await this.m.client.log({})
    const c = log.find(x => x.label === 'mount')
    if (!c) return
    this.cps.set(name, { id: c.id, snap: this.snapshot(name), mnt: manifestOf(this.mnt.root), session: this.session })
  }

  private abs (side: Side, rel: string): string { return rel === '' ? side.root : path.join(side.root, rel) }

  private snapshot (name: string): string {
    const snap = path.join(this.snapRoot, name)
    fs.rmSync(snap, { recursive: true, force: true })
    const r = spawnSync('cp', ['-a', this.nat.root, snap], { encoding: 'utf8' })
    if (r.status !== 0) throw new Error(`cp -a ${this.nat.root} ${snap}: ${r.stderr}`)
    return snap
  }

  /** Closes every open slot on both sides. */
  closeAll (): void {
    for (const side of [this.nat, this.mnt]) {
      for (const fd of side.fds.values()) { try { fs.closeSync(fd) } catch {} }
      side.fds.clear()
    }
    this.slotName.clear()
    this.slotIno.clear()
  }

  /** Runs op on one side (Node fs, or the python helper). */
  private async run (side: Side, op: Op, data: Buffer | null): Promise<Outcome> {
    const P = (rel: string): string => this.abs(side, rel)
    const fdOf = (s: number): number => {
      const fd = side.fds.get(s)
      if (fd === undefined) throw Object.assign(new Error('empty slot'), { code: 'NOSLOT' })
      return fd
    }
    try {
      switch (op.k) {
        case 'open': {
          const old = side.fds.get(op.s)
          if (old !== undefined) { side.fds.delete(op.s); fs.closeSync(old) }
          const fd = fs.openSync(P(op.p), op.fl.reduce((a, f) => a | FLAG[f], 0), op.mode)
          side.fds.set(op.s, fd)
          return { ok: true }
        }
        case 'close': { const fd = fdOf(op.s); side.fds.delete(op.s); fs.closeSync(fd); return { ok: true } }
        case 'pwrite': return { ok: fs.writeSync(fdOf(op.s), data!, 0, op.len, op.off) }
        case 'write': return { ok: fs.writeSync(fdOf(op.s), data!, 0, op.len) }
        case 'pread':
        case 'read': {
          const b = Buffer.alloc(op.len)
          const n = fs.readSync(fdOf(op.s), b, 0, op.len, op.k === 'pread' ? op.off : null)
          const got = b.subarray(0, n)
          return { ok: `${n} bytes ${sha(got)}`, bytes: got }
        }
        case 'ftruncate': fs.ftruncateSync(fdOf(op.s), op.size); return { ok: true }
        case 'fsync': if (op.data) fs.fdatasyncSync(fdOf(op.s)); else fs.fsyncSync(fdOf(op.s)); return { ok: true }
        case 'fstat': { const st = statLite(fs.fstatSync(fdOf(op.s), { bigint: true })); return { ok: 'stat', st } }
        case 'writeFile': fs.writeFileSync(P(op.p), data!, { mode: op.mode }); return { ok: true }
        case 'append': fs.appendFileSync(P(op.p), data!); return { ok: true }
        case 'readFile': { const b = fs.readFileSync(P(op.p)); return { ok: `${b.length} bytes ${sha(b)}`, bytes: b } }
        case 'truncate': fs.truncateSync(P(op.p), op.size); return { ok: true }
        case 'rename': fs.renameSync(P(op.p), P(op.to)); return { ok: true }
        case 'link': fs.linkSync(P(op.p), P(op.to)); return { ok: true }
        case 'symlink': fs.symlinkSync(op.target, P(op.p)); return { ok: true }
        case 'readlink': return { ok: fs.readlinkSync(P(op.p)) }
        case 'unlink': fs.unlinkSync(P(op.p)); return { ok: true }
        case 'mkdir': fs.mkdirSync(P(op.p), { mode: op.mode }); return { ok: true }
        case 'rmdir': fs.rmdirSync(P(op.p)); return { ok: true }
        case 'chmod': fs.chmodSync(P(op.p), op.mode); return { ok: true }
        case 'chown': if (op.follow) fs.chownSync(P(op.p), op.uid, op.gid); else fs.lchownSync(P(op.p), op.uid, op.gid); return { ok: true }
        case 'readdir': return { ok: fs.readdirSync(P(op.p)).sort() }
        case 'stat': { const st = statLite(fs.statSync(P(op.p), { bigint: true })); return { ok: 'stat', st } }
        case 'utimens': return pyOutcome(await this.py.call({ op: 'utime', path: P(op.p), ns: op.ns, follow: op.follow }))
        case 'mmapWrite': return pyOutcome(await this.py.call({ op: 'mmap_write', path: P(op.p), off: op.off, data: data!.toString('base64'), flush: op.flush }))
        case 'mmapRead': return pyOutcome(await this.py.call({ op: 'mmap_read', path: P(op.p), off: op.off, len: op.len }))
        default: throw new Error(`not a per-side op: ${op.k}`)
      }
    } catch (e) {
      return { err: errName(e) }
    }
  }

  /** The name of rel with its directory's symlinks resolved (in the native tree), or rel when that fails. */
  private canon (rel: string): string {
    if (rel === '') return ''
    const i = rel.lastIndexOf('/')
    const parent = i < 0 ? '' : rel.slice(0, i)
    try {
      const real = fs.realpathSync(this.abs(this.nat, parent))
      const root = fs.realpathSync(this.nat.root)
      if (real !== root && !real.startsWith(root + '/')) return rel
      const r = real.slice(root.length + 1)
      return r === '' ? rel.slice(i + 1) : `${r}/${rel.slice(i + 1)}`
    } catch { return rel }
  }

  /** Canonical names an op renames or removes, taken before it runs; same: a rename between two names of one inode (a no-op). */
  private namesBefore (op: Op): { p?: string, to?: string, same?: boolean } {
    if (op.k === 'unlink') return { p: this.canon(op.p) }
    if (op.k !== 'rename') return {}
    let same = false
    try { same = fs.lstatSync(this.abs(this.nat, op.p)).ino === fs.lstatSync(this.abs(this.nat, op.to)).ino } catch {}
    return { p: this.canon(op.p), to: this.canon(op.to), same }
  }

  /** Updates slotName after op (native outcome a). */
  private trackNames (op: Op, a: Outcome, names: { p?: string, to?: string, same?: boolean }): void {
    if (op.k === 'open') {
      if (!a.ok) { this.slotName.delete(op.s); return }
      let name = op.p
      try {
        const root = fs.realpathSync(this.nat.root)
        const real = fs.realpathSync(this.abs(this.nat, op.p))
        if (real.startsWith(root + '/')) name = real.slice(root.length + 1)
        else if (real === root) name = ''
      } catch {}
      this.slotName.set(op.s, name)
    } else if (op.k === 'close') this.slotName.delete(op.s)
    else if (op.k === 'unlink' && a.ok) {
      for (const [s, n] of this.slotName) if (n === names.p) this.slotName.set(s, null)
    } else if (op.k === 'rename' && a.ok && !names.same) {
      const from = names.p!; const to = names.to!
      for (const [s, n] of this.slotName) {
        if (n === null) continue
        if (n === to) this.slotName.set(s, null)
        else if (n === from || n.startsWith(from + '/')) this.slotName.set(s, to + n.slice(from.length))
      }
    }
  }

  /** Paths (relative) whose stat is compared after op: its paths and their parents, the path of its slot. */
  private touched (op: Op): string[] {
    const ps: string[] = []
    const add = (p: string | undefined): void => {
      if (p === undefined) return
      ps.push(p)
      const i = p.lastIndexOf('/')
      ps.push(i < 0 ? '' : p.slice(0, i))
    }
    if ('p' in op) add(op.p)
    if ('to' in op) add(op.to)
    if ('s' in op) add(this.slotName.get(op.s) ?? undefined)
    return [...new Set(ps)]
  }

  private fail (index: number, op: Op, what: string, native: unknown, mount: unknown, details: string[] = []): Failure {
    return { index, op, what, signature: `${op.k}:${what}`, native, mount, details }
  }

  /** Applies op (the index-th of its sequence) to both sides; a Failure when they disagree. */
  async step (index: number, op: Op): Promise<Failure | null> {
    this.counts.ops++
    try {
      if (op.k === 'mark') return await this.mark(index, op)
      if (op.k === 'restore') return await this.restore(index, op)
      if (op.k === 'check') return this.check(index, op)
      if (op.k === 'remount') return await this.remount(index, op)
      if (op.k === 'utimens' && op.ns) { this.explicit.add(op.ns[0]); this.explicit.add(op.ns[1]) }
      // the roots are not removed, renamed or replaced (the mount point answers EBUSY; the native root would go)
      if ((op.k === 'rename' || op.k === 'rmdir' || op.k === 'unlink' || op.k === 'link') && (op.p === '' || ('to' in op && op.to === ''))) return null
      const data = 'd' in op ? dataOf(op.d, op.len) : null
      const names = this.namesBefore(op)
      const a = await this.run(this.nat, op, data)
      const b = await this.run(this.mnt, op, data)
      this.trackNames(op, a, names)
      if (op.k === 'open' && b.ok) {
        try { const st = statLite(fs.fstatSync(this.mnt.fds.get(op.s)!, { bigint: true })); this.slotIno.set(op.s, { ino: st.ino, type: st.type, readable: !op.fl.includes('O_WRONLY') }) } catch { this.slotIno.delete(op.s) }
      }
      // LIMITATION (README): libfuse 2.9 answers fstat without a file handle, by the name the
      // file was opened by; once that name is gone it answers ENOENT, which the binding turns into
      // ESTALE (item 9 of fuse-native.c) — reads and writes still work. A stat answered from the
      // kernel's cache must be the fresh one: changes through other names drop the cached
      // attributes of such nameless nodes (fuzz case nameless-fd-hardlink-attrs), so fstat then
      // answers ESTALE where it used to show the old nlink/mode/size.
      if (op.k === 'fstat' && a.ok && (b.err === 'ESTALE' || b.err === 'ENOENT') && this.slotName.get(op.s) === null) { this.counts.limits++; return null }
      // a descriptor open on one side only would make every later op on the slot differ: keep the slots in step
      if (op.k === 'open' && !!a.ok !== !!b.ok) {
        for (const side of [this.nat, this.mnt]) { const fd = side.fds.get(op.s); if (fd !== undefined) { side.fds.delete(op.s); fs.closeSync(fd) } }
      }
      if (a.err !== b.err || JSON.stringify(a.ok) !== JSON.stringify(b.ok)) {
        const details: string[] = []
        if (a.bytes && b.bytes) details.push(firstDiff(a.bytes, b.bytes))
        return this.fail(index, op, 'outcome', { ok: a.ok, err: a.err }, { ok: b.ok, err: b.err }, details)
      }
      if (a.st && b.st) {
        const d = statDiff(a.st, b.st, this.explicit, true)
        if (d.length) return this.fail(index, op, 'stat', a.st, b.st, d)
      }
      for (const rel of this.touched(op)) {
        const f = this.compareStat(index, op, rel)
        if (f) return f
      }
      return null
    } catch (e) {
      return this.fail(index, op, 'crash', null, null, [String((e as Error)?.stack ?? e)])
    }
  }

  /** Compares lstat of rel on both sides. */
  private compareStat (index: number, op: Op, rel: string): Failure | null {
    const get = (side: Side): { st?: StatLite, err?: string } => {
      try { return { st: statLite(fs.lstatSync(this.abs(side, rel), { bigint: true })) } } catch (e) { return { err: errName(e) } }
    }
    const a = get(this.nat)
    const b = get(this.mnt)
    if (a.err !== b.err) return this.fail(index, op, 'stat', { path: rel, ...a }, { path: rel, ...b }, [`lstat ${rel || '.'}: ${a.err ?? 'ok'} vs ${b.err ?? 'ok'}`])
    if (a.st && b.st) {
      const d = statDiff(a.st, b.st, this.explicit, true)
      if (d.length) return this.fail(index, op, 'stat', { path: rel, ...a.st }, { path: rel, ...b.st }, d.map(x => `${rel || '.'}: ${x}`))
    }
    return null
  }

  /** Whole-tree comparison of both sides. */
  private check (index: number, op: Op): Failure | null {
    this.counts.checks++
    const d = manifestDiffRelaxed(manifestOf(this.nat.root), manifestOf(this.mnt.root), this.explicit)
    return d.length ? this.fail(index, op, 'manifest', null, null, d.slice(0, 30)) : null
  }

  private async mark (index: number, op: Extract<Op, { k: 'mark' }>): Promise<Failure | null> {
    const cp = await this.m.client.mark({ label: op.c })
    this.counts.checkpoints++
    const snap = this.snapshot(op.c)
    const mnt = manifestOf(this.mnt.root)
    this.cps.set(op.c, { id: cp.id, snap, mnt, session: this.session })
    const d = manifestDiffRelaxed(manifestOf(this.nat.root), mnt, this.explicit)
    return d.length ? this.fail(index, op, 'manifest', null, null, d.slice(0, 30)) : null
  }

  /**
   * Unmount with write-back and mount again (a new session whose lower layer
   * is the written-back directory): the mount must show exactly what it
   * showed before. The directory is not looked at in between (reading it
   * would change atimes). The daemon's "unmount" and "mount" checkpoints
   * both hold that state; they are recorded as `${c}u` and `${c}m`.
   */
  private async remount (index: number, op: Extract<Op, { k: 'remount' }>): Promise<Failure | null> {
    this.closeAll()
    this.counts.remounts++
    const before = manifestOf(this.mnt.root)
    const known = new Set((await this.m.client.log({})).map(c => c.id))
    await this.m.unmount(false)
    // write-back must have written everything (else the next mount resumes instead of starting a session)
    let outcome: any = null
    try { outcome = JSON.parse(fs.readFileSync(path.join(this.m.store, 'unmount.json'), 'utf8')) } catch (e) { outcome = { ok: false, errors: [`unmount.json: ${(e as Error).message}`] } }
    await this.m.remount()
    if (!outcome?.ok) return this.fail(index, op, 'writeback', null, null, [`unmount did not write every path back: ${JSON.stringify(outcome?.errors ?? outcome).slice(0, 2000)}`])
    const old = this.session++
    const got = manifestOf(this.mnt.root)
    for (const c of await this.m.client.log({})) {
      if (known.has(c.id)) continue
      // the unmount seal holds the last session's view, the mount checkpoint the new one's (same but ctimes)
      if (c.label === 'unmount') this.cps.set(`${op.c}u`, { id: c.id, snap: this.snapshot(`${op.c}u`), mnt: before, session: old })
      if (c.label === 'mount') this.cps.set(`${op.c}m`, { id: c.id, snap: this.snapshot(`${op.c}m`), mnt: got, session: this.session })
    }
    const exact = manifestDiffExact(before, got)
    if (exact.length) return this.fail(index, op, 'remount', null, null, exact.slice(0, 30))
    return null
  }

  private async restore (index: number, op: Extract<Op, { k: 'restore' }>): Promise<Failure | null> {
    const target = this.cps.get(op.c)
    if (!target) return null // its mark is not in this (shrunk) sequence
    // keep: the mount's descriptors stay open across the restore and are checked after it
    const held = op.keep ? [...this.mnt.fds].map(([s, fd]) => ({ s, fd, name: this.slotName.get(s), ...this.slotIno.get(s) })) : []
    if (op.keep) this.mnt.fds.clear()
    // ll: what each held descriptor reads now is what it must read after the restore (checkHeld)
    if (BY_NODE_ID) for (const h of held as Array<{ fd: number, pre?: Buffer | null, type?: string, readable?: boolean }>) if (h.type === 'file' && h.readable === true) h.pre = preadFd(h.fd, BLOCK)
    this.closeAll()
    // the daemon seals unsaved changes first ("before restore to N"): record them under op.auto
    const before = manifestOf(this.mnt.root)
    const known = new Set((await this.m.client.log({})).map(c => c.id))
    await this.m.client.restore({ id: target.id })
    this.counts.restores++
    const auto = (await this.m.client.log({})).filter(c => !known.has(c.id) && c.label === `before restore to ${target.id}`)
    if (auto.length > 0) {
      this.cps.set(op.auto, { id: auto[auto.length - 1].id, snap: this.snapshot(op.auto), mnt: before, session: this.session })
    }
    fs.rmSync(this.nat.root, { recursive: true, force: true })
    const r = spawnSync('cp', ['-a', target.snap, this.nat.root], { encoding: 'utf8' })
    if (r.status !== 0) throw new Error(`cp -a ${target.snap} ${this.nat.root}: ${r.stderr}`)
    const got = manifestOf(this.mnt.root)
    const exact = manifestDiffExact(target.mnt, got, target.session === this.session)
    if (exact.length) { closeFds(held); return this.fail(index, op, 'restore', null, null, exact.slice(0, 30)) }
    const d = manifestDiffRelaxed(manifestOf(this.nat.root), got, this.explicit)
    if (d.length) { closeFds(held); return this.fail(index, op, 'manifest', null, null, d.slice(0, 30)) }
    const bad = this.checkHeld(held, got)
    closeFds(held)
    return bad.length ? this.fail(index, op, 'handle', null, null, bad) : null
  }

  /**
   * Descriptors held across a restore (README "Open files across a
   * restore"): one whose file is in the restored state at the path it was
   * opened by (following renames) reads that state's content; any other
   * fails with ESTALE (libfuse 2.9 knows open files by that name), or EIO
   * once the kernel has looked that path up again and dropped the old
   * inode. One whose name was unlinked (slotName null) keeps its inode:
   * the restored content if the inode is in the restored state, else
   * whatever it had (an orphan lives on for its handles, as natively).
   * On the libfuse 3 low-level layer (REWINDFS_FUSE=ll; issue 13) a restore
   * acts like renaming the checkpoint's tree over the live one: every
   * descriptor reads what it read just before the restore (`pre`), whether
   * its file changed, moved, vanished or stayed (changed on purpose twice:
   * the first rule's ESTALE came from libfuse 2.9's names, the second's
   * "restored content" from ll's node ids before issue 13).
   * Returns the handles that broke the rule.
   */
  private checkHeld (held: Array<{ s: number, fd: number, name?: string | null, ino?: string, type?: string, readable?: boolean, pre?: Buffer | null }>, got: Manifest): string[] {
    const bad: string[] = []
    for (const h of held) {
      if (h.ino === undefined || h.type !== 'file' || !h.readable || h.name === undefined) continue
      this.counts.held++
      if (BY_NODE_ID) {
        if (h.pre === null || h.pre === undefined) continue // it could not be read before the restore either
        const b = Buffer.alloc(BLOCK)
        try {
          const n = fs.readSync(h.fd, b, 0, BLOCK, 0)
          if (!b.subarray(0, n).equals(h.pre)) bad.push(`slot ${h.s} (inode ${h.ino}, opened as ${h.name ?? '(name unlinked)'}): read ${firstDiff(h.pre, b.subarray(0, n))}, expected the bytes it read before the restore`)
        } catch (e) { bad.push(`slot ${h.s} (inode ${h.ino}): read failed with ${errName(e)}, expected the bytes it read before the restore`) }
        continue
      }
      const b = Buffer.alloc(BLOCK)
      let n: number | null = null
      let err: string | null = null
      try { n = fs.readSync(h.fd, b, 0, BLOCK, 0) } catch (e) { err = errName(e) }
      const stale = err === 'ESTALE' || err === 'EIO'
      if (stale) this.counts.stale++
      const now = [...got].filter(([, e]) => e.st.type === 'file' && e.st.ino === h.ino).map(([p]) => p)
      const kept = h.name === null || BY_NODE_ID ? now.length > 0 : got.get(h.name)?.st.ino === h.ino
      const what = `slot ${h.s} (inode ${h.ino}, opened as ${h.name ?? '(name unlinked)'}, after the restore at ${now.join(', ') || 'no path'})`
      if (kept) {
        const want = preadPath(this.abs(this.mnt, now[0]), BLOCK)
        if (err !== null) bad.push(`${what}: read failed with ${err}, expected the restored content`)
        else if (!b.subarray(0, n!).equals(want)) bad.push(`${what}: read ${firstDiff(want, b.subarray(0, n!))}`)
      } else if (h.name !== null && !BY_NODE_ID && !stale) {
        bad.push(`${what}: read gave ${err ?? `${n} bytes`}, expected ESTALE or EIO`)
      }
    }
    return bad
  }
}

/** The mount is served by the low-level layer: open files are known to the kernel by node id (checkHeld). */
const BY_NODE_ID = fuseLayer() === 'll'

function closeFds (held: Array<{ fd: number }>): void {
  for (const h of held) { try { fs.closeSync(h.fd) } catch {} }
}

/** Up to n bytes from the start of an open descriptor, or null when it cannot be read. */
function preadFd (fd: number, n: number): Buffer | null {
  const b = Buffer.alloc(n)
  try { return b.subarray(0, fs.readSync(fd, b, 0, n, 0)) } catch { return null }
}

/** Up to n bytes from the start of a file. */
function preadPath (p: string, n: number): Buffer {
  const fd = fs.openSync(p, 'r')
  try {
    const b = Buffer.alloc(n)
    return b.subarray(0, fs.readSync(fd, b, 0, n, 0))
  } finally { fs.closeSync(fd) }
}

function pyOutcome (r: any): Outcome {
  if ('ok' in r) return { ok: r.ok }
  if ('err' in r) return { err: r.err }
  throw new Error(`fuzz_helper.py: ${r.exc}`)
}

// ---- generation -----------------------------------------------------------

const NAMES = ['a', 'b', 'c', 'd', 'e', 'x', 'y', 'z']

interface Entry { rel: string, type: string }

function walk (root: string): Entry[] {
  const out: Entry[] = []
  const rec = (rel: string): void => {
    for (const name of fs.readdirSync(rel === '' ? root : path.join(root, rel)).sort()) {
      const r = rel === '' ? name : `${rel}/${name}`
      const st = fs.lstatSync(path.join(root, r))
      const type = st.isDirectory() ? 'dir' : st.isSymbolicLink() ? 'symlink' : st.isFile() ? 'file' : 'other'
      out.push({ rel: r, type })
      if (type === 'dir') rec(r)
    }
  }
  rec('')
  return out
}

/** Weighted kinds of per-side ops. */
const KINDS: Array<[Op['k'], number]> = [
  ['open', 8], ['close', 4], ['pwrite', 14], ['write', 3], ['pread', 8], ['read', 2], ['ftruncate', 3], ['fsync', 2],
  ['fstat', 2], ['writeFile', 5], ['append', 3], ['readFile', 3], ['truncate', 4], ['rename', 7], ['link', 3],
  ['symlink', 3], ['readlink', 1], ['unlink', 4], ['mkdir', 4], ['rmdir', 3], ['chmod', 3], ['chown', 1],
  ['utimens', 4], ['mmapWrite', 3], ['mmapRead', 2], ['readdir', 2], ['stat', 2]
]
const KIND_TOTAL = KINDS.reduce((a, [, w]) => a + w, 0)

/** Draws ops for one sequence: per-side ops from the native tree's state, marks, restores and checks on a schedule. */
export class Generator {
  private n = 0
  private nextMark: number
  private nextRestore: number
  private nextCheck: number
  private marks = 0
  private autos = 0
  private nextRemount: number
  private remounts = 0

  constructor (readonly rng: Prng, readonly ls: Lockstep) {
    this.nextMark = rng.range(5, 30)
    this.nextRestore = rng.range(40, 100)
    this.nextCheck = rng.range(30, 60)
    this.nextRemount = rng.range(100, 400)
  }

  /** The next op. */
  next (): Op {
    const rng = this.rng
    this.n++
    if (this.n >= this.nextMark) {
      this.nextMark = this.n + rng.range(5, 40)
      return { k: 'mark', c: `c${this.marks++}` }
    }
    if (this.n >= this.nextRestore && this.ls.cps.size > 0) {
      this.nextRestore = this.n + rng.range(30, 120)
      return { k: 'restore', c: rng.pick([...this.ls.cps.keys()]), auto: `a${this.autos++}`, keep: rng.chance(0.4) }
    }
    if (this.n >= this.nextRemount) {
      this.nextRemount = this.n + rng.range(200, 600)
      return { k: 'remount', c: `s${this.remounts++}` }
    }
    if (this.n >= this.nextCheck) {
      this.nextCheck = this.n + rng.range(30, 80)
      return { k: 'check' }
    }
    return this.sideOp()
  }

  private sideOp (): Op {
    const rng = this.rng
    const es = walk(this.ls.nat.root)
    const byType = (t: string): string[] => es.filter(e => e.type === t).map(e => e.rel)
    const files = byType('file')
    const dirs = ['', ...byType('dir')]
    const links = byType('symlink')
    const all = es.map(e => e.rel)
    const taken = new Set(all)
    const openPaths = [...this.ls.slotName.values()].filter((n): n is string => n !== null)
    const fresh = (): string => {
      const parent = rng.pick(dirs)
      for (let i = 0; i < 6; i++) {
        const n = rng.pick(NAMES) + (rng.chance(0.3) ? String(rng.int(4)) : '')
        const rel = parent === '' ? n : `${parent}/${n}`
        if (!taken.has(rel)) return rel
      }
      return (parent === '' ? '' : parent + '/') + `n${rng.int(1000)}`
    }
    // a path of any kind, mostly existing, sometimes one that makes the op fail
    const any = (): string => {
      const r = rng.next()
      if (r < 0.55 && all.length) return rng.pick(all)
      if (r < 0.8) return fresh()
      if (r < 0.86) return `nodir${rng.int(3)}/${rng.pick(NAMES)}`
      if (r < 0.92 && files.length) return `${rng.pick(files)}/${rng.pick(NAMES)}`
      if (r < 0.96 && links.length) return `${rng.pick(links)}/${rng.pick(NAMES)}`
      return rng.pick(all.length ? all : [''])
    }
    const file = (): string => {
      if (openPaths.length && rng.chance(0.15)) return rng.pick(openPaths)
      return files.length && rng.chance(0.8) ? rng.pick(files) : any()
    }
    const dir = (): string => rng.chance(0.8) ? rng.pick(dirs) : any()
    // the root cannot be removed, renamed or replaced (the mount point answers EBUSY, the native root would go)
    const notRoot = (p: string): string => p === '' ? fresh() : p
    const slot = (): number => {
      const open = [...this.ls.slotName.keys()]
      return open.length && rng.chance(0.9) ? rng.pick(open) : rng.int(SLOTS)
    }
    const natFdSize = (s: number): number => {
      const fd = this.ls.nat.fds.get(s)
      if (fd === undefined) return 0
      try { return fs.fstatSync(fd).size } catch { return 0 }
    }
    const pathSize = (p: string): number => { try { return fs.statSync(path.join(this.ls.nat.root, p)).size } catch { return 0 } }
    const len = (): number => {
      const r = rng.next()
      if (r < 0.3) return rng.int(4097)
      if (r < 0.6) return rng.int(200 * KiB + 1)
      if (r < 0.8) return Math.max(0, rng.range(1, 3) * BLOCK + rng.range(-300, 300))
      if (r < 0.9) return rng.range(1, 3) * BLOCK
      return rng.int(65)
    }
    const offset = (size: number): number => {
      const r = rng.next()
      if (r < 0.3) return rng.int(size + 256 * KiB + 1)
      if (r < 0.6) return Math.max(0, rng.int(65) * BLOCK + rng.range(-300, 300))
      if (r < 0.85) return rng.int(4 * MiB)
      if (r < 0.865) return rng.range(8 * MiB, 24 * MiB)
      return Math.max(0, size - rng.int(2))
    }
    const newSize = (size: number): number => {
      const r = rng.next()
      if (r < 0.4) return rng.int(size + 1)
      if (r < 0.6) return 0
      if (r < 0.8) return Math.max(0, rng.int(40) * BLOCK + rng.range(-2, 2))
      if (r < 0.98) return size + rng.int(300 * KiB)
      return rng.range(8 * MiB, 32 * MiB)
    }
    const mode = (): number => rng.chance(0.7) ? rng.pick([0o644, 0o600, 0o755, 0o700, 0o444]) : rng.int(0o10000)
    const seed = (): number => rng.int(2 ** 31)
    const time = (): [string, string] | null => rng.chance(0.1) ? null : [randomTimeNs(rng), randomTimeNs(rng)]

    let pick = rng.int(KIND_TOTAL)
    let kind: Op['k'] = 'stat'
    for (const [k, w] of KINDS) { if (pick < w) { kind = k; break } pick -= w }
    switch (kind) {
      case 'open': {
        const fl: FlagName[] = [rng.pick(['O_RDONLY', 'O_WRONLY', 'O_RDWR', 'O_RDWR'] as const)]
        if (rng.chance(0.5)) fl.push('O_CREAT')
        if (fl.includes('O_CREAT') && rng.chance(0.2)) fl.push('O_EXCL')
        if (rng.chance(0.12)) fl.push('O_TRUNC')
        if (rng.chance(0.15)) fl.push('O_APPEND')
        if (rng.chance(0.03)) fl.push('O_DIRECTORY')
        if (rng.chance(0.04)) fl.push('O_NOFOLLOW')
        const free = [...Array(SLOTS).keys()].filter(s => !this.ls.slotName.has(s))
        const s = free.length && rng.chance(0.9) ? rng.pick(free) : rng.int(SLOTS)
        return { k: 'open', s, p: rng.chance(0.3) ? fresh() : file(), fl, mode: mode() }
      }
      case 'close': return { k: 'close', s: slot() }
      case 'pwrite': { const s = slot(); return { k: 'pwrite', s, off: offset(natFdSize(s)), len: len(), d: seed() } }
      case 'write': return { k: 'write', s: slot(), len: len(), d: seed() }
      case 'pread': { const s = slot(); return { k: 'pread', s, off: offset(natFdSize(s)), len: len() } }
      case 'read': return { k: 'read', s: slot(), len: len() }
      case 'ftruncate': { const s = slot(); return { k: 'ftruncate', s, size: newSize(natFdSize(s)) } }
      case 'fsync': return { k: 'fsync', s: slot(), data: rng.chance(0.3) }
      case 'fstat': return { k: 'fstat', s: slot() }
      case 'writeFile': return { k: 'writeFile', p: rng.chance(0.5) ? fresh() : file(), len: len(), d: seed(), mode: mode() }
      case 'append': return { k: 'append', p: file(), len: len(), d: seed() }
      case 'readFile': return { k: 'readFile', p: file() }
      case 'truncate': { const p = file(); return { k: 'truncate', p, size: newSize(pathSize(p)) } }
      case 'rename': {
        const subdirs = dirs.filter(d => d !== '')
        const movable = [...files, ...links]
        const src = subdirs.length && rng.chance(0.25) ? rng.pick(subdirs) : movable.length && rng.chance(0.85) ? rng.pick(movable) : any()
        const r = rng.next()
        // over an existing target, into a subdirectory, or to a fresh name (also under itself: EINVAL)
        const to = r < 0.35 ? any() : r < 0.45 && src ? `${src}/${rng.pick(NAMES)}` : fresh()
        return { k: 'rename', p: notRoot(src), to: notRoot(to) }
      }
      case 'link': return { k: 'link', p: rng.chance(0.85) ? file() : any(), to: notRoot(rng.chance(0.85) ? fresh() : any()) }
      case 'symlink': {
        const p = notRoot(rng.chance(0.9) ? fresh() : any())
        // targets never contain '..': wherever the link is moved, it resolves inside the tree or
        // nowhere (both trees share a parent directory, which the ops must not reach)
        const i = p.lastIndexOf('/')
        const under = i < 0 ? all : all.filter(e => e.startsWith(p.slice(0, i + 1))).map(e => e.slice(i + 1))
        const target = rng.chance(0.6) && under.length ? rng.pick(under) : rng.pick(['nowhere', 'nodir/x', '/nonexistent-rewindfs-fuzz/x', rng.pick(NAMES), `${rng.pick(NAMES)}/${rng.pick(NAMES)}`])
        return { k: 'symlink', target, p }
      }
      case 'readlink': return { k: 'readlink', p: rng.chance(0.7) && links.length ? rng.pick(links) : any() }
      case 'unlink': return { k: 'unlink', p: notRoot(rng.chance(0.8) && files.length + links.length ? rng.pick([...files, ...links, ...openPaths]) : any()) }
      case 'mkdir': return { k: 'mkdir', p: rng.chance(0.85) ? fresh() : any(), mode: rng.chance(0.8) ? rng.pick([0o755, 0o700, 0o2775, 0o1777, 0o555]) : rng.int(0o10000) }
      case 'rmdir': return { k: 'rmdir', p: notRoot(dir()) }
      case 'chmod': return { k: 'chmod', p: any(), mode: mode() }
      case 'chown': return { k: 'chown', p: any(), uid: rng.pick([0, 0, 1000, 1234, -1]), gid: rng.pick([0, 0, 1000, 1234, -1]), follow: rng.chance(0.5) }
      case 'utimens': return { k: 'utimens', p: any(), ns: time(), follow: rng.chance(0.7) }
      case 'mmapWrite': { const p = file(); return { k: 'mmapWrite', p, off: offset(pathSize(p)), len: rng.int(3 * BLOCK), d: seed(), flush: rng.chance(0.5) } }
      case 'mmapRead': { const p = file(); return { k: 'mmapRead', p, off: offset(pathSize(p)), len: rng.int(3 * BLOCK) } }
      case 'readdir': return { k: 'readdir', p: dir() }
      default: return { k: 'stat', p: any() }
    }
  }
}

// ---- shrinking ------------------------------------------------------------

/**
 * Greedy chunk removal (ddmin-style) after a suffix search: tries the
 * shortest suffix of length 2^i that still fails, then drops chunks of n/2, n/4, ...
 * 1 ops and keeps a candidate whenever `fails` says it still fails the same
 * way. Stops at `deadline` (ms since the epoch) with the smallest sequence
 * found so far. Returns it and the number of replays tried.
 */
export async function shrink (ops: Op[], fails: (ops: Op[]) => Promise<boolean>, deadline: number): Promise<{ ops: Op[], replays: number, complete: boolean }> {
  let cur = ops
  let replays = 0
  // most failures need only a short suffix: try the last 1, 2, 4, ... ops first (short replays are cheap)
  for (let k = 1; k < cur.length; k *= 2) {
    if (Date.now() > deadline) return { ops: cur, replays, complete: false }
    replays++
    if (await fails(cur.slice(cur.length - k))) { cur = cur.slice(cur.length - k); break }
  }
  // then whole kinds at once (all marks, all restores, all reads, ...; the last op stays): slow
  // steps go first, later replays are faster without them
  const slow: Array<Op['k']> = ['restore', 'remount', 'mark', 'check']
  const kinds = [...slow, ...[...new Set(cur.map(o => o.k))].filter(k => !slow.includes(k))]
  for (const kind of kinds) {
    if (Date.now() > deadline) return { ops: cur, replays, complete: false }
    const cand = cur.filter((o, i) => o.k !== kind || i === cur.length - 1)
    if (cand.length === cur.length) continue
    replays++
    if (await fails(cand)) cur = cand
  }
  let chunk = Math.max(1, Math.floor(cur.length / 2))
  for (;;) {
    let removed = false
    for (let i = 0; i < cur.length;) {
      if (Date.now() > deadline) return { ops: cur, replays, complete: false }
      const cand = cur.slice(0, i).concat(cur.slice(i + chunk))
      replays++
      if (cand.length > 0 && await fails(cand)) { cur = cand; removed = true } else i += chunk
    }
    if (chunk === 1 && !removed) return { ops: cur, replays, complete: true }
    chunk = Math.max(1, Math.floor(chunk / 2))
  }
}
