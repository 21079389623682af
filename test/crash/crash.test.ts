/**
 * Crash safety (issue 4 item 4): the daemon is killed with SIGKILL at
 * seeded random moments — during heavy writes, during a checkpoint, during
 * a restore, during the write-back at unmount (twice in a row, too), during
 * gc — and restarted, and then:
 *
 * - the mount point is usable again: no dead mount ("Transport endpoint is
 *   not connected") is left; when the kill leaves one (the fusermount
 *   helper killed first, as a container or OOM kill does), `rewindfs mount
 *   DIR` through the CLI clears it and resumes;
 * - the workspace after the restart is exactly the last durable state: the
 *   last acknowledged checkpoint, the last state an fsync made durable
 *   (content, modes, symlinks), or a completed restore's target — or the
 *   state an operation under way at the kill would have made durable (an
 *   fsync, a mark, a restore, gc's fold of unsaved changes), never anything
 *   else;
 * - every file whose fsync returned has its exact bytes;
 * - every acknowledged checkpoint is still listed and restores byte-exact
 *   (scripts/manifest.sh through the mount); a checkpoint whose mark was
 *   under way at the kill may be missing, and is exact if it exists; so is
 *   one the gc under way was told to drop;
 * - a restore interrupted half-way has either completed (the workspace is
 *   its target) or rolled back (the state before it, sealed as "before
 *   restore to N" when it had unsaved changes, else the last durable
 *   state);
 * - verify reports the store clean after each kill (verifyStore) and at the
 *   end of each round (`rewindfs verify`), and the directory after the
 *   final write-back equals the final state.
 *
 * The workload is a child process (helpers/crash-writer.ts) that keeps a
 * model of what it wrote and reports each fsync; checkpoints are marked by
 * the test while it is paused, so each checkpoint's manifest is the tree at
 * its cut. A round mounts a populated directory, alternates bursts of
 * writes, checkpoints and restores, and kills the daemon KILLS times in
 * phases taken from PHASE_ORDER. PHASES is the extension point: a phase is
 * one function that does its work, kills inside it and says what the
 * restart may find. Kills aim at the middle of an operation with a delay
 * drawn below its duration, learned from the ones that finished first.
 *
 * CI form (2 rounds, 8 kills; 77 to 126 s measured on 2 busy cores):
 * `bash scripts/test.sh dist/test/crash/crash.test.js`.
 * Long form: `npm run test:long` (it gives crash rounds 30% of its budget),
 * or alone, e.g. 40 rounds (about 25 minutes):
 *   REWINDFS_CRASH_ROUNDS=40 REWINDFS_CRASH_SAMPLE=all REWINDFS_TAP_TIMEOUT=3600 \
 *   REWINDFS_TEST_LIMIT=3600 bash scripts/test.sh dist/test/crash/crash.test.js
 * (or the file itself, without tap's own 30 s limit:
 * `TAP_TIMEOUT=0 REWINDFS_CRASH_ROUNDS=40 node dist/test/crash/crash.test.js`).
 * Environment:
 *   REWINDFS_CRASH_ROUNDS  rounds, seeds 1..N (default 2)
 *   REWINDFS_CRASH_SEEDS   explicit seeds, one round each ("7,8,9"; overrides ROUNDS)
 *   REWINDFS_CRASH_KILLS   kills per round (default 4)
 *   REWINDFS_CRASH_SAMPLE  acknowledged checkpoints restored after each kill
 *                          besides the newest two and any new ones (default 1;
 *                          'all'); every round ends by restoring all of them
 *   REWINDFS_CRASH_PHASES  the phases kills take in turn ("gc,restart"; default
 *                          PHASE_ORDER)
 *   REWINDFS_CRASH_LOG=1   print each round's action log
 * A failure prints the seed, the kill, the first differing manifest lines,
 * the test's action log and the workload's last ops, and the environment
 * that replays the round: its seed gives the workload and the schedule of
 * phases (with the same KILLS); kill moments depend on timing, so a replay
 * aims at the same operations, not at the same instant.
 */
import t from 'tap'
import fs from 'node:fs'
import path from 'node:path'
import { execFile, execFileSync, spawn } from 'node:child_process'
import { promisify } from 'node:util'
import { createHash } from 'node:crypto'
import { mountWorkspace, CLI, type Mounted } from '../helpers/mount.js'
import { CONNECTION_FILE } from '../../proto/messages.js'
import { Prng } from '../helpers/prng.js'
import {
  manifest, projectManifest, diffLines, sameLines, WriterProc, killLeavingDeadMount, isMounted, alive, waitGone
} from '../helpers/crash.js'
import type { WriterEvent, WriterMode } from '../helpers/crash-writer.js'
import { verifyStore } from '../../fs/maint/verify.js'
import { RewindClient } from '../../client/client.js'
import { mountState } from '../../daemon/mounts.js'

const run = promisify(execFile)
const KiB = 1024
const MiB = 1024 * KiB

const SEEDS = process.env.REWINDFS_CRASH_SEEDS
  ? process.env.REWINDFS_CRASH_SEEDS.split(',').map(s => Number(s.trim())).filter(n => Number.isFinite(n))
  : Array.from({ length: Number(process.env.REWINDFS_CRASH_ROUNDS ?? 2) }, (_, i) => i + 1)
const KILLS = Number(process.env.REWINDFS_CRASH_KILLS ?? 4)
const SAMPLE = process.env.REWINDFS_CRASH_SAMPLE === 'all' ? Infinity : Number(process.env.REWINDFS_CRASH_SAMPLE ?? 1)
/** The environment that replays a round's workload. */
const REPRODUCE = (seed: number): string => `REWINDFS_CRASH_SEEDS=${seed} REWINDFS_CRASH_KILLS=${KILLS}${process.env.REWINDFS_CRASH_PHASES ? ` REWINDFS_CRASH_PHASES=${process.env.REWINDFS_CRASH_PHASES}` : ''}`
/** live data the workload keeps at most (it deletes big files beyond) */
const MAX_TREE_BYTES = 40 * MiB

// ---- what a restart may find ----------------------------------------------

/** A state the workspace may be in after a restart: full manifest lines, or the content projection (an fsync). */
interface State { name: string, kind: 'manifest' | 'content', lines: string[] }

/** What a kill phase leaves for the checks after the restart. */
interface KillOutcome {
  /** the kill hit the phase (its reply had not arrived; the write-back was under way) */
  landed: boolean
  /** states the phase may have made durable besides the last durable one */
  candidates: State[]
  /** checkpoints that may exist after the restart (exact if they do), by label */
  optional: Array<{ label: string, lines: string[] }>
  /** an interrupted restore's target: if the workspace is it, files fsynced before may be gone */
  target?: State
  /** `landed` is decided by the restart: the kill hit the phase when the next start resumes (the write-back) */
  landedIfResumed?: boolean
  /** what happened, for the log */
  note: string
}

type PhaseName = 'writes' | 'mark' | 'restore' | 'writeback' | 'gc' | 'restart'

/**
 * A kill phase: does its work on round `r` and kills the daemon inside it
 * (`r.kill()`), then says what the restart may find. The daemon is not
 * restarted here; afterKill does that and checks.
 */
type Phase = (r: Round) => Promise<KillOutcome>

/** Client-side durations (ms) of the operations kills aim at, learned as the run goes. */
const est = { mark: 60, restore: 60, writeback: 200, gc: 100, startup: 800 }
function learn (k: keyof typeof est, ms: number): void { est[k] = Math.max(5, est[k] * 0.5 + ms * 0.5) }

/** Counts for the closing line. */
const totals = {
  /** kills that landed in their phase */
  kills: new Map<PhaseName, number>(),
  /** kills that came after the phase's reply (or the write-back) had already finished */
  missed: new Map<PhaseName, number>(),
  survived: 0,
  restores: 0,
  fsynced: 0,
  verify: 0,
  verifyClean: 0,
  deadMounts: 0,
  outcomes: new Map<string, number>()
}
function count<K> (m: Map<K, number>, k: K): void { m.set(k, (m.get(k) ?? 0) + 1) }
function outcome (what: string): void { count(totals.outcomes, what) }

// ---- the phases ------------------------------------------------------------

const PHASES: Record<PhaseName, Phase> = {
  /** the workload runs (fsyncs among its ops); the kill lands at a random moment */
  writes: async (r) => {
    if (!r.modelValid) await r.openWriter()
    r.w.run({ seed: r.rng.int(1e9), mode: 'mixed', fsync: 0.25 })
    r.current = null
    await sleep(r.rng.range(150, 2500))
    await r.kill()
    return { landed: true, candidates: [], optional: [], note: 'during heavy writes' }
  },

  /** a checkpoint with many MiB to seal: the kill lands between sending mark and its reply */
  mark: async (r) => {
    await r.burst({ mode: 'bulk', bytes: r.rng.range(4, 16) * MiB })
    await r.burst({ mode: 'scatter', ops: r.rng.range(200, 600) })
    const before = await r.settle()
    const label = `r${r.seed}-k${r.kills}-mark`
    let acked: number | null = null
    const t0 = performance.now()
    let ms = 0
    r.m.client.mark({ label }).then(cp => { if (!r.killed) { acked = cp.id; ms = performance.now() - t0 } }, () => {})
    await sleep(r.rng.next() * est.mark)
    await r.kill()
    if (acked !== null) {
      learn('mark', ms)
      r.recorded.set(acked, { lines: before, label })
      r.durable = { name: `checkpoint ${acked} (acknowledged before the kill)`, kind: 'manifest', lines: before }
      return { landed: false, candidates: [], optional: [], note: `mark acknowledged before the kill (${ms.toFixed(0)} ms)` }
    }
    est.mark *= 1.1
    return {
      landed: true,
      candidates: [{ name: `the checkpoint "${label}" in flight`, kind: 'manifest', lines: before }],
      optional: [{ label, lines: before }],
      note: 'during a checkpoint'
    }
  },

  /** a restore to a far checkpoint (often with unsaved changes to seal first): the kill lands before its reply */
  restore: async (r) => {
    if (r.rng.chance(0.6)) await r.burst({ mode: r.rng.pick(['bulk', 'mixed', 'scatter'] as const), bytes: r.rng.range(2, 12) * MiB, ops: 300, fsync: 0 })
    const before = await r.settle()
    const target = r.farthest(before)
    const want = r.recorded.get(target)!
    const label = `before restore to ${target}`
    let acked = false
    const t0 = performance.now()
    let ms = 0
    r.m.client.restore({ id: target }).then(() => { if (!r.killed) { acked = true; ms = performance.now() - t0 } }, () => {})
    await sleep(r.rng.next() * est.restore)
    await r.kill()
    const targetState: State = { name: `restore target ${target} (the restore completed)`, kind: 'manifest', lines: want.lines }
    if (acked) {
      learn('restore', ms)
      r.durable = targetState
      r.protected.clear()
      return { landed: false, candidates: [], optional: [{ label, lines: before }], note: `restore acknowledged before the kill (${ms.toFixed(0)} ms)` }
    }
    est.restore *= 1.1
    return {
      landed: true,
      candidates: [targetState, { name: `the state before the restore to ${target} (rolled back)`, kind: 'manifest', lines: before }],
      optional: [{ label, lines: before }],
      target: targetState,
      note: `during a restore to ${target}`
    }
  },

  /** unmount with much to write back: the kill lands after the mount is gone, while the directory is written */
  writeback: async (r) => {
    await r.burst({ mode: 'mixed', ops: r.rng.range(30, 80), fsync: 0.1 })
    await r.burst({ mode: 'bulk', bytes: r.rng.range(6, 20) * MiB })
    const final = await r.settle()
    await r.closeWriter()
    const pid = r.m.daemon.pid!
    r.log.push('unmount (write-back), then SIGKILL during it')
    await r.m.client.unmount({}).catch(() => {})
    const deadline = Date.now() + 60000
    while (Date.now() < deadline && isMounted(r.m.dir) && alive(pid)) await sleep(1)
    const gone = performance.now()
    const delay = r.rng.next() * est.writeback
    while (performance.now() - gone < delay && alive(pid)) await sleep(1)
    if (!alive(pid)) learn('writeback', performance.now() - gone)
    else est.writeback *= 1.1
    await r.kill()
    // whether the kill hit the write-back: the next start says it resumed (the store still says mounted)
    return {
      landed: true,
      landedIfResumed: true,
      candidates: [{ name: 'the final state', kind: 'manifest', lines: final }],
      optional: [{ label: 'unmount', lines: final }, { label: 'mount', lines: final }],
      note: 'during the write-back at unmount'
    }
  },

  /**
   * garbage collection with abandoned branches and big dropped data to
   * sweep and compact, and unsaved changes gc makes durable first: the kill
   * lands before its reply. Checkpoints the policy drops may vanish (exact
   * if they stay); every other one must survive.
   */
  gc: async (r) => {
    // big data on a branch the restore then abandons
    await r.burst({ mode: 'bulk', bytes: r.rng.range(6, 16) * MiB })
    await r.mark()
    await r.restoreCompare(r.farthest(await r.settle()), 'abandoning a branch for gc')
    await r.burst({ mode: 'mixed', ops: r.rng.range(10, 40), fsync: 0 })
    const before = await r.settle()
    const policy = { keepLast: r.rng.range(1, 3), abandonedAfterMs: 0 }
    const dry = await r.m.client.gc({ ...policy, dryRun: true })
    for (const id of dry.checkpoints.removed) { const x = r.recorded.get(id); if (x) x.mayVanish = true }
    r.log.push(`gc keepLast=${policy.keepLast}: drops ${dry.checkpoints.removed.length} of ${dry.checkpoints.before} checkpoints, ${(dry.blocks.bytes / MiB).toFixed(1)} MiB`)
    let done = false
    const t0 = performance.now()
    let ms = 0
    r.m.client.gc(policy).then(() => { if (!r.killed) { done = true; ms = performance.now() - t0 } }, () => {})
    await sleep(r.rng.next() * est.gc)
    await r.kill()
    // gc makes the live state durable before it chooses (persistLive)
    const candidates: State[] = [{ name: 'the unsaved state gc made durable', kind: 'manifest', lines: before }]
    if (done) {
      learn('gc', ms)
      return { landed: false, candidates, optional: [], note: `gc finished before the kill (${ms.toFixed(0)} ms)` }
    }
    est.gc *= 1.1
    return { landed: true, candidates, optional: [], note: 'during gc' }
  },

  /**
   * a kill during a restore, then starts killed while the daemon resumes
   * (completing the journaled restore, loading the table, mounting): the
   * restart after them must find what the first kill left
   */
  restart: async (r) => {
    let o: KillOutcome
    if (r.rng.chance(0.5)) o = await PHASES.restore(r)
    else {
      // after a clean unmount the next start is a fresh mount of the written-back directory (a "mount" checkpoint)
      const final = await r.cleanUnmount('a clean unmount')
      r.killed = true
      r.kills++
      // the unmount sealed unsaved changes as "unmount"; the fresh mount marks "mount" (both hold the final state)
      o = { landed: true, candidates: [], optional: [{ label: 'unmount', lines: final }, { label: 'mount', lines: final }], note: 'a clean unmount' }
    }
    const { m } = r
    let hit = 0
    const n = r.rng.range(1, 3)
    for (let i = 0; i < n; i++) {
      for (let k = 0; k < 300 && isMounted(m.dir); k++) await sleep(50)
      const log = fs.openSync(path.join(m.home, 'daemon.log'), 'a')
      const child = spawn(process.execPath, [CLI, 'daemon', m.dir, '--store', m.store], { stdio: ['ignore', log, log], env: { ...process.env, REWINDFS_HOME: m.home } })
      fs.closeSync(log)
      r.cliDaemons.push(child.pid!)
      const delay = r.rng.next() * est.startup * 0.8
      const t0 = performance.now()
      let ready = false
      while (performance.now() - t0 < delay && child.exitCode === null) {
        try { ready = JSON.parse(fs.readFileSync(path.join(m.store, CONNECTION_FILE), 'utf8')).pid === child.pid } catch {}
        if (ready) break
        await sleep(2)
      }
      child.kill('SIGKILL')
      await new Promise(resolve => child.exitCode !== null || child.signalCode !== null ? resolve(null) : child.once('exit', resolve))
      if (!ready) hit++
      else learn('startup', performance.now() - t0)
      r.log.push(`start ${i + 1} killed after ${(performance.now() - t0).toFixed(0)} ms${ready ? ' (it was ready)' : ''}`)
    }
    for (let k = 0; k < 300 && isMounted(m.dir); k++) await sleep(50)
    return { ...o, landed: hit > 0, note: `${o.note}, then ${hit} of ${n} restarts killed during start-up` }
  }
}

/**
 * Kill phases in the order kills take them, round after round (two CI
 * rounds of four kills cover every phase). The write-back comes twice in a
 * row: the second write-back of a session starts from a directory the
 * first one left half written.
 */
const PHASE_ORDER = (process.env.REWINDFS_CRASH_PHASES?.split(',').map(p => p.trim()) ?? ['writes', 'writeback', 'writeback', 'mark', 'restore', 'gc', 'restart']) as PhaseName[]
for (const p of PHASE_ORDER) if (!(p in PHASES)) throw new Error(`REWINDFS_CRASH_PHASES: no phase ${p} (phases: ${Object.keys(PHASES).join(', ')})`)

// ---- a round -----------------------------------------------------------------

/** Processes holding /dev/fuse open, as "pid cmdline" (for the report when a dead mount is not dead). */
function fuseHolders (): string[] {
  const out: string[] = []
  for (const p of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(p)) continue
    try {
      for (const f of fs.readdirSync(`/proc/${p}/fd`)) {
        try { if (fs.readlinkSync(`/proc/${p}/fd/${f}`) === '/dev/fuse') out.push(`${p} ${fs.readFileSync(`/proc/${p}/cmdline`, 'utf8').replace(/\0/g, ' ')}`) } catch {}
      }
    } catch {}
  }
  return out
}

function sleep (ms: number): Promise<void> { return new Promise(resolve => setTimeout(resolve, ms)) }
function sha256 (b: Buffer): string { return createHash('sha256').update(b).digest('hex') }

/** The populated directory a round mounts: some hundreds of KiB to a few MiB, a hard link, a symlink, odd modes. */
function populate (rng: Prng, dir: string): void {
  const w = (rel: string, n: number): void => { fs.writeFileSync(path.join(dir, rel), rng.bytes(n)) }
  for (const d of ['src/lib', 'src/bin', 'docs/deep/er', 'empty', 'assets']) fs.mkdirSync(path.join(dir, d), { recursive: true })
  const n = rng.range(20, 40)
  for (let i = 0; i < n; i++) w(`${rng.pick(['src', 'src/lib', 'src/bin', 'docs', 'docs/deep/er', 'assets', '.'])}/f${i}.txt`, rng.int(20 * KiB))
  w('assets/medium.bin', rng.range(100 * KiB, 600 * KiB))
  w('assets/big.bin', rng.range(2 * MiB, 4 * MiB) + rng.int(KiB))
  w('src/lib/util', rng.range(64 * KiB - 10, 64 * KiB + 10))
  fs.linkSync(path.join(dir, 'src/lib/util'), path.join(dir, 'docs/util-link'))
  fs.symlinkSync('assets/big.bin', path.join(dir, 'big-sym'))
  fs.chmodSync(path.join(dir, 'docs/deep'), 0o750)
  fs.chmodSync(path.join(dir, 'empty'), 0o1777)
}

/** One round: a workspace, its workload, its kills. */
class Round {
  m!: Mounted
  w!: WriterProc
  readonly rng: Prng
  /**
   * acknowledged checkpoints: id → manifest at the cut; `mayVanish` marks
   * one a phase allows the store to remove by policy (the gc phase sets it
   * on those its policy drops): it may be missing, and is exact if listed
   */
  readonly recorded = new Map<number, { lines: string[], label: string, mayVanish?: boolean }>()
  /** the last durable state */
  durable!: State
  /** an fsync under way (or failed by the kill): it may have made its state durable */
  inflightFsync: State | null = null
  /** files whose fsync returned, path → sha256, since the last restore */
  readonly protected = new Map<string, string>()
  /** manifest of the live state when nothing was written since it was taken */
  current: string[] | null = null
  /** the workload's model describes the mounted tree (false from a kill until it reopens) */
  modelValid = false
  /** a kill is under way: failed ops and fsyncs are expected until the restart */
  killed = false
  kills = 0
  failures = 0
  probes = 0
  readonly log: string[] = []
  readonly t0 = performance.now()
  /** daemons this test started outside the mount helper (CLI mount, start-up kills); killed at teardown if still alive */
  readonly cliDaemons: number[] = []

  constructor (readonly tt: any, readonly seed: number) {
    this.rng = new Prng(seed)
    const push = this.log.push.bind(this.log)
    this.log.push = (...xs: string[]) => push(...xs.map(x => `${((performance.now() - this.t0) / 1000).toFixed(1)}s ${x}`))
  }

  check (ok: boolean, what: string, diag: Record<string, unknown> = {}): boolean {
    if (ok) { this.tt.pass(what); return true }
    this.failures++
    let daemonLog = ''
    try { daemonLog = fs.readFileSync(path.join(this.m.home, 'daemon.log'), 'utf8').slice(-3000) } catch {}
    this.tt.fail(what, { seed: this.seed, kill: this.kills, ...diag, log: this.log.slice(-40).join('\n'), daemonLog, reproduce: REPRODUCE(this.seed) })
    return false
  }

  onWriterEvent (e: WriterEvent): void {
    if (e.ev === 'fsync-start') this.inflightFsync = { name: `fsync #${e.n} (${e.what})`, kind: 'content', lines: e.lines }
    else if (e.ev === 'fsync-done') {
      if (this.inflightFsync) this.durable = this.inflightFsync
      this.inflightFsync = null
      if (e.file) this.protected.set(e.file.path, e.file.sha)
    } else if (e.ev === 'fsync-fail' && !this.killed) this.check(false, `an fsync failed while the daemon ran: ${e.code}`)
  }

  async setup (): Promise<void> {
    let lower: string[] = []
    this.m = await mountWorkspace(this.tt, async dir => { populate(this.rng, dir); lower = await manifest(dir) })
    this.tt.teardown(() => { for (const pid of this.cliDaemons) if (alive(pid)) process.kill(pid, 'SIGKILL') })
    this.w = new WriterProc(e => this.onWriterEvent(e))
    this.tt.teardown(async () => { await this.w.kill() })
    const mount = (await this.m.client.log({})).find(c => c.label === 'mount')!
    this.recorded.set(mount.id, { lines: lower, label: 'mount' })
    this.durable = { name: `checkpoint ${mount.id} (mount)`, kind: 'manifest', lines: lower }
    this.current = lower
    await this.openWriter()
  }

  /** (Re)opens the workload on the mount; its model must be the tree. */
  async openWriter (): Promise<void> {
    const ready = await this.w.open(this.m.dir, [...this.protected.keys()], MAX_TREE_BYTES)
    this.modelValid = true
    this.current ??= await manifest(this.m.dir)
    const want = projectManifest(this.current)
    this.check(sameLines(want, ready.lines), 'the workload reads back the tree the manifest describes', { first: diffLines(want, ready.lines) })
  }

  /** A run of the workload to its end; an error while the daemon runs fails the round. */
  async burst (o: { mode: WriterMode, ops?: number, bytes?: number, fsync?: number }): Promise<void> {
    if (!this.modelValid) await this.openWriter()
    this.current = null
    this.w.run({ seed: this.rng.int(1e9), ...o })
    const end = await this.w.end()
    this.log.push(`burst ${o.mode}: ${end.ev === 'error' ? `error ${end.code} in ${end.op}` : `${end.ops} ops, ${(end.bytes / MiB).toFixed(1)} MiB`}`)
    if (end.ev === 'error') {
      // what the test process and the daemon see at the path the workload failed on
      const rel = /'\/proc\/self\/fd\/\d+\/([^']*)'/.exec(end.message)?.[1]
      let here = ''
      let daemon = ''
      if (rel !== undefined) {
        try { here = JSON.stringify(fs.lstatSync(path.join(this.m.dir, rel))) } catch (e: any) { here = e.code }
        try { daemon = JSON.stringify(await this.m.client.stat({ path: rel })) } catch (e: any) { daemon = e.message }
      }
      this.check(false, 'the workload runs without errors while the daemon runs', { error: `${end.code} ${end.message}`, op: end.op, rel, here, daemon, ops: (await this.w.oplog()).slice(-40).join('\n') })
      throw new Error(`the workload failed while the daemon ran: ${end.code} ${end.message} (${end.op})`)
    }
  }

  /** Nothing runs; returns the manifest of the live state, checked against the workload's model. */
  async settle (): Promise<string[]> {
    await this.w.pause()
    if (this.current === null) {
      this.current = await manifest(this.m.dir)
      if (!this.modelValid) return this.current
      const model = await this.w.lines()
      this.check(sameLines(projectManifest(this.current), model), 'the tree is what the workload wrote', { first: diffLines(model, projectManifest(this.current)), ops: (await this.w.oplog()).slice(-30).join('\n') })
    }
    return this.current
  }

  async ids (): Promise<Set<number>> { return new Set((await this.m.client.log({ limit: 100000 })).map(c => c.id)) }

  /** Marks a checkpoint with the workload paused and records its manifest. */
  async mark (): Promise<number> {
    const lines = await this.settle()
    const label = `r${this.seed}-k${this.kills}-${this.recorded.size}`
    const cp = await this.m.client.mark({ label })
    this.recorded.set(cp.id, { lines, label })
    this.durable = { name: `checkpoint ${cp.id}`, kind: 'manifest', lines }
    this.log.push(`mark ${cp.id} (${(cp.dirtyBytes / MiB).toFixed(1)} MiB, ${cp.ms.toFixed(0)} ms)`)
    return cp.id
  }

  /** The recorded checkpoint whose manifest differs most from `lines` (a restore with many differing inodes). */
  farthest (lines: string[]): number {
    const have = new Set(lines)
    let best = -1; let bestId = [...this.recorded.keys()][0]
    for (const [id, r] of this.recorded) {
      let d = Math.abs(r.lines.length - lines.length)
      for (const l of r.lines) if (!have.has(l)) d++
      if (d > best || (d === best && this.rng.chance(0.5))) { best = d; bestId = id }
    }
    return bestId
  }

  /** Restores `id` (the workload paused) and compares the manifest with the one recorded at its mark. */
  async restoreCompare (id: number, why: string): Promise<void> {
    const before = await this.settle()
    const known = await this.ids()
    const t0 = performance.now()
    await this.m.client.restore({ id })
    learn('restore', performance.now() - t0)
    for (const c of await this.m.client.log({ limit: 100000 })) {
      if (!known.has(c.id) && c.label === `before restore to ${id}`) this.recorded.set(c.id, { lines: before, label: c.label })
    }
    const got = await manifest(this.m.dir)
    const want = this.recorded.get(id)!
    totals.restores++
    this.check(sameLines(want.lines, got), `${why}: checkpoint ${id} ("${want.label}") restores exactly`, { first: diffLines(want.lines, got) })
    this.log.push(`restore ${id} (${why})`)
    this.current = got
    this.durable = { name: `checkpoint ${id} (restored)`, kind: 'manifest', lines: got }
    this.protected.clear()
    // the workload reads the restored tree before it writes again
    this.modelValid = false
  }

  /** SIGKILL of the daemon: plain (the auto_unmount helper removes the mount) or leaving a dead mount. */
  deadMount = false
  async kill (): Promise<void> {
    this.killed = true
    this.modelValid = false
    this.kills++
    if (this.deadMount) await killLeavingDeadMount(this.m)
    else {
      // at once: kill9 closes the client first
      this.m.daemon.kill('SIGKILL')
      await this.m.kill9()
    }
    const end = await this.w.end()
    this.log.push(`SIGKILL${this.deadMount ? ' (helper first: dead mount)' : ''}; workload ${end.ev === 'error' ? `stopped by ${end.code}` : `${end.ev} after ${end.ops} ops`}`)
  }

  /** Checks the store alone (the daemon is stopped): through the CLI, or in this process (verifyStore, the same checks without a process start). */
  async verify (when: string, cli: boolean): Promise<void> {
    totals.verify++
    if (cli) {
      const v = await this.m.cli(['verify', '--store', this.m.store])
      this.log.push(`verify ${when}: ${v.stdout.trim().split('\n').pop()}`)
      if (this.check(v.code === 0 && /^clean:/m.test(v.stdout), `rewindfs verify reports the store clean ${when}`, { stdout: v.stdout.slice(-3000), stderr: v.stderr.slice(-2000) })) totals.verifyClean++
      return
    }
    const v = await verifyStore(this.m.store)
    this.log.push(`verify ${when}: ${v.ok ? 'clean' : `${v.problems.length} problems`}, ${v.counts.blocks} blocks`)
    if (this.check(v.ok, `verify reports the store clean ${when}`, { problems: v.problems.slice(0, 20).map(p => `${p.code}: ${p.message}`) })) totals.verifyClean++
  }

  /** Restart after a kill and every check; returns true when the kill survived (no check failed). */
  async afterKill (phase: PhaseName, o: KillOutcome, known: Set<number>): Promise<boolean> {
    const failuresBefore = this.failures
    const { m } = this
    this.log.push(`kill ${this.kills} (${phase}): ${o.note}`)
    // the kernel side
    if (this.deadMount) {
      this.check(mountState(m.dir) === 'stale', 'the kill left a dead mount behind', { state: mountState(m.dir), mounts: fs.readFileSync('/proc/mounts', 'utf8').split('\n').filter(l => l.includes(m.dir)), daemon: [m.daemon.pid, m.daemon.exitCode, m.daemon.signalCode], holders: fuseHolders(), daemonLog: fs.readFileSync(path.join(m.home, 'daemon.log'), 'utf8').slice(-2000) })
      let code = ''
      try { fs.readdirSync(m.dir) } catch (e: any) { code = e.code }
      this.check(code === 'ENOTCONN', `readdir of the dead mount point fails with ENOTCONN (got ${code || 'success'})`)
      await this.verify('after the kill', false)
      let out = ''
      try {
        out = (await run(process.execPath, [CLI, 'mount', m.dir, '--store', m.store], { env: { ...process.env, REWINDFS_HOME: m.home }, timeout: 60000 })).stdout
      } catch (e: any) { out = `${e.stdout ?? ''}${e.stderr ?? ''}` }
      this.check(/^mounted /m.test(out) && /clearing a stale mount/.test(out), 'rewindfs mount DIR through the CLI clears the dead mount and mounts', { out })
      this.cliDaemons.push(JSON.parse(fs.readFileSync(path.join(m.store, CONNECTION_FILE), 'utf8')).pid)
      m.client = await RewindClient.connect({ storeDir: m.store, timeoutMs: 60000 })
      totals.deadMounts++
    } else {
      // the fusermount helper removes the mount once the daemon is gone (m.kill9 waited 5 s; a loaded machine may need more)
      for (let i = 0; i < 300 && isMounted(m.dir); i++) await sleep(50)
      this.check(mountState(m.dir) === 'none', 'no mount is left behind (auto_unmount removed it)')
      this.check(fs.statSync(m.dir).isDirectory(), 'the mount point is a plain directory again')
      await this.verify('after the kill', false)
      const logFile = path.join(m.home, 'daemon.log')
      const logAt = fs.statSync(logFile).size
      const t0 = performance.now()
      await m.remount()
      learn('startup', performance.now() - t0)
      const resumed = /resumed from/.test(fs.readFileSync(logFile, 'utf8').slice(logAt))
      if (o.landedIfResumed) {
        o.landed = resumed
        if (!resumed) o.note = 'the write-back finished before the kill'
      }
      this.log.push(`remounted${resumed ? ' (resumed)' : ''}`)
    }
    this.killed = false
    // usable: stat, readdir
    let usable = true
    try { fs.statSync(m.dir); fs.readdirSync(m.dir) } catch (e: any) { usable = false; this.check(false, `the remounted workspace answers (${e.code})`) }
    if (usable) this.tt.pass('the remounted workspace answers stat and readdir')
    // exactly the last durable state, or one the phase may have made durable
    const got = await manifest(m.dir)
    const cands: State[] = [this.durable, ...(this.inflightFsync ? [this.inflightFsync] : []), ...o.candidates]
    const match = cands.find(c => sameLines(c.lines, c.kind === 'manifest' ? got : projectManifest(got)))
    this.check(match !== undefined, `after the restart the workspace is exactly one of: ${cands.map(c => c.name).join('; ')}`,
      { first: cands.map(c => `${c.name}:\n${diffLines(c.lines, c.kind === 'manifest' ? got : projectManifest(got)).join('\n')}`).join('\n\n') })
    if (match && o.target && o.landed) outcome(`${phase}: the restore ${sameLines(match.lines, o.target.lines) ? 'completed' : 'rolled back'}`)
    else if (match) {
      const what = match === this.durable
        ? `the last durable state (${match.kind === 'content' ? 'an fsync' : 'a checkpoint'})`
        : match === this.inflightFsync ? 'the state of the fsync under way' : match.name.replace(/\d+/g, 'N')
      outcome(`${phase}${o.landed ? '' : ' (missed)'}: ${what}`)
    }
    // files whose fsync returned have their exact bytes (unless a restore completed and took them away)
    if (match !== o.target) {
      for (const [rel, sum] of this.protected) {
        let got = 'missing'
        try { got = sha256(fs.readFileSync(path.join(m.dir, rel))) } catch {}
        if (this.check(got === sum, `fsynced file ${rel} has its exact bytes`, { want: sum, got })) totals.fsynced++
      }
    } else this.protected.clear()
    this.durable = { name: 'the state after the restart', kind: 'manifest', lines: got }
    this.inflightFsync = null
    this.current = got
    // checkpoints: the ones under way may exist (exact if so), no others appear
    const fresh: number[] = []
    for (const c of await m.client.log({ limit: 100000 })) {
      if (known.has(c.id) || this.recorded.has(c.id)) continue
      const opt = o.optional.find(x => x.label === c.label)
      if (this.check(opt !== undefined, `the checkpoint ${c.id} that appeared ("${c.label}") is one that was under way`)) {
        this.recorded.set(c.id, { lines: opt!.lines, label: c.label ?? '' })
        fresh.push(c.id)
      }
    }
    const listed = await this.ids()
    for (const [id, r] of this.recorded) {
      if (r.mayVanish && !listed.has(id)) this.recorded.delete(id)
      else delete r.mayVanish
    }
    const lost = [...this.recorded.keys()].filter(id => !listed.has(id))
    this.check(lost.length === 0, 'every acknowledged checkpoint is still listed', { lost })
    // a write lands and reads back
    const probe = path.join(m.dir, `probe-${this.seed}-${++this.probes}`)
    const bytes = Buffer.from(`written after kill ${this.kills}\n`)
    try {
      fs.writeFileSync(probe, bytes)
      this.check(Buffer.compare(fs.readFileSync(probe), bytes) === 0, 'a file written after the restart reads back')
    } catch (e: any) { this.check(false, `writing after the restart works (${e.code})`) }
    this.current = null
    // acknowledged checkpoints restore exactly: the new ones, the newest two, a sample of the rest
    const ids = [...this.recorded.keys()].sort((a, b) => b - a)
    const pick = new Set<number>(fresh)
    for (const id of ids.slice(0, 2)) pick.add(id)
    const rest = ids.slice(2)
    for (let i = 0; i < SAMPLE && rest.length; i++) pick.add(rest.splice(this.rng.int(rest.length), 1)[0])
    for (const id of [...pick].sort(() => this.rng.next() - 0.5)) await this.restoreCompare(id, `after kill ${this.kills}`)
    // a daemon started through the CLI: unmount through the CLI (write-back), back to the test's own daemon
    if (this.deadMount) {
      const final = await this.settle()
      const known2 = await this.ids()
      await m.client.close()
      const u = await m.cli(['unmount'])
      this.check(u.code === 0, 'rewindfs unmount of the CLI-started daemon', { stderr: u.stderr })
      await waitGone(this.cliDaemons[this.cliDaemons.length - 1])
      this.check(sameLines(final, await manifest(m.dir)), 'the directory after its write-back is the final state')
      await m.remount()
      for (const c of await m.client.log({ limit: 100000 })) if (!known2.has(c.id)) this.recorded.set(c.id, { lines: final, label: c.label ?? '' })
      this.durable = { name: 'the state after write-back and mount', kind: 'manifest', lines: final }
    }
    return this.failures === failuresBefore
  }

  /** Ordinary work between kills: bursts, checkpoints, now and then a restore. */
  async work (steps: number): Promise<void> {
    for (let i = 0; i < steps; i++) {
      await this.burst({ mode: 'mixed', ops: this.rng.range(20, 60), fsync: 0.15 })
      await this.mark()
      if (this.rng.chance(0.25) && this.recorded.size > 2) await this.restoreCompare(this.rng.pick([...this.recorded.keys()]), 'a restore between kills')
    }
  }

  /** The end: every acknowledged checkpoint restores exactly, then a clean unmount writes back, then verify. */
  async finish (): Promise<void> {
    await this.work(1)
    for (const id of [...this.recorded.keys()].sort((a, b) => a - b)) await this.restoreCompare(id, 'end of round')
    await this.burst({ mode: 'mixed', ops: this.rng.range(20, 40), fsync: 0.1 })
    await this.cleanUnmount('the final write-back')
    await this.verify('after the final unmount', true)
  }

  /** Unmount through the daemon: the directory must then hold the final state. Returns its manifest. */
  async cleanUnmount (what: string): Promise<string[]> {
    const final = await this.settle()
    await this.closeWriter()
    const pid = this.m.daemon.pid!
    await this.m.client.close()
    const c = await RewindClient.connect({ storeDir: this.m.store, timeoutMs: 60000 })
    await c.unmount({}).catch(() => {})
    await c.close().catch(() => {})
    const deadline = Date.now() + 120000
    while (Date.now() < deadline && isMounted(this.m.dir) && alive(pid)) await sleep(2)
    const gone = performance.now()
    await waitGone(pid, 120000)
    learn('writeback', performance.now() - gone)
    this.check(!isMounted(this.m.dir), `${what} leaves no mount`)
    const onDisk = await manifest(this.m.dir)
    this.check(sameLines(final, onDisk), `the directory after ${what} is the final state`, { first: diffLines(final, onDisk) })
    this.durable = { name: `the state ${what} wrote`, kind: 'manifest', lines: final }
    return final
  }

  /** The workload lets go of the mount (an unmount waits for no open directory). */
  async closeWriter (): Promise<void> {
    await this.w.close()
    this.modelValid = false
  }
}

/**
 * The rounds under way. A run stopped by a signal (the long form, by hand)
 * does not reach their teardowns: at exit their daemons are killed and their
 * mounts cleared (synchronously: nothing else runs in an 'exit' handler).
 */
const live = new Set<Round>()
function clearLive (): void {
  for (const r of live) {
    for (const pid of [r.m?.daemon?.pid, ...r.cliDaemons]) if (pid !== undefined && alive(pid)) process.kill(pid, 'SIGKILL')
    r.w?.child.kill('SIGKILL')
    if (r.m) for (const cmd of [['fusermount', '-uz', r.m.dir], ['umount', '-l', r.m.dir]]) { try { execFileSync(cmd[0], cmd.slice(1), { stdio: 'ignore' }) } catch {} }
  }
  live.clear()
}
process.on('exit', clearLive)
for (const sig of ['SIGINT', 'SIGTERM'] as const) process.once(sig, () => { clearLive(); process.exit(130) })

for (const [i, seed] of SEEDS.entries()) {
  t.test(`round ${i + 1} (seed ${seed})`, { timeout: 1800000 }, async tt => {
    const r = new Round(tt, seed)
    live.add(r)
    tt.teardown(() => { live.delete(r) })
    try {
      await r.setup()
      for (let k = 0; k < KILLS; k++) {
        await r.work(r.rng.range(1, 2))
        // the schedule follows the seed: seeds 1, 2, ... take PHASE_ORDER in turn, KILLS kills each
        const n = (seed - 1) * KILLS + k
        const phase = PHASE_ORDER[((n % PHASE_ORDER.length) + PHASE_ORDER.length) % PHASE_ORDER.length]
        // every third kill leaves a dead mount (the CLI path clears it), but not in the write-back (no mount then) or start-up phases
        r.deadMount = phase !== 'writeback' && phase !== 'restart' && n % 3 === 1
        const known = await r.ids()
        const o = await PHASES[phase](r)
        const ok = await r.afterKill(phase, o, known)
        count(o.landed ? totals.kills : totals.missed, phase)
        if (o.landed && ok) totals.survived++
        r.deadMount = false
      }
      await r.finish()
    } catch (e: any) {
      let daemonLog = ''
      try { daemonLog = fs.readFileSync(path.join(r.m.home, 'daemon.log'), 'utf8').slice(-3000) } catch {}
      let ops: string[] = []
      try { await r.w.pause(); ops = await r.w.oplog() } catch {}
      tt.fail(`seed ${seed}: ${String(e?.stack ?? e)}`, { seed, log: r.log.slice(-40).join('\n'), daemonLog, ops: ops.slice(-30).join('\n'), reproduce: REPRODUCE(seed) })
    }
    if (process.env.REWINDFS_CRASH_LOG === '1') tt.comment(r.log.join('\n'))
    tt.comment(`seed ${seed}: ${r.kills} kills, ${r.recorded.size} checkpoints, ${r.failures} failed checks`)
  })
}

t.test('crash summary', async tt => {
  const names = Object.keys(PHASES) as PhaseName[]
  const all = names.reduce((n, p) => n + (totals.kills.get(p) ?? 0), 0)
  const missed = names.filter(p => totals.missed.has(p)).map(p => `${p} ${totals.missed.get(p)}`).join(', ')
  tt.ok(all > 0, 'kills landed in their phases')
  tt.equal(totals.survived, all, 'every kill survived')
  tt.equal(totals.verifyClean, totals.verify, 'verify clean every time')
  tt.comment(`crash: ${all} kills (${names.map(p => `${p} ${totals.kills.get(p) ?? 0}`).join(', ')}), ${totals.survived} survived: every acknowledged checkpoint exact (${totals.restores} restores compared), ${totals.fsynced} fsynced files intact, verify clean ${totals.verifyClean}/${totals.verify}`)
  tt.comment(`crash: ${totals.deadMounts} dead mounts cleared by rewindfs mount; kills that missed their phase (the reply or the write-back came first): ${missed || 'none'}`)
  tt.comment(`crash: after the restart: ${[...totals.outcomes].sort().map(([w, n]) => `${w} ×${n}`).join('; ')}`)
})
