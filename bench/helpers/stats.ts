/**
 * Summary statistics of the benchmarks' samples: median, quartiles and
 * interquartile range. Quantiles use linear interpolation between closest
 * ranks (Hyndman & Fan 1996, definition 7: the default of R's quantile() and
 * numpy.percentile), so the median of an even count is the mean of the two
 * middle samples.
 */

/** Sorted copy of the finite samples of `xs`. */
function sortedFinite (xs: readonly number[]): number[] {
  return xs.filter(x => Number.isFinite(x)).sort((a, b) => a - b)
}

/**
 * The q-quantile (0 <= q <= 1) of `xs` (definition 7, see above); NaN for
 * no finite sample. Throws a RangeError for q outside [0, 1].
 */
export function quantile (xs: readonly number[], q: number): number {
  if (!(q >= 0 && q <= 1)) throw new RangeError(`quantile: q must be within [0, 1], got ${q}`)
  const s = sortedFinite(xs)
  if (s.length === 0) return NaN
  const h = (s.length - 1) * q
  const lo = Math.floor(h)
  const hi = Math.ceil(h)
  return s[lo] + (h - lo) * (s[hi] - s[lo])
}

/** Median of `xs` (NaN for none). */
export function median (xs: readonly number[]): number { return quantile(xs, 0.5) }

/** Summary of a set of samples, in the samples' unit. */
export interface Summary {
  /** number of finite samples */
  n: number
  median: number
  /** first and third quartile */
  q1: number
  q3: number
  /** interquartile range, q3 - q1 (0 for one sample) */
  iqr: number
  min: number
  max: number
}

/** Median, quartiles, IQR, min and max of `xs` (NaN fields and n 0 for no finite sample). */
export function summarize (xs: readonly number[]): Summary {
  const s = sortedFinite(xs)
  const q1 = quantile(s, 0.25); const q3 = quantile(s, 0.75)
  return { n: s.length, median: quantile(s, 0.5), q1, q3, iqr: q3 - q1, min: s.length ? s[0] : NaN, max: s.length ? s[s.length - 1] : NaN }
}

/**
 * The order of `modes` for round `round` (0-based): the list rotated left by
 * `round` places, so over as many rounds as modes each mode runs once in each
 * position and drift (a neighbour's load, a warming cache) is spread evenly.
 */
export function rotation<T> (modes: readonly T[], round: number): T[] {
  const n = modes.length
  if (n === 0) return []
  const k = ((round % n) + n) % n
  return [...modes.slice(k), ...modes.slice(0, k)]
}

/**
 * Per-opcode difference of two request-count snapshots (after - before),
 * keeping only opcodes with a positive difference. Counts are monotonic, so a
 * negative difference means the daemon restarted: it throws an Error then.
 */
export function countDelta (before: Readonly<Record<string, number>>, after: Readonly<Record<string, number>>): Record<string, number> {
  const out: Record<string, number> = {}
  for (const [op, a] of Object.entries(after)) {
    const d = a - (before[op] ?? 0)
    if (d < 0) throw new Error(`request count of ${op} went down (${before[op]} -> ${a}): the daemon restarted between the two snapshots`)
    if (d > 0) out[op] = d
  }
  return out
}
