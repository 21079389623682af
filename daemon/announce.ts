/**
 * Runs a restore's announcement (fs/history/announce.ts) through the helper
 * process (dist/daemon/rewindfs-announce, built from rewindfs-announce.c by
 * scripts/setup.sh): routes its requests to the announcement while it runs
 * (WorkspaceMount.announceWith), writes it the steps as one batch and waits
 * for the batch's end. The daemon itself never touches its own mount: only
 * the helper does.
 *
 * The helper is started at the first restore and kept (AnnounceHelper): a
 * process start per restore cost more than the rest of a selective restore
 * of one file (bench/README.md "history.ts"), and more the larger the
 * daemon (a fork of a larger process). Between batches it holds nothing of
 * the mount; it ends with the daemon (its input closes; PR_SET_PDEATHSIG).
 *
 * Cost: one pipe write and read plus one to three FUSE requests per changed
 * path, answered from memory.
 */
import fs from 'node:fs'
import { spawn, type ChildProcess } from 'node:child_process'
import { nameBuffer } from '../base/names.js'

const NUL = Buffer.from([0])
import { fileURLToPath } from 'node:url'
import type { Announcement, AnnounceStep } from '../fs/history/announce.js'
import type { RestoreAnnouncer } from '../fs/api.js'

/** The helper binary beside this module in dist/daemon/. */
export const ANNOUNCE_HELPER = fileURLToPath(new URL('./rewindfs-announce', import.meta.url))

/** Longest wait for a batch, ms: a base plus a share per step (a hung helper is killed, the restore still succeeds, the next restore starts another). */
const BASE_WAIT_MS = 10000
const WAIT_PER_STEP_MS = 5

/** What an announcement did: steps sent, how many failed (as the helper counted them), ms taken; `skipped` says why none was made. */
export interface AnnounceReport { steps: number, failed: number, ms: number, skipped?: string }

/** The helper's input for a batch: three NUL-terminated fields a step (rewindfs-announce.c), then the end step ('.'). */
export function encodeSteps (steps: AnnounceStep[]): Buffer {
  const parts: string[] = []
  for (const s of steps) {
    let op: string; let arg = ''
    switch (s.op) {
      case 'unlink': op = 'u'; break
      case 'rmdir': op = 'r'; break
      case 'mkdir': op = 'd'; arg = s.mode.toString(8); break
      case 'mknod': op = 'n'; arg = `${s.mode.toString(8)} ${s.rdev}`; break
      case 'symlink': op = 'l'; arg = s.target; break
      case 'modify': op = 'm'; break
      case 'attrib': op = 'a'; break
    }
    parts.push(op, s.path, arg)
  }
  parts.push('.', '', '')
  // paths and symlink targets as their exact bytes (names that are not UTF-8: base/names.ts), each NUL-terminated
  return Buffer.concat(parts.flatMap(p => [nameBuffer(p), NUL]))
}

/** What one batch came to: the helper's failure lines and its count, or why it has none. */
export interface BatchResult { failed: number, lines: string[], outcome: 'done' | 'timeout' | 'exited' }

/**
 * The long-lived helper of one mount: started by the first `run`, kept for
 * the next, started again after it died or was killed for a timeout.
 * One batch at a time (restores are serialised by the daemon).
 */
export class AnnounceHelper {
  private child: ChildProcess | null = null
  /** stdout bytes not yet split into records */
  private pending = Buffer.alloc(0)
  private lines: string[] = []
  private waiter: ((r: BatchResult) => void) | null = null
  /** processes started so far (tests read it: one for many restores) */
  starts = 0

  constructor (private readonly mountpoint: string) {}

  /** The helper's pid, starting it if none runs; 0 when it cannot start (spawn failed). */
  ensure (): number {
    if (this.child !== null && this.child.exitCode === null && this.child.signalCode === null) return this.child.pid ?? 0
    this.pending = Buffer.alloc(0); this.lines = []
    const child = spawn(ANNOUNCE_HELPER, [this.mountpoint], { stdio: ['pipe', 'pipe', 'pipe'], cwd: '/' })
    this.starts++
    this.child = child
    child.stdin!.on('error', () => {})
    child.stderr!.resume() // usage errors only; the records come on stdout
    child.stdout!.on('data', (d: Buffer) => { if (this.child === child) this.take(d) })
    const gone = (): void => {
      if (this.child !== child) return
      this.child = null
      this.settle({ failed: this.lines.length, lines: this.lines, outcome: 'exited' })
    }
    child.once('exit', gone)
    child.once('error', gone)
    return child.pid ?? 0
  }

  /** Sends `batch` (encodeSteps) and resolves with its result; kills the helper after `timeoutMs`. Never rejects. */
  async run (batch: Buffer, timeoutMs: number): Promise<BatchResult> {
    const child = this.child
    if (child === null) return { failed: 0, lines: ['the helper is not running'], outcome: 'exited' }
    this.lines = []
    const done = new Promise<BatchResult>(resolve => { this.waiter = resolve })
    child.stdin!.write(batch)
    let timer: NodeJS.Timeout | undefined
    const timedOut = new Promise<BatchResult>(resolve => {
      timer = setTimeout(() => resolve({ failed: this.lines.length, lines: this.lines, outcome: 'timeout' }), timeoutMs)
    })
    const r = await Promise.race([done, timedOut])
    clearTimeout(timer)
    this.waiter = null
    if (r.outcome === 'timeout') this.kill()
    return r
  }

  /** Ends the helper (its input closes; SIGKILL if it is stuck in a call). Safe to call twice. */
  close (): void {
    const child = this.child
    if (child === null) return
    child.stdin!.end()
    const t = setTimeout(() => { child.kill('SIGKILL') }, 1000)
    t.unref()
    child.once('exit', () => { clearTimeout(t) })
  }

  private kill (): void {
    const child = this.child
    this.child = null
    child?.kill('SIGKILL')
  }

  private settle (r: BatchResult): void {
    const w = this.waiter
    this.waiter = null
    w?.(r)
  }

  /** Splits stdout into NUL-terminated records: "! OP PATH: error" lines, "= N" ends the batch. */
  private take (d: Buffer): void {
    let buf = this.pending.length > 0 ? Buffer.concat([this.pending, d]) : d
    for (let z = buf.indexOf(0); z >= 0; z = buf.indexOf(0)) {
      const rec = buf.subarray(0, z).toString('utf8')
      buf = buf.subarray(z + 1)
      if (rec.startsWith('= ')) this.settle({ failed: Number(rec.slice(2)), lines: this.lines, outcome: 'done' })
      else if (rec.startsWith('! ') && this.lines.length < 1000) this.lines.push(rec.slice(2))
    }
    this.pending = Buffer.from(buf)
  }
}

/**
 * Announces `a` through `helper`'s mount. `route(a)` starts routing the
 * helper's requests to `a` (a.pid: the helper's; the mount first drops the
 * negative entries that would hide a removed name from it), `route(null)`
 * stops. Resolves when the helper has done the batch (or was killed after
 * the wait); never rejects: a restore does not fail because watchers could
 * not be told.
 */
export async function announce (a: Announcement, helper: AnnounceHelper, route: (a: RestoreAnnouncer | null) => Promise<void> | void, log: (m: string) => void): Promise<AnnounceReport> {
  const t0 = performance.now()
  if (a.steps.length === 0) return { steps: 0, failed: 0, ms: 0 }
  if (!fs.existsSync(ANNOUNCE_HELPER)) {
    return { steps: a.steps.length, failed: a.steps.length, ms: 0, skipped: `${ANNOUNCE_HELPER} is missing (run scripts/setup.sh): watchers were not told of the restore` }
  }
  a.pid = 0
  try { await route(a) } catch (e: any) { log(`rewindfs: telling watchers of the restore: dropping cached names failed: ${e?.message ?? e}`) }
  // the helper answers as the announcement only from here (its pid); it does nothing before it reads the batch
  a.pid = helper.ensure()
  let r: BatchResult
  if (a.pid === 0) r = { failed: a.steps.length, lines: ['the helper could not start'], outcome: 'exited' }
  else r = await helper.run(encodeSteps(a.steps), BASE_WAIT_MS + WAIT_PER_STEP_MS * a.steps.length)
  a.pid = 0
  await route(null)
  if (r.failed > 0 || r.lines.length > 0) log(`rewindfs: telling watchers of the restore: ${r.failed} of ${a.steps.length} steps failed (first: ${r.lines[0] ?? '?'})`)
  if (r.outcome === 'timeout') log('rewindfs: telling watchers of the restore took too long; the helper was killed (the next restore starts another)')
  if (r.outcome === 'exited') log('rewindfs: telling watchers of the restore: the helper ended before the batch did (the next restore starts another)')
  return { steps: a.steps.length, failed: r.failed, ms: performance.now() - t0 }
}
