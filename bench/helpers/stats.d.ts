/**
 * Summary statistics of the benchmarks' samples: median, quartiles and
 * interquartile range. Quantiles use linear interpolation between closest
 * ranks (Hyndman & Fan 1996, definition 7: the default of R's quantile() and
 * numpy.percentile), so the median of an even count is the mean of the two
 * middle samples.
 */
/**
 * The q-quantile (0 <= q <= 1) of `xs` (definition 7, see above); NaN for
 * no finite sample. Throws a RangeError for q outside [0, 1].
 */
export declare function quantile(xs: readonly number[], q: number): number;
/** Median of `xs` (NaN for none). */
export declare function median(xs: readonly number[]): number;
/** Summary of a set of samples, in the samples' unit. */
export interface Summary {
    /** number of finite samples */
    n: number;
    median: number;
    /** first and third quartile */
    q1: number;
    q3: number;
    /** interquartile range, q3 - q1 (0 for one sample) */
    iqr: number;
    min: number;
    max: number;
}
/** Median, quartiles, IQR, min and max of `xs` (NaN fields and n 0 for no finite sample). */
export declare function summarize(xs: readonly number[]): Summary;
/**
 * The order of `modes` for round `round` (0-based): the list rotated left by
 * `round` places, so over as many rounds as modes each mode runs once in each
 * position and drift (a neighbour's load, a warming cache) is spread evenly.
 */
export declare function rotation<T>(modes: readonly T[], round: number): T[];
/**
 * Per-opcode difference of two request-count snapshots (after - before),
 * keeping only opcodes with a positive difference. Counts are monotonic, so a
 * negative difference means the daemon restarted: it throws an Error then.
 */
export declare function countDelta(before: Readonly<Record<string, number>>, after: Readonly<Record<string, number>>): Record<string, number>;
