/**
 * The benchmark report: from one run's raw results (BenchResults, also
 * written as JSON) a Markdown report and its SVG charts (session time per
 * mode, per-step ratios to native, checkpoint and restore latency against
 * workspace size). bench/run.ts writes them to bench/results/.
 */
import fs from 'node:fs'
import path from 'node:path'
import { median, summarize } from '../helpers/stats.js'
import { describeMachine, type MachineInfo, type LoadSample } from '../helpers/machine.js'
import type { SessionResult } from '../session/run.js'
import type { CheckpointResult } from '../checkpoint/run.js'
import type { HifreqResult } from '../hifreq.js'
import { summarizeSession, sessionTotalsTable, sessionStepsTable, sessionRatiosTable, sessionRequestsTables } from './session.js'
import { checkpointText, cellOf } from './checkpoint.js'
import { hifreqText } from '../hifreq.js'
import { barChart, categoryLineChart, logLogChart, type Series } from './svg.js'

/** Everything one `npm run bench` measured, with where and when. */
export interface BenchResults {
  /** format of this file */
  version: 1
  /** full: the committed figures; quick: one round of a subset; smoke: tiny inputs, only checks that every benchmark works */
  mode: 'quick' | 'full' | 'smoke'
  /** ISO times */
  started: string
  finished: string
  machine: MachineInfo
  /** load average every 5 s during the run */
  load: LoadSample[]
  session?: SessionResult
  checkpoint?: CheckpointResult
  hifreq?: HifreqResult
  /** said at the top of the report (e.g. that the run was stopped early and has fewer rounds) */
  note?: string
}

/**
 * One result from the results of runs of different parts made on one
 * machine (e.g. `--only session` beside `--only hifreq,checkpoint`): each
 * part from the run that has it, the load samples of all of them in time
 * order, the earliest start and the latest finish, the first run's machine
 * description and form, and a note naming the runs. Throws an Error when
 * two runs hold the same part or the runs' forms (full, quick, smoke) differ.
 */
export function mergeResults (rs: readonly BenchResults[]): BenchResults {
  if (rs.length === 0) throw new Error('mergeResults: no results to merge')
  if (new Set(rs.map(r => r.mode)).size > 1) throw new Error(`mergeResults: the runs are of different forms (${rs.map(r => r.mode).join(', ')}); merge runs of one form only`)
  const out: BenchResults = {
    version: 1, mode: rs[0].mode, machine: rs[0].machine,
    started: rs.map(r => r.started).sort()[0],
    finished: rs.map(r => r.finished).sort().slice(-1)[0],
    load: rs.flatMap(r => r.load).sort((a, b) => a.t - b.t)
  }
  for (const part of ['session', 'hifreq', 'checkpoint'] as const) {
    const has = rs.filter(r => r[part] !== undefined)
    if (has.length > 1) throw new Error(`mergeResults: ${has.length} runs hold the ${part} part; give each part once`)
    if (has.length === 1) (out as unknown as Record<string, unknown>)[part] = has[0][part]
  }
  const partsOf = (r: BenchResults): string => (['session', 'hifreq', 'checkpoint'] as const).filter(p => r[p] !== undefined).join(' + ')
  out.note = `merged from ${rs.length} runs that ran side by side on this machine: ` +
    rs.map(r => `${partsOf(r)} (${r.started.slice(11, 16)}–${r.finished.slice(11, 16)} UTC${r.note ? '; ' + r.note : ''})`).join(', ')
  return out
}

/** The chart files of a report: file name -> SVG text. */
export type Charts = Record<string, string>

/** The charts of `r` (only those whose data the run has). */
export function charts (r: BenchResults): Charts {
  const out: Charts = {}
  if (r.session) {
    const sums = summarizeSession(r.session).filter(s => !s.skipped && s.okRounds > 0)
    out['session-total.svg'] = barChart(`Session wall time per mode (${r.session.steps.length} steps, median of ${r.session.rounds.length} round(s), IQR whisker)`, 'seconds',
      sums.map(s => ({ series: s.name, value: s.total.median, lo: s.total.q1, hi: s.total.q3 })))
    const native = sums.find(s => s.name === 'native')
    if (native) {
      const cats = r.session.steps.map((st, i) => `${i + 1} ${st.name}`)
      const series: Series[] = sums.filter(s => s.name !== 'native').map(s => ({ name: s.name, points: cats.map((c, i) => ({ x: c, y: s.steps[i].median / native.steps[i].median })) }))
      out['session-steps.svg'] = categoryLineChart('Per-step time relative to native (median / native median, log scale)', 'x native', cats, series)
    }
  }
  if (r.checkpoint) {
    const c = r.checkpoint
    const peers = c.peers.filter(p => !p.skipped).map(p => p.name)
    const changed = c.changed.includes(10) ? 10 : c.changed[0]
    const pick = (kind: 'ckptMs' | 'restoreMs'): Series[] => peers.map(p => ({
      name: p, points: c.sizes.map(n => ({ x: n, y: median(cellOf(c, p, n, changed)?.[kind] ?? []) }))
    }))
    out['checkpoint-latency.svg'] = logLogChart(`Checkpoint latency against workspace size (${changed} changed files, median)`, 'files in the workspace', 'ms', pick('ckptMs'))
    out['restore-latency.svg'] = logLogChart(`Restore latency against workspace size (${changed} changed files, median)`, 'files in the workspace', 'ms', pick('restoreMs'))
  }
  return out
}

/** The load average during the run: min / median / max of the 1-minute figure. */
export function loadLine (load: LoadSample[]): string {
  const s = summarize(load.map(l => l.load1))
  return s.n === 0 ? 'load average: not sampled' : `load average (1 min) during the run: min ${s.min.toFixed(1)}, median ${s.median.toFixed(1)}, max ${s.max.toFixed(1)} (${load.length} samples, every 5 s)`
}

/** The headline table (session totals) for the README, with date and machine. */
export function headline (r: BenchResults): string {
  if (!r.session) return ''
  return `Measured ${r.started.slice(0, 16).replace('T', ' ')} UTC on ${describeMachine(r.machine)}; ${loadLine(r.load)}.\n\n` +
    sessionTotalsTable(summarizeSession(r.session))
}

/** The Markdown report of `r`, linking the charts by file name. */
export function markdown (r: BenchResults, chartFiles: string[]): string {
  const parts: string[] = []
  parts.push(`# rewindfs benchmarks: ${r.mode} run of ${r.started.slice(0, 10)}`)
  parts.push(`Started ${r.started}, finished ${r.finished}.\n\nMachine: ${describeMachine(r.machine)}.\n\n${loadLine(r.load)}. ` +
    'The machine is shared with other sessions: a load average above its core count means the figures include waiting for a CPU; ' +
    'read them as ratios within this run (every mode ran in every round, the order rotated), not as absolute speeds.' +
    (r.mode === 'quick' ? '\n\n**QUICK run: one round of a subset; the figures are indicative only.**' : '') +
    (r.mode === 'smoke' ? '\n\n**SMOKE run: tiny inputs that check every benchmark works end to end; the figures mean nothing.**' : '') +
    (r.note ? `\n\n**Note: ${r.note}**` : ''))
  if (r.session) {
    const s = r.session
    const sums = summarizeSession(s)
    parts.push('## The agent session (bench/session.ts)')
    parts.push(`${s.steps.length} steps on this repository (source ${s.source.commit.slice(0, 12)}), ${s.rounds.length} round(s), the modes' order rotated each round. ` +
      (Number.isFinite(s.prime.ms)
        ? `The npm cache was primed once before the rounds ("${s.prime.name}": \`${s.prime.cmd}\`, ${(s.prime.ms / 1000).toFixed(1)} s); every \`npm ci\` of the session runs \`--offline\`.`
        : `The npm cache was not primed ("${s.prime.name}" not run: these steps run no npm).`))
    if (chartFiles.includes('session-total.svg')) parts.push('![session time per mode](session-total.svg)')
    parts.push(sessionTotalsTable(sums))
    const failed = sums.filter(m => m.errors.length > 0)
    if (failed.length) parts.push('Failed rounds:\n\n' + failed.map(m => `- ${m.name}: ${m.errors.join('; ')}`).join('\n'))
    parts.push('### Per step (median s, ± half the IQR)')
    parts.push(sessionStepsTable(s, sums))
    if (chartFiles.includes('session-steps.svg')) parts.push('![per-step ratios](session-steps.svg)')
    parts.push('### Per step, ratio to native')
    parts.push(sessionRatiosTable(s, sums))
    const req = sessionRequestsTables(s, sums)
    if (req) { parts.push('### Where rewindfs\'s time goes: FUSE requests per step'); parts.push(req) }
    parts.push('### Steps\n\n' + s.steps.map((st, i) => `${i + 1}. ${st.name}: \`${st.cmd.replace(/\n/g, ' ').slice(0, 200)}\``).join('\n'))
  }
  if (r.hifreq) {
    parts.push('## High-frequency marks (bench/hifreq.ts)')
    parts.push(hifreqText(r.hifreq))
  }
  if (r.checkpoint) {
    parts.push('## Checkpoint and restore against the peers (bench/checkpoint.ts)')
    for (const f of ['checkpoint-latency.svg', 'restore-latency.svg']) if (chartFiles.includes(f)) parts.push(`![${f.replace('.svg', '')}](${f})`)
    parts.push(checkpointText(r.checkpoint))
  }
  return parts.join('\n\n') + '\n'
}

/**
 * Writes `r` to `dir`: `<prefix>.json` (every raw sample), `report.md` and
 * the charts; returns the paths written.
 */
export function writeReport (dir: string, r: BenchResults, prefix: string): string[] {
  fs.mkdirSync(dir, { recursive: true })
  const written: string[] = []
  const json = path.join(dir, `${prefix}.json`)
  fs.writeFileSync(json, JSON.stringify(r, null, 1) + '\n'); written.push(json)
  const cs = charts(r)
  for (const [f, svg] of Object.entries(cs)) { fs.writeFileSync(path.join(dir, f), svg); written.push(path.join(dir, f)) }
  const md = path.join(dir, 'report.md')
  fs.writeFileSync(md, markdown(r, Object.keys(cs))); written.push(md)
  return written
}
