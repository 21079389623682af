/**
 * Runs a restore's announcement (fs/history/announce.ts): starts the helper
 * process (dist/daemon/rewindfs-announce, built from rewindfs-announce.c by
 * scripts/setup.sh), routes its requests to the announcement while it runs
 * (WorkspaceMount.announceWith), writes it the steps and waits for it. The
 * daemon itself never touches its own mount: only the helper does.
 *
 * Cost: one process start (about 1 ms) plus one to three FUSE requests per
 * changed path, answered from memory.
 */
import fs from 'node:fs'
import { spawn } from 'node:child_process'
import { nameBuffer } from '../base/names.js'

const NUL = Buffer.from([0])
import { fileURLToPath } from 'node:url'
import type { Announcement, AnnounceStep } from '../fs/history/announce.js'
import type { RestoreAnnouncer } from '../fs/api.js'

/** The helper binary beside this module in dist/daemon/. */
export const ANNOUNCE_HELPER = fileURLToPath(new URL('./rewindfs-announce', import.meta.url))

/** Longest wait for the helper, ms: a base plus a share per step (a hung helper is killed, the restore still succeeds). */
const BASE_WAIT_MS = 10000
const WAIT_PER_STEP_MS = 5

/** What an announcement did: steps sent, how many failed (the helper's stderr lines), ms taken. */
export interface AnnounceReport { steps: number, failed: number, ms: number, skipped?: string }

/** The helper's input: three NUL-terminated fields a step (rewindfs-announce.c). */
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
  // paths and symlink targets as their exact bytes (names that are not UTF-8: base/names.ts), each NUL-terminated
  return Buffer.concat(parts.flatMap(p => [nameBuffer(p), NUL]))
}

/**
 * Announces `a` through the mount at `mountpoint`. `route(a)` starts
 * routing the helper's requests to `a`, `route(null)` stops. Resolves
 * when the helper has exited (or was killed after the wait); never rejects:
 * a restore does not fail because watchers could not be told.
 */
export async function announce (a: Announcement, mountpoint: string, route: (a: RestoreAnnouncer | null) => Promise<void> | void, log: (m: string) => void): Promise<AnnounceReport> {
  const t0 = performance.now()
  if (a.steps.length === 0) return { steps: 0, failed: 0, ms: 0 }
  if (!fs.existsSync(ANNOUNCE_HELPER)) {
    return { steps: a.steps.length, failed: a.steps.length, ms: 0, skipped: `${ANNOUNCE_HELPER} is missing (run scripts/setup.sh): watchers were not told of the restore` }
  }
  // routed before the helper starts (a.pid 0: none of its requests yet), so that the mount drops the
  // negative entries that would hide a removed name from it (fuse/layer.ts announceWith)
  a.pid = 0
  await route(a)
  const child = spawn(ANNOUNCE_HELPER, [mountpoint], { stdio: ['pipe', 'ignore', 'pipe'], cwd: '/' })
  let err = ''
  child.stderr.setEncoding('utf8')
  child.stderr.on('data', (d: string) => { if (err.length < 65536) err += d })
  const exited = new Promise<number | null>(resolve => {
    child.once('exit', (code) => resolve(code))
    child.once('error', () => resolve(null))
  })
  // set before the event loop turns: the daemon answers none of the helper's requests before this
  if (child.pid !== undefined) a.pid = child.pid
  child.stdin.on('error', () => {})
  child.stdin.end(encodeSteps(a.steps))
  let timer: NodeJS.Timeout | undefined
  const timedOut = new Promise<'timeout'>(resolve => { timer = setTimeout(() => resolve('timeout'), BASE_WAIT_MS + WAIT_PER_STEP_MS * a.steps.length) })
  const r = await Promise.race([exited, timedOut])
  clearTimeout(timer)
  if (r === 'timeout') child.kill('SIGKILL')
  await exited
  a.pid = 0
  await route(null)
  const lines = err.split('\n').filter(l => l !== '')
  if (lines.length > 0) log(`rewindfs: telling watchers of the restore: ${lines.length} of ${a.steps.length} steps failed (first: ${lines[0]})`)
  if (r === 'timeout') log(`rewindfs: telling watchers of the restore took too long; the helper (pid ${child.pid ?? '?'}) was killed`)
  return { steps: a.steps.length, failed: lines.length, ms: performance.now() - t0 }
}
