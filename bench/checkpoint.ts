/**
 * Checkpoint/restore latency of rewindfs against its peers on the same
 * tree, in the same run (bench/checkpoint/peers.ts: git into a separate
 * GIT_DIR, btrfs snapshots on a loop image, rsync --link-dest hard-link
 * snapshots, an overlayfs layer per checkpoint, a whole-tree hash-and-copy
 * recorder), at 1,000 / 10,000 / 100,000 small files with 1, 10, 100 and
 * 1,000 files changed between checkpoints. Every peer's restore is judged
 * against an independent manifest (scripts/manifest.sh) and reported as
 * incorrect when it loses modes, empty directories, ignored files or the
 * nested .git. rewindfs's resident memory is recorded at every size.
 *
 *   node dist/bench/checkpoint.js [--quick] [--sizes 1000,10000] [--reps 5] [--peers rewindfs,git,...]
 *
 * Targets (DESIGN.md): at 100,000 files with 10 changed, checkpoint < 5 ms
 * and restore < 50 ms; printed as MET / NOT MET, never asserted.
 */
import { pathToFileURL } from 'node:url'
import { Cleanup } from './lib.js'
import { allPeers } from './checkpoint/peers.js'
import { runCheckpoint, type CheckpointResult } from './checkpoint/run.js'
import { checkpointText, cellOf } from './report/checkpoint.js'
import { median } from './helpers/stats.js'

/** Options of checkpointBench. */
export interface CheckpointBenchOptions {
  quick: boolean
  /** the smoke form: 100 files, 10 changed, 1 repetition, every peer (figures meaningless) */
  smoke?: boolean
  sizes?: number[]
  reps?: number
  peers?: string[]
  /** counts of changed files (default 1, 10, 100, 1,000; quick 1, 10, 100) */
  changed?: number[]
  log: (line: string) => void
  /** called with the result so far after every cell */
  onProgress?: (soFar: CheckpointResult) => void
}

/**
 * Full: sizes 1,000 / 10,000 / 100,000, changed 1 / 10 / 100 / 1,000, 5
 * repetitions (3 at 100,000). Quick: 1,000 files, 1 / 10 / 100 changed, 2 repetitions.
 * Smoke: 100 files, 10 changed, 1 repetition.
 */
export async function checkpointBench (cleanup: Cleanup, o: CheckpointBenchOptions): Promise<CheckpointResult> {
  const sizes = o.sizes ?? (o.smoke ? [100] : o.quick ? [1000] : [1000, 10000, 100000])
  const peers = allPeers(cleanup).filter(p => !o.peers || o.peers.includes(p.name))
  const changed = o.changed ?? (o.smoke ? [10] : o.quick ? [1, 10, 100] : [1, 10, 100, 1000])
  if (o.smoke) o.log(`checkpoint: SMOKE form: ${sizes.join(', ')} files, ${changed.join(' / ')} changed, 1 repetition; the figures mean nothing`)
  if (o.quick) o.log(`checkpoint: QUICK mode: sizes ${sizes.join(', ')}, ${changed.join(' / ')} changed, 2 repetitions`)
  return await runCheckpoint({
    peers, sizes, changed, cleanup, log: o.log, onProgress: o.onProgress,
    reps: n => o.reps ?? (o.smoke ? 1 : o.quick ? 2 : n >= 100000 ? 3 : 5)
  })
}

/** The target line for 100,000 files with 10 changed (or a note that it was not measured). */
export function targetLine (r: CheckpointResult): string {
  const c = cellOf(r, 'rewindfs', 100000, 10)
  if (!c) return 'targets (100,000 files, 10 changed): not measured in this run'
  const m = median(c.ckptMs); const rs = median(c.restoreMs)
  return `targets at 100,000 files with 10 changed: checkpoint < 5 ms: ${m < 5 ? 'MET' : 'NOT MET'} (${m.toFixed(2)} ms); restore < 50 ms: ${rs < 50 ? 'MET' : 'NOT MET'} (${rs.toFixed(2)} ms)`
}

async function main (): Promise<void> {
  const arg = (name: string): string | undefined => { const i = process.argv.indexOf(name); return i > 0 ? process.argv[i + 1] : undefined }
  const list = (v: string | undefined): number[] | undefined => v?.split(',').map(Number)
  const sizes = list(arg('--sizes'))
  if (sizes && !sizes.every(n => Number.isInteger(n) && n > 0)) throw new Error('--sizes must be positive integers, comma-separated (e.g. 1000,10000)')
  const reps = arg('--reps') ? Number(arg('--reps')) : undefined
  if (reps !== undefined && !(Number.isInteger(reps) && reps > 0)) throw new Error('--reps must be a positive integer')
  const cleanup = new Cleanup()
  try {
    const r = await checkpointBench(cleanup, { quick: process.argv.includes('--quick'), sizes, reps, peers: arg('--peers')?.split(','), log: l => console.log(l) })
    console.log('\n' + checkpointText(r) + '\n\n' + targetLine(r))
  } finally { await cleanup.run() }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main().catch(e => { console.error(e instanceof Error ? e.message : e); process.exitCode = 1 })
}
