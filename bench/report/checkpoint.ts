/**
 * Tables of a checkpoint benchmark's raw result (bench/checkpoint/run.ts):
 * per size, each peer's median checkpoint and restore time for each count of
 * changed files (± half the IQR), the restore verdicts, and rewindfs's time
 * inside the daemon and resident memory.
 */
import { summarize, median } from '../helpers/stats.js'
import { fmt, table } from '../lib.js'
import type { CheckpointResult, CheckpointCell } from '../checkpoint/run.js'

/** The cell of `peer` at `files` and `changed`, if measured. */
export function cellOf (r: CheckpointResult, peer: string, files: number, changed: number): CheckpointCell | undefined {
  return r.cells.find(c => c.peer === peer && c.files === files && c.changed === changed)
}

const ms = (xs: number[]): string => {
  const s = summarize(xs)
  return s.n === 0 ? '–' : s.n === 1 ? fmt(s.median) : `${fmt(s.median)} ±${fmt(s.iqr / 2)}`
}

/** One table per size: rows are peers, columns checkpoint / restore ms per count of changed files. */
export function checkpointTables (r: CheckpointResult): string {
  const peers = r.peers.filter(p => !p.skipped).map(p => p.name)
  const out: string[] = []
  for (const n of r.sizes) {
    const cs = r.changed.filter(c => c <= n)
    const rows = peers.map(p => [p, r.correctness[p]?.verdict ?? '(not judged)', ...cs.flatMap(c => {
      const cell = cellOf(r, p, n, c)
      return cell ? [ms(cell.ckptMs), ms(cell.restoreMs)] : ['–', '–']
    })])
    out.push(`${n.toLocaleString('en-US')} files (${r.reps[String(n)]} repetitions; ms, median ± half the IQR; wall clock at the caller)\n\n` +
      table(['peer', 'restore', ...cs.flatMap(c => [`ckpt, ${c} changed`, `restore, ${c} changed`])], rows))
  }
  return out.join('\n\n')
}

/** The peers and their restore verdicts (independent manifest comparison), skipped peers with their reason. */
export function correctnessTable (r: CheckpointResult): string {
  return table(['peer', 'how', 'restore judged by manifest'], r.peers.map(p => [p.name, p.label, p.skipped ? `skipped: ${p.skipped}` : (r.correctness[p.name]?.verdict ?? '(not judged)')]))
}

/** rewindfs detail: time inside the daemon per size (10 changed files, or the nearest) and resident memory. */
export function rewindDetailTable (r: CheckpointResult): string {
  const rows = r.sizes.map(n => {
    const cells = r.cells.filter(c => c.peer === 'rewindfs' && c.files === n)
    const inside = (pick: (c: CheckpointCell) => number[] | undefined): string => cells.map(c => `${c.changed}: ${fmt(median(pick(c) ?? []), 2)}`).join(', ')
    const rss = r.rss[String(n)]
    return [n.toLocaleString('en-US'), inside(c => c.insideCkptMs), inside(c => c.insideRestoreMs),
      rss ? `${fmt(rss.afterBase / 2 ** 20)} / ${fmt(rss.afterReps / 2 ** 20)}` : '–', String(cells.reduce((a, c) => a + c.missed, 0))]
  })
  return table(['files', 'daemon mark ms (changed: ms)', 'daemon restore ms (changed: ms)', 'daemon RSS MiB (after base / after reps)', 'missed restores'], rows)
}

/** Every checkpoint table, with the errors of failed peers. */
export function checkpointText (r: CheckpointResult): string {
  return [
    'Checkpoint / restore peers and whether their restore is correct\n', correctnessTable(r), '',
    checkpointTables(r), '',
    'rewindfs inside the daemon (reply .ms) and its resident memory\n', rewindDetailTable(r),
    ...(r.errors.length ? ['', 'Failures:', ...r.errors.map(e => `- ${e}`)] : [])
  ].join('\n')
}
