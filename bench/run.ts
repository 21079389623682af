/**
 * `npm run bench`: every benchmark in one run, with progress, then the
 * report (bench/report/report.ts): raw JSON, report.md and SVG charts.
 *
 *   node dist/bench/run.js [--quick] [--only session,hifreq,checkpoint] [--rewindfs-b PATH] [--out DIR]
 *
 * Full (default): the session replay (5 rounds of 20 steps, every mode),
 * the high-frequency marks (10 s phases) and the checkpoint peers (1,000 /
 * 10,000 / 100,000 files); about 40 minutes on 2 loaded cores; writes to
 * bench/results/ (committed). --quick: one round of the quick subset of the
 * session, 3 s phases, 1,000 and 10,000 files; under 5 minutes on 2 cores;
 * writes to bench/results/quick/ (not committed). The load average is
 * sampled every 5 s throughout and recorded.
 */
import path from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { Command } from 'commander'
import { Cleanup } from './lib.js'
import { machineInfo, describeMachine, sampleLoad } from './helpers/machine.js'
import { sessionBench, sessionText } from './session.js'
import { hifreqBench, hifreqText } from './hifreq.js'
import { checkpointBench, targetLine } from './checkpoint.js'
import { checkpointText } from './report/checkpoint.js'
import { writeReport, loadLine, type BenchResults } from './report/report.js'

const RESULTS = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../bench/results')
const PARTS = ['session', 'hifreq', 'checkpoint'] as const

async function main (): Promise<void> {
  const o = new Command('bench')
    .option('--quick', 'one round of a subset of everything (< 5 min)', false)
    .option('--only <parts>', `comma-separated subset of ${PARTS.join(', ')}`, v => v.split(',').map(s => s.trim()))
    .option('--rewindfs-b <path>', 'a second rewindfs checkout (built) measured beside this one in the session')
    .option('--rounds <n>', 'session rounds (default 5, quick 1)', v => Number(v))
    .option('--out <dir>', 'where to write the results (default bench/results, quick: bench/results/quick)')
    .parse()
    .opts<{ quick: boolean, only?: string[], rewindfsB?: string, rounds?: number, out?: string }>()
  for (const p of o.only ?? []) if (!(PARTS as readonly string[]).includes(p)) throw new Error(`--only: unknown part "${p}"; choose from ${PARTS.join(', ')}`)
  const want = (p: string): boolean => !o.only || o.only.includes(p)
  const started = new Date()
  const t0 = Date.now()
  const log = (l: string): void => { console.log(`[${((Date.now() - t0) / 1000).toFixed(0).padStart(5)} s] ${l}`) }
  const machine = machineInfo()
  const load = sampleLoad()
  log(`rewindfs benchmarks, ${o.quick ? 'QUICK mode (one round of a subset: indicative only)' : 'full mode'}; ${describeMachine(machine)}`)
  const cleanup = new Cleanup()
  const r: BenchResults = { version: 1, mode: o.quick ? 'quick' : 'full', started: started.toISOString(), finished: '', machine, load: load.samples }
  try {
    if (want('session')) {
      r.session = await sessionBench(cleanup, { quick: o.quick, rounds: o.rounds, rewindfsB: o.rewindfsB, log })
      console.log('\n' + sessionText(r.session) + '\n')
    }
    if (want('hifreq')) {
      r.hifreq = await hifreqBench(cleanup, { seconds: o.quick ? 3 : 10, log })
      console.log('\n' + hifreqText(r.hifreq) + '\n')
    }
    if (want('checkpoint')) {
      r.checkpoint = await checkpointBench(cleanup, { quick: o.quick, log })
      console.log('\n' + checkpointText(r.checkpoint) + '\n\n' + targetLine(r.checkpoint) + '\n')
    }
  } finally {
    await cleanup.run()
    load.stop()
  }
  r.finished = new Date().toISOString()
  const dir = o.out ?? (o.quick ? path.join(RESULTS, 'quick') : RESULTS)
  const files = writeReport(dir, r, `${o.quick ? 'quick' : 'full'}-${r.started.slice(0, 10)}`)
  log(loadLine(r.load))
  log(`wrote ${files.map(f => path.relative(process.cwd(), f)).join(', ')}`)
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main().catch(e => { console.error(e instanceof Error ? e.message : e); process.exitCode = 1 })
}
