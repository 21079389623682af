/**
 * Summaries and Markdown tables of a session benchmark's raw result
 * (bench/session/run.ts SessionResult): per mode the session's total over
 * the rounds (median and interquartile range), its ratio to native, the
 * checkpoints' share, per-step medians and ratios, and the FUSE requests per
 * opcode per step of the modes that report them.
 */
import { summarize, median, type Summary } from '../helpers/stats.js'
import { fmt, table } from '../lib.js'
import type { SessionResult } from '../session/run.js'

/** One mode's summary over the rounds that completed. */
export interface ModeSummary {
  name: string
  label: string
  skipped?: string
  /** rounds that ran every step */
  okRounds: number
  /** errors of the rounds that did not */
  errors: string[]
  /** session wall time (steps + checkpoints), s */
  total: Summary
  /** checkpoints only, s */
  checkpoints: Summary
  /** median over rounds of checkpoints / total (0..1); NaN without checkpoints */
  ckptShare: number
  /** median total / native's median total; NaN without a native run */
  ratio: number
  /** per step, s */
  steps: Summary[]
  /** per step, median over rounds of the requests per opcode (absent when not reported) */
  requests?: Array<Record<string, number>>
  /** per step, median over rounds of the daemon's CPU time, ms (absent when not reported) */
  daemonCpuMs?: number[]
}

const sum = (xs: number[]): number => xs.reduce((a, b) => a + b, 0)

/** Summarises every mode of `r` (complete rounds only; a mode with none has n = 0 summaries). */
export function summarizeSession (r: SessionResult): ModeSummary[] {
  const out: ModeSummary[] = []
  for (const m of r.modes) {
    const runs = r.rounds.map(x => x.runs[m.name]).filter(x => x !== undefined)
    const ok = runs.filter(x => !x.error && x.stepMs.length === r.steps.length)
    const totals = ok.map(x => (sum(x.stepMs) + sum(x.ckptMs)) / 1000)
    const ckpts = ok.map(x => sum(x.ckptMs) / 1000)
    const shares = ok.filter(x => x.ckptMs.length > 0).map(x => sum(x.ckptMs) / (sum(x.stepMs) + sum(x.ckptMs)))
    const steps = r.steps.map((_, i) => summarize(ok.map(x => x.stepMs[i] / 1000)))
    let requests: Array<Record<string, number>> | undefined
    const withReq = ok.filter(x => x.requests && x.requests.length === r.steps.length)
    if (withReq.length > 0) {
      requests = r.steps.map((_, i) => {
        const ops = new Set(withReq.flatMap(x => Object.keys(x.requests![i])))
        const o: Record<string, number> = {}
        for (const op of ops) o[op] = median(withReq.map(x => x.requests![i][op] ?? 0))
        return o
      })
    }
    const withCpu = ok.filter(x => x.daemonCpuMs && x.daemonCpuMs.length === r.steps.length)
    const daemonCpuMs = withCpu.length > 0 ? r.steps.map((_, i) => median(withCpu.map(x => x.daemonCpuMs![i]))) : undefined
    out.push({
      name: m.name, label: m.label, ...(m.skipped ? { skipped: m.skipped } : {}),
      okRounds: ok.length,
      errors: runs.filter(x => x.error).map(x => x.error!),
      total: summarize(totals), checkpoints: summarize(ckpts),
      ckptShare: shares.length > 0 ? median(shares) : NaN,
      ratio: NaN, steps, ...(requests ? { requests } : {}), ...(daemonCpuMs ? { daemonCpuMs } : {})
    })
  }
  const native = out.find(s => s.name === 'native')
  for (const s of out) s.ratio = native && native.total.n > 0 ? s.total.median / native.total.median : NaN
  return out
}

const pct = (x: number): string => Number.isFinite(x) ? `${(x * 100).toFixed(1)}%` : '–'
const cell = (s: Summary): string => s.n === 0 ? '–' : s.n === 1 ? fmt(s.median) : `${fmt(s.median)} ±${fmt(s.iqr / 2)}`

/** The headline table: one row per mode (skipped modes say why). */
export function sessionTotalsTable (sums: ModeSummary[]): string {
  return table(['how the workspace is kept', 'session s (median)', 'IQR s', 'x native', 'checkpoints s', 'checkpoints share', 'rounds'],
    sums.map(s => s.skipped
      ? [s.name, `skipped: ${s.skipped}`, '', '', '', '', '0']
      : [`${s.name}: ${s.label}`, fmt(s.total.median), s.total.n > 1 ? fmt(s.total.iqr) : '–', fmt(s.ratio), s.checkpoints.n > 0 && s.checkpoints.median > 0 ? fmt(s.checkpoints.median) : '–', pct(s.ckptShare), `${s.okRounds}${s.errors.length ? ` (+${s.errors.length} failed)` : ''}`]))
}

/** Per-step medians (s, ±half the IQR) for every mode that ran. */
export function sessionStepsTable (r: SessionResult, sums: ModeSummary[]): string {
  const ran = sums.filter(s => !s.skipped && s.okRounds > 0)
  return table(['#', 'step', ...ran.map(s => s.name)], r.steps.map((st, i) => [String(i + 1), st.name, ...ran.map(s => cell(s.steps[i]))]))
}

/** Per-step ratio of each mode's median to native's. */
export function sessionRatiosTable (r: SessionResult, sums: ModeSummary[]): string {
  const native = sums.find(s => s.name === 'native')
  const ran = sums.filter(s => !s.skipped && s.okRounds > 0 && s.name !== 'native')
  if (!native || native.okRounds === 0) return '(no native run: no ratios)'
  return table(['#', 'step', 'native s', ...ran.map(s => `${s.name} x`)], r.steps.map((st, i) => [String(i + 1), st.name, fmt(native.steps[i].median), ...ran.map(s => fmt(s.steps[i].median / native.steps[i].median))]))
}

/** For each mode reporting FUSE requests: per step the total and the opcodes by count. */
export function sessionRequestsTables (r: SessionResult, sums: ModeSummary[]): string {
  const parts: string[] = []
  for (const s of sums) {
    if (!s.requests) continue
    const rows = r.steps.map((st, i) => {
      const req = s.requests![i]
      const total = sum(Object.values(req))
      const ops = Object.entries(req).sort((a, b) => b[1] - a[1]).map(([op, n]) => `${op} ${n}`).join(', ')
      const us = total > 0 ? fmt(s.steps[i].median * 1e6 / total) : '–'
      const cpu = s.daemonCpuMs ? fmt(s.daemonCpuMs[i]) : '–'
      return [String(i + 1), st.name, String(total), us, cpu, ops || '–']
    })
    if (s.daemonCpuMs) rows.push(['', 'all steps', String(sum(s.requests.map(q => sum(Object.values(q))))), '', fmt(sum(s.daemonCpuMs)), ''])
    parts.push(`FUSE requests per step, ${s.name} (median over rounds; µs/request = step time / requests; daemon CPU = its user + system time, ms, which other load on the machine barely moves)\n\n` +
      table(['#', 'step', 'requests', 'µs/request', 'daemon CPU ms', 'by opcode'], rows))
  }
  return parts.join('\n\n')
}
