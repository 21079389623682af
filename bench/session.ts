/**
 * What an agent pays over a session: a replay of 20 ordinary coding-agent
 * steps on this repository (bench/session/steps.ts: clone, npm ci from the
 * warm cache, tsc builds, grep, find, sed and atomic-save edits, two unit
 * test files, git status/commit/diff/blame, rm -rf node_modules, a second
 * npm ci) in every way of keeping the workspace (bench/session/modes.ts),
 * each round in a rotated order; medians with the interquartile range.
 *
 *   node dist/bench/session.js [--rounds 5] [--quick] [--modes native,rewindfs,...]
 *                              [--rewindfs-b /path/to/other/checkout] [--out FILE.json]
 *
 * --quick: one round of the quick subset of the steps (says so). Prints the
 * tables; with --out, writes the raw result as JSON (bench/run.ts writes the
 * full report). `npm run bench` runs this with the other benchmarks.
 */
import fs from 'node:fs'
import path from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { Command } from 'commander'
import { Cleanup } from './lib.js'
import { runSession, type SessionResult } from './session/run.js'
import { selectModes, MODE_NAMES } from './session/modes.js'
import { STEPS, SMOKE_STEPS } from './session/steps.js'
import { summarizeSession, sessionTotalsTable, sessionStepsTable, sessionRatiosTable, sessionRequestsTables } from './report/session.js'
import type { CleanupStack } from './helpers/btrfs.js'

/** This repository's root (the module runs as dist/bench/session.js). */
export const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..')

/** Options of the session benchmark as the command line and bench/run.ts give them. */
export interface SessionBenchOptions {
  quick: boolean
  /** the smoke form: one round of SMOKE_STEPS in every mode, no npm cache priming (seconds, figures meaningless) */
  smoke?: boolean
  rounds?: number
  modes?: string[]
  rewindfsB?: string
  log: (line: string) => void
  /** called with the result so far after each mode's run in each round */
  onRound?: (soFar: SessionResult) => void
}

/** Runs the session benchmark (full: 5 rounds of the 20 steps; quick: 1 round of the quick steps; smoke: 1 round of SMOKE_STEPS). */
export async function sessionBench (cleanup: CleanupStack, o: SessionBenchOptions): Promise<SessionResult> {
  if (o.smoke) {
    o.log(`session: SMOKE form: 1 round of the ${SMOKE_STEPS.length} steps that name the repository's files, every mode, no cache priming; the figures mean nothing`)
    return await runSession({ modes: selectModes(cleanup, { names: o.modes, rewindfsB: o.rewindfsB, repo: REPO }), steps: SMOKE_STEPS, rounds: 1, repo: REPO, cleanup, log: o.log, prime: false, onRound: o.onRound })
  }
  const rounds = o.rounds ?? (o.quick ? 1 : 5)
  const steps = o.quick ? STEPS.filter(s => s.quick) : STEPS
  if (o.quick) o.log(`session: QUICK mode: ${rounds} round of ${steps.length} of the ${STEPS.length} steps (no tsc, no tests, one npm ci); figures are indicative only`)
  // quick leaves out git -f (its checkpoints copy node_modules into git: minutes on 2 cores)
  const names = o.modes ?? (o.quick ? MODE_NAMES.filter(n => n !== 'git -f' && (n !== 'rewindfs-b' || o.rewindfsB)) : undefined)
  if (o.quick && !o.modes) o.log('session: QUICK mode leaves out the git -f mode')
  return await runSession({ modes: selectModes(cleanup, { names, rewindfsB: o.rewindfsB, repo: REPO }), steps, rounds, repo: REPO, cleanup, log: o.log, onRound: o.onRound })
}

/** The session's tables as printed and as put in the report. */
export function sessionText (r: SessionResult): string {
  const sums = summarizeSession(r)
  return [
    `Session wall time (${r.rounds.length} round(s), ${r.steps.length} steps; median and interquartile range, seconds)\n`,
    sessionTotalsTable(sums),
    '\nPer step, median s (± half the IQR)\n',
    sessionStepsTable(r, sums),
    '\nPer step, ratio to native (median / native median)\n',
    sessionRatiosTable(r, sums),
    '',
    sessionRequestsTables(r, sums)
  ].join('\n')
}

async function main (): Promise<void> {
  const cmd = new Command('session')
    .option('--rounds <n>', 'rounds (default 5, quick 1)', v => Number(v))
    .option('--quick', 'one round of the quick subset of steps', false)
    .option('--modes <list>', `comma-separated modes (${MODE_NAMES.join(', ')})`, v => v.split(',').map(s => s.trim()).filter(Boolean))
    .option('--rewindfs-b <path>', 'a second rewindfs checkout (built) to measure beside this one')
    .option('--out <file>', 'write the raw result as JSON')
    .parse()
  const opts = cmd.opts<{ rounds?: number, quick: boolean, modes?: string[], rewindfsB?: string, out?: string }>()
  if (opts.rounds !== undefined && !(Number.isInteger(opts.rounds) && opts.rounds > 0)) throw new Error('--rounds must be a positive integer')
  const cleanup = new Cleanup()
  try {
    const r = await sessionBench(cleanup, { quick: opts.quick, rounds: opts.rounds, modes: opts.modes, rewindfsB: opts.rewindfsB, log: l => console.log(l) })
    console.log('\n' + sessionText(r))
    if (opts.out) { fs.writeFileSync(opts.out, JSON.stringify(r, null, 1)); console.log(`\nraw result: ${opts.out}`) }
  } finally {
    await cleanup.run()
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main().catch(e => { console.error(e instanceof Error ? e.message : e); process.exitCode = 1 })
}
