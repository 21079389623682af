/**
 * `npm run bench`: every benchmark in one run, with progress, then the
 * report (bench/report/report.ts): raw JSON, report.md and SVG charts.
 *
 *   node dist/bench/run.js [--quick | --smoke] [--only session,hifreq,checkpoint] [--rewindfs-b PATH] [--out DIR]
 *
 * Full (default): the session replay (5 rounds of 20 steps, every mode),
 * the high-frequency marks (10 s phases) and the checkpoint peers (1,000 /
 * 10,000 / 100,000 files); about 40 minutes on 2 loaded cores; writes to
 * bench/results/ (committed). --quick: one round of the quick subset of the
 * session, 3 s phases, 1,000 and 10,000 files; under 5 minutes on 2 cores;
 * writes to bench/results/quick/ (not committed). --smoke: the smoke form
 * test/bench/bench-smoke.test.ts runs: every benchmark's code path on tiny inputs
 * (the session's 7 steps that name the repository's files, 0.5 s phases, 100 files), about
 * a minute; writes to bench/results/smoke/ (not committed). The load average is
 * sampled every 5 s throughout and recorded.
 *
 * While it runs, the results so far are saved after every mode's run in
 * every session round and after every part as `<prefix>.partial.json` in the output directory (removed at
 * the end), so a run stopped early keeps what it measured;
 * `--from-json FILE... [--note TEXT]` writes the report of such a file (or of
 * any earlier result) without measuring anything; given several files (runs
 * of different parts, e.g. `--only session` and `--only hifreq,checkpoint`
 * run side by side), it merges their parts into one report (mergeResults).
 */
import fs from 'node:fs'
import path from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { Command } from 'commander'
import { Cleanup } from './lib.js'
import { machineInfo, describeMachine, sampleLoad } from './helpers/machine.js'
import { sessionBench, sessionText } from './session.js'
import { hifreqBench, hifreqText } from './hifreq.js'
import { checkpointBench, targetLine } from './checkpoint.js'
import { checkpointText } from './report/checkpoint.js'
import { writeReport, loadLine, mergeResults, type BenchResults } from './report/report.js'

const RESULTS = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../bench/results')
const PARTS = ['session', 'hifreq', 'checkpoint'] as const

async function main (): Promise<void> {
  const o = new Command('bench')
    .option('--quick', 'one round of a subset of everything (< 5 min)', false)
    .option('--smoke', 'tiny inputs: checks that every benchmark works end to end (about a minute; figures meaningless)', false)
    .option('--only <parts>', `comma-separated subset of ${PARTS.join(', ')}`, v => v.split(',').map(s => s.trim()))
    .option('--rewindfs-b <path>', 'a second rewindfs checkout (built) measured beside this one in the session')
    .option('--rounds <n>', 'session rounds (default 5, quick 1)', v => Number(v))
    .option('--sizes <list>', 'checkpoint: workspace sizes in files, run in the order given (default 1000,10000,100000)', v => v.split(',').map(Number))
    .option('--out <dir>', 'where to write the results (default bench/results, quick: bench/results/quick)')
    .option('--from-json <files...>', 'measure nothing: write the report of these results files (e.g. a .partial.json of a stopped run; several: their parts merged)')
    .option('--note <text>', 'with --from-json: a note put at the top of the report (e.g. why the run has fewer rounds)')
    .parse()
    .opts<{ quick: boolean, smoke: boolean, only?: string[], rewindfsB?: string, rounds?: number, sizes?: number[], out?: string, fromJson?: string[], note?: string }>()
  if (o.fromJson) { fromJson(o.fromJson, o.out, o.note); return }
  if (o.sizes && !o.sizes.every(n => Number.isInteger(n) && n > 0)) throw new Error('--sizes must be positive integers, comma-separated (e.g. 100000,10000,1000)')
  if (o.quick && o.smoke) throw new Error('--quick and --smoke exclude each other: choose one')
  const mode: BenchResults['mode'] = o.smoke ? 'smoke' : o.quick ? 'quick' : 'full'
  for (const p of o.only ?? []) if (!(PARTS as readonly string[]).includes(p)) throw new Error(`--only: unknown part "${p}"; choose from ${PARTS.join(', ')}`)
  const want = (p: string): boolean => !o.only || o.only.includes(p)
  const started = new Date()
  const t0 = Date.now()
  const log = (l: string): void => { console.log(`[${((Date.now() - t0) / 1000).toFixed(0).padStart(5)} s] ${l}`) }
  const machine = machineInfo()
  const load = sampleLoad()
  log(`rewindfs benchmarks, ${o.smoke ? 'SMOKE form (tiny inputs: the figures mean nothing)' : o.quick ? 'QUICK mode (one round of a subset: indicative only)' : 'full mode'}; ${describeMachine(machine)}`)
  const cleanup = new Cleanup()
  const r: BenchResults = { version: 1, mode, started: started.toISOString(), finished: '', machine, load: load.samples }
  const dir = o.out ?? (mode === 'full' ? RESULTS : path.join(RESULTS, mode))
  const prefix = `${mode}-${r.started.slice(0, 10)}`
  const partial = path.join(dir, `${prefix}.partial.json`)
  const savePartial = (): void => {
    fs.mkdirSync(dir, { recursive: true })
    fs.writeFileSync(partial, JSON.stringify({ ...r, finished: new Date().toISOString(), note: 'partial: the run had not finished when this was saved' }, null, 1) + '\n')
  }
  try {
    if (want('session')) {
      r.session = await sessionBench(cleanup, { quick: o.quick, smoke: o.smoke, rounds: o.rounds, rewindfsB: o.rewindfsB, log, onRound: soFar => { r.session = soFar; savePartial() } })
      savePartial()
      console.log('\n' + sessionText(r.session) + '\n')
    }
    if (want('hifreq')) {
      r.hifreq = await hifreqBench(cleanup, { seconds: o.smoke ? 0.5 : o.quick ? 3 : 10, log })
      savePartial()
      console.log('\n' + hifreqText(r.hifreq) + '\n')
    }
    if (want('checkpoint')) {
      r.checkpoint = await checkpointBench(cleanup, { quick: o.quick, smoke: o.smoke, sizes: o.sizes, log, onProgress: soFar => { r.checkpoint = soFar; savePartial() } })
      console.log('\n' + checkpointText(r.checkpoint) + '\n\n' + targetLine(r.checkpoint) + '\n')
    }
  } finally {
    await cleanup.run()
    load.stop()
  }
  r.finished = new Date().toISOString()
  const files = writeReport(dir, r, prefix)
  fs.rmSync(partial, { force: true })
  log(loadLine(r.load))
  log(`wrote ${files.map(f => path.relative(process.cwd(), f)).join(', ')}`)
}

/**
 * Writes the report of the results files `files` (BenchResults JSON, e.g. a
 * `.partial.json`; several are merged by mergeResults) into `out` (default:
 * the first file's directory), with `note` (if given) at the top. Throws
 * when a file is not a results file or two files hold the same part.
 */
function fromJson (files: string[], out: string | undefined, note: string | undefined): void {
  const rs = files.map(file => {
    const r = JSON.parse(fs.readFileSync(file, 'utf8')) as BenchResults
    if (r.version !== 1 || !Array.isArray(r.load)) throw new Error(`${file} is not a results file of bench/run.ts (version 1 with load samples)`)
    return r
  })
  const r = rs.length === 1 ? rs[0] : mergeResults(rs)
  if (note !== undefined) r.note = r.note ? `${r.note}. ${note}` : note
  const prefix = path.basename(files[0]).replace(/(\.partial)?\.json$/, '')
  const written = writeReport(out ?? path.dirname(files[0]), r, prefix)
  console.log(`wrote ${written.map(f => path.relative(process.cwd(), f)).join(', ')}`)
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main().catch(e => { console.error(e instanceof Error ? e.message : e); process.exitCode = 1 })
}
