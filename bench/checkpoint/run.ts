/**
 * The checkpoint benchmark's runner (bench/checkpoint.ts is its command
 * line): for each size and peer, a fresh populated tree (bench/checkpoint/
 * tree.ts), the base checkpoint, then for each count of changed files
 * `reps` times: change, checkpoint (timed), restore to the base (timed).
 * Sizes run in the order given (the result lists them ascending). The first
 * restore of each peer at the smallest size is judged against the
 * base's independent manifest (scripts/manifest.sh); every restore is
 * checked for the changed files. Raw samples only; summaries are made by
 * bench/report/checkpoint.ts.
 */
import { Cleanup, now } from '../lib.js'
import { manifest } from '../../scripts/manifest.js'
import { checkRestore, verdict, type RestoreCheck } from '../helpers/compare.js'
import { type Peer } from './peers.js'
import { change, notRestored, GITIGNORE } from './tree.js'

/** Samples of one peer at one size and one count of changed files. */
export interface CheckpointCell {
  peer: string
  files: number
  changed: number
  /** checkpoint wall time at the caller, ms */
  ckptMs: number[]
  /** restore wall time at the caller, ms */
  restoreMs: number[]
  /** rewindfs: time inside the daemon (reply .ms) */
  insideCkptMs?: number[]
  insideRestoreMs?: number[]
  /** restores that left a changed file changed */
  missed: number
}

/** Everything the checkpoint benchmark measured. */
export interface CheckpointResult {
  kind: 'checkpoint'
  sizes: number[]
  changed: number[]
  reps: Record<string, number>
  peers: Array<{ name: string, label: string, skipped?: string }>
  cells: CheckpointCell[]
  /** verdict of each peer's first restore (manifest comparison), at the smallest size */
  correctness: Record<string, { verdict: string, check: RestoreCheck }>
  /** rewindfs daemon resident memory after the base checkpoint and after all repetitions, bytes, by size */
  rss: Record<string, { afterBase: number, afterReps: number }>
  /** per peer and size: populate + base checkpoint ms, and the errors of the peers that failed */
  setupMs: Record<string, Record<string, number>>
  errors: string[]
}

/** Options of runCheckpoint. */
export interface CheckpointOptions {
  peers: Peer[]
  sizes: number[]
  changed: number[]
  /** repetitions per (size, changed); a function of the size */
  reps: (files: number) => number
  cleanup: Cleanup
  log: (line: string) => void
  /** called with the result so far after every cell and every failed peer (bench/run.ts saves it) */
  onProgress?: (soFar: CheckpointResult) => void
}

/** Runs the benchmark; a peer that fails at a size has the error recorded and the run goes on. */
export async function runCheckpoint (o: CheckpointOptions): Promise<CheckpointResult> {
  const res: CheckpointResult = { kind: 'checkpoint', sizes: [...o.sizes].sort((a, b) => a - b), changed: o.changed, reps: {}, peers: [], cells: [], correctness: {}, rss: {}, setupMs: {}, errors: [] }
  const ready: Peer[] = []
  for (const p of o.peers) {
    const why = await p.prepare()
    res.peers.push({ name: p.name, label: p.label, ...(why ? { skipped: why } : {}) })
    if (why) o.log(`note: checkpoint peer ${p.name} skipped: ${why}`)
    else ready.push(p)
  }
  for (const n of o.sizes) {
    const reps = o.reps(n)
    res.reps[String(n)] = reps
    for (const p of ready) {
      const t0 = now()
      let tree = null
      try {
        tree = await p.tree(n)
        await tree.base()
        ;(res.setupMs[p.name] ??= {})[String(n)] = now() - t0
        if (tree.rss) res.rss[String(n)] = { afterBase: tree.rss(), afterReps: NaN }
        const judge = n === Math.min(...o.sizes)
        const baseLines = judge ? (await manifest(tree.dir)).lines : []
        for (const c of o.changed.filter(c => c <= n)) {
          const cell: CheckpointCell = { peer: p.name, files: n, changed: c, ckptMs: [], restoreMs: [], missed: 0, ...(tree.inside ? { insideCkptMs: [], insideRestoreMs: [] } : {}) }
          for (let r = 0; r < reps; r++) {
            const set = change(tree.dir, n, c, r)
            let t = now()
            await tree.checkpoint()
            cell.ckptMs.push(now() - t)
            t = now()
            await tree.restore()
            cell.restoreMs.push(now() - t)
            if (tree.inside) { const i = tree.inside(); cell.insideCkptMs!.push(i.mark); cell.insideRestoreMs!.push(i.restore) }
            if (notRestored(tree.dir, set) !== null) cell.missed++
            if (judge && !res.correctness[p.name]) {
              const check = checkRestore(baseLines, (await manifest(tree.dir)).lines, GITIGNORE)
              res.correctness[p.name] = { verdict: verdict(check), check }
              o.log(`checkpoint: ${p.name} restore: ${verdict(check)}`)
            }
          }
          res.cells.push(cell)
          o.onProgress?.(res)
          const med = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]
          o.log(`checkpoint: ${String(n).padStart(6)} files, ${String(c).padStart(4)} changed, ${p.name.padEnd(8)} checkpoint ${med(cell.ckptMs).toFixed(1)} ms, restore ${med(cell.restoreMs).toFixed(1)} ms`)
        }
        if (tree.rss) res.rss[String(n)].afterReps = tree.rss()
      } catch (e) {
        const msg = `${p.name} at ${n} files: ${(e as Error).message.split('\n').slice(0, 3).join(' ')}`
        res.errors.push(msg)
        o.log(`checkpoint: FAILED ${msg}`)
        o.onProgress?.(res)
      } finally {
        if (tree) await tree.close()
      }
    }
  }
  return res
}
