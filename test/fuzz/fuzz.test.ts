/**
 * Differential fuzzing (issue 4 item 2): seeded random operation sequences
 * applied in lockstep to a native directory and to a rewindfs mount that
 * starts from the same tree (served from the lower layer), comparing every
 * return value, errno, byte read and the stat fields of every touched path;
 * random checkpoints (the native tree is snapshot with cp -a) and restores
 * of random earlier checkpoints, abandoned branches included, whose result
 * must equal the manifest recorded at that checkpoint and the restored
 * native snapshot. Rules of what is compared: test/helpers/fuzz.ts.
 *
 * A failure prints the seed, the op index, the op and both outcomes, then
 * shrinks the sequence (each candidate replayed on a fresh mount, bounded in
 * time), writes the minimal sequence as JSON and prints the command that
 * replays it.
 *
 * Forms (environment):
 * - default (CI): seeds 1..6, at most REWINDFS_FUZZ_OPS (600) ops each,
 *   at most 60 s of ops in total.
 * - REWINDFS_FUZZ_SECONDS=N: new seeds until N seconds are spent (the first
 *   is printed; REWINDFS_FUZZ_SEEDS gives the list to start from).
 * - REWINDFS_FUZZ_SEEDS=1,2,3: exactly these seeds (no time bound unless
 *   REWINDFS_FUZZ_SECONDS is also set).
 * - REWINDFS_FUZZ_REPLAY=file.json: replays one saved sequence only (shrunk if it fails).
 * - REWINDFS_FUZZ_SHRINK_SECONDS (120): time bound of shrinking.
 * - REWINDFS_FUZZ_OUT: where sequences are written (.rewindfs-tmp/fuzz).
 * Long runs also need a larger suite limit: REWINDFS_TEST_LIMIT=N+600.
 *
 * Fixed regression cases (sequences that once failed) are replayed from
 * test/fuzz-cases/*.json in every form.
 */
import t from 'tap'
import fs from 'node:fs'
import path from 'node:path'
import { spawnSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { mountWorkspace } from '../helpers/mount.js'
import { Prng } from '../helpers/prng.js'
import {
  type Op, type Repro, type Failure, type Counts, Lockstep, Generator, PyHelper, populate, equalizeTimes, shrink, opLine
} from '../helpers/fuzz.js'

const here = path.dirname(fileURLToPath(import.meta.url))
/** the repository (this file runs as dist/test/fuzz/fuzz.test.js) */
const ROOT = path.resolve(here, '../../..')
const HELPER = path.join(ROOT, 'test/python/fuzz_helper.py')
const CASES = path.join(ROOT, 'test/fuzz-cases')
const OUT = path.resolve(process.env.REWINDFS_FUZZ_OUT ?? path.join(ROOT, '.rewindfs-tmp', 'fuzz'))

function envNumber (name: string, dflt: number): number {
  const v = process.env[name]
  if (v === undefined || v === '') return dflt
  const n = Number(v)
  if (!Number.isFinite(n) || n < 0) throw new Error(`${name}=${v}: expected a non-negative number`)
  return n
}
function envSeeds (): number[] | null {
  const v = process.env.REWINDFS_FUZZ_SEEDS
  if (!v) return null
  const seeds = v.split(',').map(s => s.trim()).filter(s => s !== '').map(Number)
  if (seeds.some(s => !Number.isInteger(s) || s < 0)) throw new Error(`REWINDFS_FUZZ_SEEDS=${v}: expected comma-separated non-negative integers`)
  return seeds
}

const LONG_SECONDS = envNumber('REWINDFS_FUZZ_SECONDS', 0)
const OPS = envNumber('REWINDFS_FUZZ_OPS', LONG_SECONDS > 0 ? 1500 : 600)
const SHRINK_SECONDS = envNumber('REWINDFS_FUZZ_SHRINK_SECONDS', 120)
const CI_SECONDS = 60
const SEEDS = envSeeds()
const REPLAY = process.env.REWINDFS_FUZZ_REPLAY

/** Totals printed at the end. */
const total = { seeds: 0, ops: 0, checkpoints: 0, restores: 0, failures: 0, limits: 0, remounts: 0, held: 0, stale: 0 }
function add (c: Counts): void {
  total.ops += c.ops; total.checkpoints += c.checkpoints; total.restores += c.restores
  total.limits += c.limits; total.remounts += c.remounts; total.held += c.held; total.stale += c.stale
}

/**
 * One mount with its native twin: both start as the initial tree of `seed`
 * (identical times), a fresh python helper; everything is torn down after fn.
 */
async function withSession<T> (seed: number, fn: (ls: Lockstep) => Promise<T>): Promise<T> {
  const teardowns: Array<() => unknown> = []
  const py = new PyHelper(HELPER)
  const explicit = new Set<string>()
  let ls: Lockstep | null = null
  try {
    let natRoot = ''
    const m = await mountWorkspace({ teardown: f => { teardowns.push(f) } }, async dir => {
      natRoot = path.join(path.dirname(dir), 'native')
      fs.mkdirSync(natRoot)
      populate(natRoot, seed)
      const r = spawnSync('cp', ['-a', natRoot + '/.', dir + '/'], { encoding: 'utf8' })
      if (r.status !== 0) throw new Error(`cp -a: ${r.stderr}`)
      for (const d of [natRoot, dir]) fs.chmodSync(d, 0o755)
      await equalizeTimes(py, [natRoot, dir], seed, explicit)
    })
    ls = new Lockstep(m, natRoot, path.join(m.root, 'snaps'), py, explicit)
    await ls.adoptMountCheckpoint('mount')
    return await fn(ls)
  } finally {
    ls?.closeAll()
    await py.close()
    for (const f of teardowns.reverse()) await f()
  }
}

/** Replays a sequence on a fresh session; the first failure, if any. */
async function replay (r: Repro): Promise<{ failure: Failure | null, counts: Counts }> {
  return await withSession(r.seed, async ls => {
    for (let i = 0; i < r.ops.length; i++) {
      const f = await ls.step(i, r.ops[i])
      if (f) return { failure: f, counts: ls.counts }
    }
    return { failure: null, counts: ls.counts }
  })
}

/** Runs `seed` for at most `maxOps` ops or until `deadline`; the ops run and the failure, if any. */
async function runSeed (seed: number, maxOps: number, deadline: number): Promise<{ ops: Op[], failure: Failure | null, counts: Counts }> {
  return await withSession(seed, async ls => {
    const gen = new Generator(new Prng(seed), ls)
    const ops: Op[] = []
    for (let i = 0; i < maxOps && Date.now() < deadline; i++) {
      const op = gen.next()
      ops.push(op)
      const f = await ls.step(i, op)
      if (f) return { ops, failure: f, counts: ls.counts }
    }
    // the trees must agree at the end
    const fin: Op = { k: 'check' }
    ops.push(fin)
    const f = await ls.step(ops.length - 1, fin)
    return { ops, failure: f, counts: ls.counts }
  })
}

/** The closing figures (regression cases included). */
function summary (tt: any): void {
  tt.comment(`fuzz: ${total.seeds} seeds, ${total.ops} ops, ${total.checkpoints} checkpoints, ${total.restores} restores compared, ${total.failures} failures`)
  tt.comment(`fuzz: ${total.held} descriptors held across a restore and checked (${total.stale} answered ESTALE or EIO)`)
  tt.comment(`fuzz: ${total.remounts} unmounts with write-back and remounts compared`)
  tt.comment(`fuzz: ${total.limits} fstat ESTALE (or ENOENT) answers accepted as the documented limitation (name of the open file gone)`)
}

function describe (f: Failure): object {
  return { index: f.index, op: opLine(f.op), what: f.what, native: f.native, mount: f.mount, details: f.details }
}

function saveRepro (name: string, r: Repro): string {
  fs.mkdirSync(OUT, { recursive: true })
  const file = path.join(OUT, `${name}.json`)
  fs.writeFileSync(file, JSON.stringify(r, null, 1) + '\n')
  return file
}

function replayCommand (file: string): string {
  return `REWINDFS_FUZZ_REPLAY=${file} bash scripts/test.sh dist/test/fuzz/fuzz.test.js`
}

/** Reports a failure of seed (or of a replayed sequence), shrinks it, saves and prints the minimal sequence. */
async function report (tt: any, seed: number, ops: Op[], f: Failure, label: string): Promise<void> {
  total.failures++
  const upTo = ops.slice(0, f.index + 1)
  const full = saveRepro(`${label}-full`, { seed, ops: upTo, note: `${f.signature} at op ${f.index}` })
  tt.fail(`${label}: seed ${seed}, op ${f.index}: ${opLine(f.op)}: native and mount differ (${f.what})`, {
    diagnostic: true, seed, ...describe(f), sequence: full, replay: replayCommand(full)
  })
  const deadline = Date.now() + SHRINK_SECONDS * 1000
  const first = await replay({ seed, ops: upTo })
  if (first.failure?.signature !== f.signature) {
    tt.comment(`${label}: the sequence did not fail the same way on a fresh mount (${first.failure ? first.failure.signature : 'no failure'}); not shrunk; full sequence: ${full}`)
    return
  }
  const s = await shrink(upTo, async cand => (await replay({ seed, ops: cand })).failure?.signature === f.signature, deadline)
  const min = (await replay({ seed, ops: s.ops })).failure
  const file = saveRepro(label, { seed, ops: s.ops, note: `${f.signature}: ${min ? JSON.stringify(describe(min)) : ''}` })
  tt.comment([
    `${label}: minimal reproduction (${s.ops.length} of ${upTo.length} ops, ${s.replays} replays${s.complete ? '' : ', shrinking stopped at its time bound'}):`,
    JSON.stringify({ seed, ops: s.ops }),
    min ? `fails with: ${JSON.stringify(describe(min))}` : '',
    `saved: ${file}`,
    `replay: ${replayCommand(file)}`
  ].join('\n'))
}

function readRepro (file: string): Repro {
  let r: any
  try { r = JSON.parse(fs.readFileSync(file, 'utf8')) } catch (e) { throw new Error(`${file}: not a readable JSON sequence (${(e as Error).message})`) }
  if (!Number.isInteger(r?.seed) || !Array.isArray(r?.ops)) throw new Error(`${file}: expected {"seed": N, "ops": [...]} as written by the fuzz test`)
  return r
}

if (REPLAY) {
  t.test(`replay ${REPLAY}`, async tt => {
    const r = readRepro(path.resolve(REPLAY))
    const { failure, counts } = await replay(r)
    add(counts)
    // a failing replay is shrunk like a failing seed
    if (failure) await report(tt, r.seed, r.ops, failure, `replay-${path.basename(REPLAY, '.json')}`)
    else tt.pass(`replay of ${r.ops.length} ops: native and mount agree`)
    summary(tt)
  })
} else {
  // fixed regression cases: sequences that once failed
  const cases = fs.existsSync(CASES) ? fs.readdirSync(CASES).filter(f => f.endsWith('.json')).sort() : []
  for (const c of cases) {
    t.test(`regression case ${c}`, async tt => {
      const r = readRepro(path.join(CASES, c))
      const { failure, counts } = await replay(r)
      add(counts)
      tt.equal(failure, null, `${c} (${r.note ?? ''}): native and mount agree`, failure ? { diagnostic: true, ...describe(failure) } : {})
    })
  }

  t.test('differential fuzzing', async tt => {
    const long = LONG_SECONDS > 0
    const budgetMs = (long ? LONG_SECONDS : CI_SECONDS) * 1000
    const start = Date.now()
    const deadline = start + budgetMs
    const fixed = SEEDS ?? (long ? [] : [1, 2, 3, 4, 5, 6])
    let next = long && !SEEDS ? (Date.now() % 1000000) * 1000 : null
    if (next !== null) tt.comment(`fuzz: long form, ${LONG_SECONDS} s, seeds from ${next}`)
    for (let i = 0; ; i++) {
      let seed: number
      if (i < fixed.length) seed = fixed[i]
      else if (long) seed = next === null ? fixed[fixed.length - 1] + 1 + i - fixed.length : next++
      else break
      // the fixed list runs in full unless a time bound is set; the CI form stops at its budget
      // a seed is not started in the last 5 s of the budget (its mount alone takes seconds)
      if ((long || !SEEDS) && Date.now() >= deadline - 5000) break
      const r = await runSeed(seed, OPS, SEEDS && !long ? Infinity : deadline)
      total.seeds++
      add(r.counts)
      if (r.failure) await report(tt, seed, r.ops, r.failure, `seed-${seed}`)
      else tt.pass(`seed ${seed}: ${r.ops.length} ops, ${r.counts.checkpoints} checkpoints, ${r.counts.restores} restores: native and mount agree`)
    }
    tt.ok(total.seeds > 0, 'at least one seed ran')
    summary(tt)
  })
}

if (LONG_SECONDS > 0) t.setTimeout((LONG_SECONDS + SHRINK_SECONDS * 4 + 600) * 1000)
else t.setTimeout((CI_SECONDS + SHRINK_SECONDS * 2 + 240) * 1000)
