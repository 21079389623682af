/**
 * Shared pieces of the real-tools tests (test/tools/tools-*.test.ts): the scale
 * switch, running commands and background processes, and the rewind cycle
 * every tool ends with:
 *
 *   mark a checkpoint → independent manifest (scripts/manifest.sh) → damage
 *   the tree → restore the checkpoint → the manifest must be identical and
 *   the tool's own check must pass again
 *
 * and the closing unmount (write-back) after which the directory on disk
 * must equal the final manifest.
 *
 * Runs in the TEST process (the daemon is a child, see mount.ts), so the
 * mount may be used freely; tools run as child processes.
 */
import fs from 'node:fs'
import path from 'node:path'
import { spawn, type ChildProcess } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { performance } from 'node:perf_hooks'
import tap, { type Test } from 'tap'
import type { Mounted } from './mount.js'
import { type Manifest, manifest, manifestDiff } from '../../scripts/manifest.js'

export { type Manifest, manifest, manifestDiff }

/** The repository checkout this test runs from (dist/test/helpers → ../../..). */
export const PROJECT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..')

/** REWINDFS_TOOLS_SCALE=large switches every tools test to its long form. */
export const LARGE = process.env.REWINDFS_TOOLS_SCALE === 'large'
if (process.env.REWINDFS_TOOLS_SCALE !== undefined && !['ci', 'large'].includes(process.env.REWINDFS_TOOLS_SCALE)) {
  throw new Error(`REWINDFS_TOOLS_SCALE=${process.env.REWINDFS_TOOLS_SCALE}: expected "ci" (default) or "large"`)
}

// the long form outlasts the runner's per-file timeout (test.sh: 300 s); tell it (root timeout, ms)
if (LARGE) tap.setTimeout(4 * 3600 * 1000)

/** `ci` in the CI form, `large` in the long form. */
export function scale<T> (ci: T, large: T): T { return LARGE ? large : ci }

/** Debian's python3 (has sqlite3 and xattr calls), else the first python3 on PATH. */
export const PYTHON = fs.existsSync('/usr/bin/python3') ? '/usr/bin/python3' : 'python3'

/** Outcome of a command. */
export interface Run { stdout: string, stderr: string, code: number, ms: number }

/** Runs `cmd` with bash in `cwd` (default: none given → throws); never throws on a non-zero exit, kills it after timeoutMs (default 300 s, code 124). */
export async function run (cmd: string, o: { cwd: string, env?: NodeJS.ProcessEnv, timeoutMs?: number, input?: string }): Promise<Run> {
  const t0 = performance.now()
  return await new Promise((resolve, reject) => {
    const child = spawn('bash', ['-c', cmd], { cwd: o.cwd, env: o.env ?? process.env, stdio: [o.input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'] })
    let stdout = ''
    let stderr = ''
    child.stdout!.on('data', (d: Buffer) => { stdout += d.toString() })
    child.stderr!.on('data', (d: Buffer) => { stderr += d.toString() })
    if (o.input !== undefined) child.stdin!.end(o.input)
    let timedOut = false
    const timer = setTimeout(() => { timedOut = true; child.kill('SIGKILL') }, o.timeoutMs ?? 300000)
    child.on('error', e => { clearTimeout(timer); reject(e) })
    child.on('close', (code) => {
      clearTimeout(timer)
      resolve({ stdout, stderr: timedOut ? `${stderr}\n(killed after ${o.timeoutMs ?? 300000} ms)` : stderr, code: timedOut ? 124 : (code ?? 1), ms: performance.now() - t0 })
    })
  })
}

/** Runs `cmd` and asserts exit status 0 (tap assertion with its output on failure); returns the outcome. */
export async function ok (t: Test, cmd: string, o: { cwd: string, env?: NodeJS.ProcessEnv, timeoutMs?: number, input?: string, msg?: string }): Promise<Run> {
  const r = await run(cmd, o)
  t.equal(r.code, 0, o.msg ?? `\`${cmd.length > 100 ? cmd.slice(0, 100) + '…' : cmd}\` exits 0`, r.code === 0 ? {} : { stdout: r.stdout.slice(-3000), stderr: r.stderr.slice(-3000) })
  return r
}

/** A background child process whose stdout lines are collected as they come. */
export interface Background {
  child: ChildProcess
  /** stdout lines so far */
  lines: string[]
  /** calls fn on every stdout line from now on */
  onLine: (fn: (line: string) => void) => void
  /** resolves when it exits (never rejects) */
  done: Promise<{ code: number | null, signal: NodeJS.Signals | null, stdout: string, stderr: string }>
}

/**
 * Starts `file args` in the background with stdout collected line by line;
 * registers a teardown on `t` that SIGKILLs it (by its pid) if still running.
 */
export function background (t: Test, file: string, args: string[], o: { cwd: string, env?: NodeJS.ProcessEnv }): Background {
  const child = spawn(file, args, { cwd: o.cwd, env: o.env ?? process.env, stdio: ['ignore', 'pipe', 'pipe'] })
  const lines: string[] = []
  const fns: Array<(line: string) => void> = []
  let stdout = ''
  let stderr = ''
  let partial = ''
  child.stdout!.on('data', (d: Buffer) => {
    const s = d.toString()
    stdout += s
    partial += s
    let i
    while ((i = partial.indexOf('\n')) >= 0) {
      const line = partial.slice(0, i)
      partial = partial.slice(i + 1)
      lines.push(line)
      for (const fn of fns) fn(line)
    }
  })
  child.stderr!.on('data', (d: Buffer) => { stderr += d.toString() })
  const done = new Promise<{ code: number | null, signal: NodeJS.Signals | null, stdout: string, stderr: string }>(resolve => {
    child.on('error', e => { stderr += String(e); resolve({ code: null, signal: null, stdout, stderr }) })
    child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr }))
  })
  t.teardown(() => { if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL') })
  return { child, lines, onLine: fn => { fns.push(fn) }, done }
}

/** Step timings of one test file, printed as tap comments (measured, never asserted). */
export class Timings {
  readonly rows: Array<{ step: string, ms: number, note: string }> = []
  private readonly t0 = performance.now()
  /** records `ms` for `step` */
  add (step: string, ms: number, note = ''): void { this.rows.push({ step, ms, note }) }
  /** runs fn, records its duration under `step`, returns its value */
  async time<T> (step: string, fn: () => Promise<T>, note?: (v: T) => string): Promise<T> {
    const s = performance.now()
    const v = await fn()
    this.add(step, performance.now() - s, note ? note(v) : '')
    return v
  }

  /** prints the table (and the total since construction) as tap comments */
  print (t: Test, title: string): void {
    t.comment(`${title} (scale ${LARGE ? 'large' : 'ci'}), total ${((performance.now() - this.t0) / 1000).toFixed(1)} s`)
    for (const r of this.rows) t.comment(`  ${r.step.padEnd(44)} ${(r.ms / 1000).toFixed(2).padStart(7)} s  ${r.note}`)
  }
}

/** A checkpoint with the manifest of the workspace taken right after it. */
export interface Marked { id: number, label: string, good: Manifest }

/** Marks a checkpoint and takes the workspace's manifest right after it. */
export async function markWithManifest (m: Mounted, label: string, times: Timings): Promise<Marked> {
  const info = await times.time(`mark "${label}"`, async () => await m.client.mark({ label }), i => `checkpoint #${i.id}, daemon ${i.ms.toFixed(1)} ms`)
  const good = await times.time(`manifest "${label}"`, async () => await manifest(m.dir), g => `${g.files} files, ${g.paths} paths`)
  return { id: info.id, label, good }
}

/** Restores `to` and asserts the workspace's manifest equals the one taken at its mark. */
export async function restoreAndCompare (t: Test, m: Mounted, to: Marked, times: Timings, why: string): Promise<void> {
  const r = await times.time(`restore #${to.id} (${why})`, async () => await m.client.restore({ id: to.id }), i => `daemon ${i.ms.toFixed(1)} ms, ${i.changed} paths changed`)
  t.ok(r.changed > 0 || why === 'no change', `restore #${to.id} (${why}) changed ${r.changed} inodes`)
  const after = await times.time(`manifest after restore #${to.id}`, async () => await manifest(m.dir))
  const d = manifestDiff(to.good.lines, after.lines)
  t.equal(d.count, 0, `after restore #${to.id} (${why}) the manifest equals the one taken at "${to.label}" (${after.paths} paths)`, d.count === 0 ? {} : { differs: d.shown })
}

/**
 * The rewind cycle of one tool: mark "`tool`: done" + manifest (or take
 * `checkpoint`, marked just before); `damage()`;
 * the manifest must now differ and `damagedCheck` (the tool's check, which
 * must see the damage) runs; restore; the manifest must be identical and
 * `check()` (the tool's own check) must pass. Returns the checkpoint.
 */
export async function rewindCycle (t: Test, m: Mounted, times: Timings, o: {
  tool: string
  /** a checkpoint just marked (with its manifest) to use instead of marking one here */
  checkpoint?: Marked
  damage: () => Promise<void>
  /** asserts that the tool's check fails on the damaged tree (so the check can fail) */
  damagedCheck: () => Promise<void>
  /** asserts the tool's own check passes */
  check: () => Promise<void>
}): Promise<Marked> {
  const cp = o.checkpoint ?? await markWithManifest(m, `${o.tool}: done`, times)
  await times.time(`damage (${o.tool})`, o.damage)
  const damaged = await manifest(m.dir)
  const dd = manifestDiff(cp.good.lines, damaged.lines)
  t.ok(dd.count > 0, `the damage changed the tree (${dd.count} manifest lines differ)`)
  await o.damagedCheck()
  await restoreAndCompare(t, m, cp, times, `${o.tool} damaged`)
  await times.time(`${o.tool} check after restore`, o.check)
  return cp
}

/**
 * Closes the workspace: unmount with write-back, and the directory on disk
 * must equal `last`'s manifest, exactly (mtime at ns). The caller leaves the
 * workspace at `last` (restore it again if a check changed files): whatever
 * changed since shows up as a difference on disk. Returns the on-disk manifest.
 */
export async function unmountAndCompare (t: Test, m: Mounted, last: Marked, times: Timings): Promise<Manifest> {
  await times.time('unmount (write-back)', async () => await m.unmount())
  const disk = await times.time('manifest on disk', async () => await manifest(m.dir), d => `${d.files} files, ${d.paths} paths`)
  const dk = manifestDiff(last.good.lines, disk.lines)
  t.equal(dk.count, 0, `after unmount the directory on disk equals "${last.label}" (${disk.paths} paths, mtime at ns)`, dk.count === 0 ? {} : { differs: dk.shown })
  return disk
}

/** Asserts two manifests (e.g. of two trees made the same way) are equal, showing the difference. */
export function sameManifest (t: Test, a: Manifest, b: Manifest, msg: string): void {
  const d = manifestDiff(a.lines, b.lines)
  t.equal(d.count, 0, `${msg} (${a.paths} paths)`, d.count === 0 ? {} : { differs: d.shown })
}

/** The manifest with chosen fields only (0-based: 0 path … 8 hash), e.g. to leave times out. */
export function fields (mf: Manifest, keep: number[]): Manifest {
  const lines = mf.lines.map(l => {
    // path type mode uid gid nlink size mtime, then the hash or "-> target" (which may hold spaces)
    const f = l.split(' ')
    if (f[1] !== 'l' && f.length !== 9) throw new Error(`manifest line with a space in its path: ${l}`)
    const all = [...f.slice(0, 8), f.slice(8).join(' ')]
    return keep.map(i => all[i]).join(' ')
  })
  return { lines, files: mf.files, paths: mf.paths }
}
