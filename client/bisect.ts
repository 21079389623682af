/**
 * Localisation (issue 16): the first checkpoint on a lineage at which a
 * check fails, by binary search (as git bisect does), and the check itself
 * run in a scratch export of a checkpoint, never in the live workspace.
 */
import os from 'node:os'
import path from 'node:path'
import { promises as fs } from 'node:fs'
import { spawn } from 'node:child_process'
import type { RewindClient } from './client.js'
import type { CheckpointId, CheckpointInfo } from '../proto/messages.js'

/** Outcome of one probe: `fails` true when the check failed at that checkpoint. */
export interface Probe { checkpoint: CheckpointId, fails: boolean, exitStatus: number, ms: number }

/** Result of bisect: the first failing checkpoint, its parent (the last passing one) and every probe in order. */
export interface BisectResult { firstBad: CheckpointId, lastGood: CheckpointId, probes: Probe[] }

/**
 * The checkpoints from `good` to `bad` following parent links back from
 * `bad` (oldest first, both included), from a `log` listing. Throws Error
 * when `good` is not an ancestor of `bad` (saying so).
 */
export function lineageBetween (log: CheckpointInfo[], good: CheckpointId, bad: CheckpointId): CheckpointId[] {
  const byId = new Map(log.map(c => [c.id, c]))
  if (!byId.has(bad)) throw new Error(`no checkpoint ${bad} (see rewindfs log)`)
  if (!byId.has(good)) throw new Error(`no checkpoint ${good} (see rewindfs log)`)
  const out: CheckpointId[] = []
  for (let id: CheckpointId | null = bad; id !== null; id = byId.get(id)?.parent ?? null) {
    out.push(id)
    if (id === good) return out.reverse()
    if (out.length > log.length) break
  }
  throw new Error(`checkpoint ${good} is not an ancestor of ${bad}: bisect searches the lineage that leads to the bad checkpoint (rewindfs log shows each checkpoint's branch)`)
}

/**
 * Binary search over `line` (oldest first): `line[0]` passes, the last
 * fails (both are probed first, and an Error says so when they do not);
 * returns the first failing checkpoint after 2 + ceil(log2(n)) probes at
 * most. The check is assumed monotone (passes, then fails); where it is
 * not, the result is one failing checkpoint whose parent passes.
 */
export async function bisect (line: CheckpointId[], check: (id: CheckpointId) => Promise<Probe>): Promise<BisectResult> {
  if (line.length < 2) throw new Error('bisect needs a good checkpoint older than the bad one')
  const probes: Probe[] = []
  const run = async (i: number): Promise<boolean> => { const p = await check(line[i]); probes.push(p); return p.fails }
  if (await run(line.length - 1) === false) throw new Error(`the check passes at the bad checkpoint ${line[line.length - 1]}: nothing to search for`)
  if (await run(0)) throw new Error(`the check already fails at the good checkpoint ${line[0]}: choose an older --good`)
  let lo = 0; let hi = line.length - 1
  while (hi - lo > 1) {
    const mid = (lo + hi) >>> 1
    if (await run(mid)) hi = mid
    else lo = mid
  }
  return { firstBad: line[hi], lastGood: line[lo], probes }
}

/**
 * Runs `cmd` (argv, no shell) in a scratch export of checkpoint `id`: a new
 * directory under os.tmpdir(), written by the daemon's export and removed
 * afterwards; the live workspace is never touched. Exit status 0 passes.
 * `quiet` discards the command's output (else it goes to stderr).
 * `timeoutMs` (default: none): the command is killed (SIGKILL) after that
 * long and the probe fails with exit status 137.
 */
export async function probeInExport (client: Pick<RewindClient, 'export'>, id: CheckpointId, cmd: string[], quiet = false, timeoutMs?: number): Promise<Probe> {
  const t0 = performance.now()
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), `rewindfs-bisect-${id}-`))
  try {
    await client.export({ id, dir })
    const child = spawn(cmd[0], cmd.slice(1), { cwd: dir, stdio: ['ignore', quiet ? 'ignore' : process.stderr, quiet ? 'ignore' : process.stderr] })
    const timer = timeoutMs === undefined ? null : setTimeout(() => child.kill('SIGKILL'), timeoutMs)
    const code = await new Promise<number>((resolve, reject) => {
      child.on('error', (e: NodeJS.ErrnoException) => reject(new Error(`cannot run ${cmd[0]}: ${e.code === 'ENOENT' ? 'command not found' : e.message}`)))
      child.on('exit', (c, sig) => resolve(c ?? (sig ? 128 + (os.constants.signals[sig] ?? 0) : 1)))
    }).finally(() => { if (timer !== null) clearTimeout(timer) })
    return { checkpoint: id, fails: code !== 0, exitStatus: code, ms: performance.now() - t0 }
  } finally {
    await fs.rm(dir, { recursive: true, force: true })
  }
}
