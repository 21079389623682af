/**
 * The session replay's runner (bench/session.ts is its command line): runs
 * the steps (bench/session/steps.ts) in every mode (bench/session/modes.ts),
 * round after round, the order of the modes rotated each round, and keeps
 * every raw sample. Nothing is summarised here (bench/report/session.ts
 * does that), so the JSON holds what was measured.
 */
import fs from 'node:fs'
import path from 'node:path'
import { execFile, execFileSync } from 'node:child_process'
import { now } from '../lib.js'
import { rotation, countDelta } from '../helpers/stats.js'
import { tempRoot } from '../helpers/mount.js'
import { type Mode, type ModeRun } from './modes.js'
import { type Step, PRIME_STEP, stepEnv, stepCwd } from './steps.js'
import type { CleanupStack } from '../helpers/btrfs.js'

/** One mode's run in one round. */
export interface ModeRoundResult {
  /** wall time of each step, ms (shorter than steps when the run failed) */
  stepMs: number[]
  /** wall time of the checkpoint after each step, ms (empty when the mode takes none) */
  ckptMs: number[]
  /** FUSE requests per opcode during each step (rewindfs modes whose daemon reports them) */
  requests?: Array<Record<string, number>>
  /** CPU time of the daemon during each step, user + system, ms (rewindfs modes; includes the mark after the step before) */
  daemonCpuMs?: number[]
  /** daemon resident memory at the end of the round, bytes */
  rssBytes?: number
  /** why the run stopped early */
  error?: string
}

/** Everything one session benchmark measured. */
export interface SessionResult {
  kind: 'session'
  steps: Array<{ name: string, cmd: string }>
  modes: Array<{ name: string, label: string, skipped?: string }>
  /** the repository cloned by step 1, and its commit */
  source: { path: string, commit: string }
  /** the cache-priming step, run once before the rounds (ms NaN when not run) */
  prime: { name: string, cmd: string, ms: number }
  rounds: Array<{ order: string[], runs: Record<string, ModeRoundResult> }>
}

/** Options of runSession. */
export interface SessionOptions {
  modes: Mode[]
  steps: readonly Step[]
  rounds: number
  /** the repository to replay on (its HEAD is snapshotted into a temporary clone first) */
  repo: string
  cleanup: CleanupStack
  /** progress lines */
  log: (line: string) => void
  /** per-step limit, ms (default 600000) */
  stepTimeoutMs?: number
  /** run PRIME_STEP before the rounds (default true; the smoke form, which runs no npm, says false) */
  prime?: boolean
  /**
   * called with the result so far after each mode's run in each round (the
   * round under way is the last of `rounds`, with the runs done so far);
   * bench/run.ts saves it, so a stopped run keeps what it measured
   */
  onRound?: (soFar: SessionResult) => void
}

/** Runs bash `cmd` in `cwd`; resolves with its wall time in ms, rejects with the tails of its stderr and stdout (600 characters). */
export function timeCommand (cmd: string, cwd: string, env: NodeJS.ProcessEnv, timeoutMs: number): Promise<number> {
  const t0 = now()
  return new Promise((resolve, reject) => {
    execFile('bash', ['-c', cmd], { cwd, env, timeout: timeoutMs, maxBuffer: 64 * 1024 * 1024 }, (err, out, errOut) => {
      const ms = now() - t0
      // tsc and the test runners report on stdout: give both tails, stderr first
      const tail = [String(errOut).trim(), String(out).trim()].filter(Boolean).join('\n--- stdout:\n').slice(-600)
      if (err) reject(new Error(`exit ${String(err.code ?? err.signal)} after ${(ms / 1000).toFixed(1)} s: ${tail}`))
      else resolve(ms)
    })
  })
}

async function runMode (mode: Mode, o: SessionOptions, env: NodeJS.ProcessEnv): Promise<ModeRoundResult> {
  const res: ModeRoundResult = { stepMs: [], ckptMs: [] }
  let run: ModeRun | null = null
  let unregister: (() => Promise<void>) | null = null
  try {
    run = await mode.start()
    const r = run
    unregister = o.cleanup.push(`session workspace (${mode.name})`, () => r.close())
    let before = run.requests ? await run.requests() : undefined
    if (before) res.requests = []
    let cpuBefore = run.cpuMs ? run.cpuMs() : NaN
    if (run.cpuMs) res.daemonCpuMs = []
    for (let i = 0; i < o.steps.length; i++) {
      const step = o.steps[i]
      try {
        res.stepMs.push(await timeCommand(step.cmd, stepCwd(run.dir, i), env, o.stepTimeoutMs ?? 600000))
      } catch (e) {
        throw new Error(`step ${i + 1} (${step.name}): ${(e as Error).message}`)
      }
      if (run.cpuMs) {
        const c = run.cpuMs()
        res.daemonCpuMs!.push(c - cpuBefore)
        cpuBefore = c
      }
      if (before && run.requests) {
        const after = (await run.requests()) ?? {}
        res.requests!.push(countDelta(before, after))
        before = after
      }
      if (run.checkpoint) {
        const t0 = now()
        await run.checkpoint(i)
        res.ckptMs.push(now() - t0)
      }
    }
    if (run.rss) res.rssBytes = run.rss()
  } catch (e) {
    res.error = (e as Error).message
  } finally {
    if (unregister) await unregister()
    else if (run) await run.close()
  }
  return res
}

/**
 * Runs the session benchmark: snapshots `repo` (git clone --single-branch of
 * its HEAD), primes the npm cache (PRIME_STEP), prepares every mode
 * (skipping, with a printed note, those this machine cannot run), then runs
 * `rounds` rounds. A mode whose step fails keeps the error in that round's
 * result and the run goes on.
 */
export async function runSession (o: SessionOptions): Promise<SessionResult> {
  const root = tempRoot('session')
  const done = o.cleanup.push(`session temp ${root}`, () => fs.rmSync(root, { recursive: true, force: true }))
  try {
    const src = path.join(root, 'src')
    execFileSync('git', ['clone', '-q', '--no-hardlinks', '--single-branch', o.repo, src], { stdio: ['ignore', 'ignore', 'pipe'] })
    const commit = execFileSync('git', ['-C', src, 'rev-parse', 'HEAD'], { encoding: 'utf8' }).trim()
    const env = stepEnv({ src })
    o.log(`session: source ${o.repo} at ${commit.slice(0, 12)}; ${o.steps.length} steps, ${o.rounds} round(s)`)
    let primeMs = NaN
    if (o.prime !== false) {
      const primeDir = path.join(root, 'prime')
      fs.mkdirSync(primeDir)
      o.log(`session: ${PRIME_STEP.name}: ${PRIME_STEP.cmd}`)
      primeMs = await timeCommand(PRIME_STEP.cmd, primeDir, env, 900000)
      fs.rmSync(primeDir, { recursive: true, force: true })
    }
    const modes: SessionResult['modes'] = []
    const ready: Mode[] = []
    for (const m of o.modes) {
      const why = await m.prepare()
      modes.push({ name: m.name, label: m.label, ...(why ? { skipped: why } : {}) })
      if (why) o.log(`note: mode ${m.name} skipped: ${why}`)
      else ready.push(m)
    }
    const result: SessionResult = {
      kind: 'session',
      steps: o.steps.map(s => ({ name: s.name, cmd: s.cmd })),
      modes,
      source: { path: o.repo, commit },
      prime: { name: PRIME_STEP.name, cmd: PRIME_STEP.cmd, ms: primeMs },
      rounds: []
    }
    const t0 = now()
    for (let r = 0; r < o.rounds; r++) {
      const order = rotation(ready, r)
      const round: SessionResult['rounds'][number] = { order: order.map(m => m.name), runs: {} }
      result.rounds.push(round)
      for (const m of order) {
        const res = await runMode(m, o, env)
        round.runs[m.name] = res
        const steps = res.stepMs.reduce((a, b) => a + b, 0) / 1000
        const ck = res.ckptMs.reduce((a, b) => a + b, 0) / 1000
        o.log(`session round ${r + 1}/${o.rounds} ${m.name.padEnd(10)} ${(steps + ck).toFixed(1).padStart(6)} s (checkpoints ${ck.toFixed(2)} s)${res.error ? ' FAILED: ' + res.error : ''}  [${((now() - t0) / 1000).toFixed(0)} s elapsed]`)
        o.onRound?.(result)
      }
    }
    return result
  } finally {
    await done()
  }
}
