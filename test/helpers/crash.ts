/**
 * Builders for the crash-safety tests (test/crash/crash.test.ts): the workload
 * child process (crash-writer.ts) behind a small promise API, manifests and
 * their content-only projection, and the two ways to kill a daemon: plain
 * SIGKILL (libfuse's auto_unmount helper then removes the mount) and
 * SIGKILL of the helper first, which leaves a dead mount behind
 * ("Transport endpoint is not connected") as a killed container or an OOM
 * kill of the whole process group does.
 */
import fs from 'node:fs'
import path from 'node:path'
import { fork, execFile, type ChildProcess } from 'node:child_process'
import { promisify } from 'node:util'
import { fileURLToPath } from 'node:url'
import type { Mounted } from './mount.js'
import type { WriterCommand, WriterEvent, WriterMode } from './crash-writer.js'

const run = promisify(execFile)
const here = path.dirname(fileURLToPath(import.meta.url))
/** scripts/manifest.sh */
export const MANIFEST = path.resolve(here, '../../../scripts/manifest.sh')
const WRITER = path.join(here, 'crash-writer.js')

/** scripts/manifest.sh of `dir`: one line per path, sorted (format in the script's header). */
export async function manifest (dir: string): Promise<string[]> {
  const r = await run('bash', [MANIFEST, dir], { maxBuffer: 256 * 1024 * 1024 })
  return r.stdout.split('\n').filter(l => l !== '')
}

/**
 * The content-only view of manifest lines: `path type mode size hash` (no
 * owner, link count or times), sorted. This is what the workload's model
 * knows, and what an fsync promises (mtimes of a state fsync made durable
 * are the daemon's, not the model's).
 */
export function projectManifest (lines: string[]): string[] {
  return lines.map(l => {
    const f = l.split(' ')
    return `${f[0]} ${f[1]} ${f[2]} ${f[6]} ${f.slice(8).join(' ')}`
  }).sort()
}

/** First differing lines of two sorted line lists: '-' only in `want`, '+' only in `got`, by path. */
export function diffLines (want: string[], got: string[], max = 16): string[] {
  const w = new Set(want); const g = new Set(got)
  const out: string[] = []
  for (const l of want) if (!g.has(l)) out.push(`- ${l}`)
  for (const l of got) if (!w.has(l)) out.push(`+ ${l}`)
  return out.sort((a, b) => a.slice(2) < b.slice(2) ? -1 : a.slice(2) > b.slice(2) ? 1 : a < b ? -1 : 1).slice(0, max)
}

/** True when two line lists are equal. */
export function sameLines (a: string[], b: string[]): boolean {
  return a.length === b.length && a.every((l, i) => l === b[i])
}

/** Process state letter from /proc/PID/stat ('R', 'S', 'D', 'Z', ...), or null when there is no such process. */
export function procState (pid: number): string | null {
  try {
    const s = fs.readFileSync(`/proc/${pid}/stat`, 'utf8')
    return s.slice(s.lastIndexOf(')') + 2).split(' ')[0] ?? null
  } catch { return null }
}

/** True while `pid` runs (a zombie does not count). */
export function alive (pid: number): boolean {
  const s = procState(pid)
  return s !== null && s !== 'Z' && s !== 'X'
}

/** Waits until `pid` no longer runs; false after `ms`. */
export async function waitGone (pid: number, ms = 20000): Promise<boolean> {
  const deadline = Date.now() + ms
  while (Date.now() < deadline) {
    if (!alive(pid)) return true
    await new Promise(resolve => setTimeout(resolve, 10))
  }
  return !alive(pid)
}

/** The fusermount helper (auto_unmount) that libfuse started as a child of daemon `pid`, or null. */
export function fusermountHelper (pid: number): number | null {
  for (const e of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(e)) continue
    try {
      const s = fs.readFileSync(`/proc/${e}/stat`, 'utf8')
      const comm = s.slice(s.indexOf('(') + 1, s.lastIndexOf(')'))
      const ppid = Number(s.slice(s.lastIndexOf(')') + 2).split(' ')[1])
      if (ppid === pid && comm.startsWith('fusermount')) return Number(e)
    } catch {}
  }
  return null
}

/**
 * SIGKILL of the daemon's fusermount helper, then of the daemon: the mount
 * stays behind, dead (stat fails with ENOTCONN). Returns the helper's pid
 * (null when there was none). Only processes this test started (the helper
 * is the daemon's child), by pid.
 */
export async function killLeavingDeadMount (m: Mounted): Promise<number | null> {
  const helper = fusermountHelper(m.daemon.pid!)
  if (helper !== null) {
    process.kill(helper, 'SIGKILL')
    await waitGone(helper)
  }
  m.daemon.kill('SIGKILL')
  await new Promise(resolve => m.daemon.exitCode !== null || m.daemon.signalCode !== null ? resolve(null) : m.daemon.once('exit', resolve))
  await m.client.close().catch(() => {})
  return helper
}

/** True when `dir` is a mount point in /proc/mounts. */
export function isMounted (dir: string): boolean {
  return fs.readFileSync('/proc/mounts', 'utf8').split('\n').some(l => l.split(' ')[1] === dir)
}

/** How a `run` of the workload ended. */
export type RunEnd = Extract<WriterEvent, { ev: 'idle' | 'paused' | 'error' }>

/**
 * The workload child process (crash-writer.ts) behind promises. Every event
 * is passed to `onEvent` in order (the test tracks fsyncs there); `run`
 * returns at once, `end()` waits for the run to end and `pause()` ends it.
 */
export class WriterProc {
  readonly child: ChildProcess
  private runEnd: { promise: Promise<RunEnd>, resolve: (e: RunEnd) => void } | null = null
  /** how the last run ended */
  private lastEnd: RunEnd = { ev: 'paused', ops: 0, bytes: 0 }
  private waiting: { evs: string[], resolve: (e: WriterEvent) => void, reject: (e: Error) => void } | null = null
  private exited = false

  constructor (readonly onEvent: (e: WriterEvent) => void) {
    this.child = fork(WRITER, [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] })
    this.child.on('message', (e: WriterEvent) => this.onMessage(e))
    this.child.on('exit', (code, signal) => {
      this.exited = true
      const err = { ev: 'error' as const, code: 'EXITED', message: `the writer exited (${code ?? signal})`, op: '' }
      this.runEnd?.resolve(err)
      this.waiting?.reject(new Error(err.message))
    })
  }

  private onMessage (e: WriterEvent): void {
    this.onEvent(e)
    if (this.runEnd && (e.ev === 'idle' || e.ev === 'paused' || e.ev === 'error')) {
      const r = this.runEnd
      this.runEnd = null
      this.lastEnd = e
      r.resolve(e)
      return
    }
    if (this.waiting && (this.waiting.evs.includes(e.ev) || e.ev === 'error')) {
      const w = this.waiting
      this.waiting = null
      if (e.ev === 'error') w.reject(new Error(`writer: ${e.code} ${e.message}`))
      else w.resolve(e)
    }
  }

  private send (c: WriterCommand): void {
    if (this.exited) throw new Error('the writer has exited')
    this.child.send(c)
  }

  private async request<T extends WriterEvent> (c: WriterCommand, ev: T['ev']): Promise<T> {
    if (this.runEnd) throw new Error(`writer: ${c.cmd} while a run is going on`)
    const p = new Promise<WriterEvent>((resolve, reject) => { this.waiting = { evs: [ev], resolve, reject } })
    this.send(c)
    return await p as T
  }

  /** Opens the workspace and reads its tree into the model; resolves with the model's lines. */
  async open (dir: string, sealed: string[], maxBytes: number): Promise<Extract<WriterEvent, { ev: 'ready' }>> {
    return await this.request({ cmd: 'open', dir, sealed, maxBytes }, 'ready')
  }

  /** Starts a run (see WriterCommand 'run'). */
  run (o: { seed: number, mode: WriterMode, ops?: number, bytes?: number, fsync?: number }): void {
    if (this.runEnd) throw new Error('writer: a run is already going on')
    let resolve!: (e: RunEnd) => void
    const promise = new Promise<RunEnd>(r => { resolve = r })
    this.runEnd = { promise, resolve }
    this.send({ cmd: 'run', seed: o.seed, mode: o.mode, ops: o.ops ?? 0, bytes: o.bytes ?? 0, fsync: o.fsync ?? 0 })
  }

  /** Waits for the current run to end; how the last one ended when none is going on. */
  async end (): Promise<RunEnd> {
    return this.runEnd ? await this.runEnd.promise : this.lastEnd
  }

  /** Ends the current run after the op under way (nothing runs once it resolves). */
  async pause (): Promise<RunEnd> {
    if (!this.runEnd) return this.lastEnd
    const p = this.runEnd.promise
    this.send({ cmd: 'pause' })
    return await p
  }

  /** The model's lines (nothing may run). */
  async lines (): Promise<string[]> {
    return (await this.request<Extract<WriterEvent, { ev: 'lines' }>>({ cmd: 'lines' }, 'lines')).lines
  }

  /** The last ops (for a failure report). */
  async oplog (): Promise<string[]> {
    if (this.runEnd || this.exited) return []
    return (await this.request<Extract<WriterEvent, { ev: 'oplog' }>>({ cmd: 'oplog' }, 'oplog')).lines
  }

  /** Closes its directory fd. */
  async close (): Promise<void> {
    if (this.exited) return
    await this.request({ cmd: 'close' }, 'closed')
  }

  /** Ends the child process. */
  async kill (): Promise<void> {
    if (this.exited) return
    this.child.kill('SIGKILL')
    await new Promise(resolve => this.exited ? resolve(null) : this.child.once('exit', resolve))
  }
}
