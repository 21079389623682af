/**
 * Summaries and Markdown tables of a session benchmark's raw result
 * (bench/session/run.ts SessionResult): per mode the session's total over
 * the rounds (median and interquartile range), its ratio to native, the
 * checkpoints' share, per-step medians and ratios, and the FUSE requests per
 * opcode per step of the modes that report them.
 */
import { type Summary } from '../helpers/stats.js';
import type { SessionResult } from '../session/run.js';
/** One mode's summary over the rounds that completed. */
export interface ModeSummary {
    name: string;
    label: string;
    skipped?: string;
    /** rounds that ran every step */
    okRounds: number;
    /** errors of the rounds that did not */
    errors: string[];
    /** session wall time (steps + checkpoints), s */
    total: Summary;
    /** checkpoints only, s */
    checkpoints: Summary;
    /** median over rounds of checkpoints / total (0..1); NaN without checkpoints */
    ckptShare: number;
    /** median total / native's median total; NaN without a native run */
    ratio: number;
    /** per step, s */
    steps: Summary[];
    /** per step, median over rounds of the requests per opcode (absent when not reported) */
    requests?: Array<Record<string, number>>;
}
/** Summarises every mode of `r` (complete rounds only; a mode with none has n = 0 summaries). */
export declare function summarizeSession(r: SessionResult): ModeSummary[];
/** The headline table: one row per mode (skipped modes say why). */
export declare function sessionTotalsTable(sums: ModeSummary[]): string;
/** Per-step medians (s, ±half the IQR) for every mode that ran. */
export declare function sessionStepsTable(r: SessionResult, sums: ModeSummary[]): string;
/** Per-step ratio of each mode's median to native's. */
export declare function sessionRatiosTable(r: SessionResult, sums: ModeSummary[]): string;
/** For each mode reporting FUSE requests: per step the total and the opcodes by count. */
export declare function sessionRequestsTables(r: SessionResult, sums: ModeSummary[]): string;
