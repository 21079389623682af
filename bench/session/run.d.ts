import { type Mode } from './modes.js';
import { type Step } from './steps.js';
import type { CleanupStack } from '../helpers/btrfs.js';
/** One mode's run in one round. */
export interface ModeRoundResult {
    /** wall time of each step, ms (shorter than steps when the run failed) */
    stepMs: number[];
    /** wall time of the checkpoint after each step, ms (empty when the mode takes none) */
    ckptMs: number[];
    /** FUSE requests per opcode during each step (rewindfs modes whose daemon reports them) */
    requests?: Array<Record<string, number>>;
    /** daemon resident memory at the end of the round, bytes */
    rssBytes?: number;
    /** why the run stopped early */
    error?: string;
}
/** Everything one session benchmark measured. */
export interface SessionResult {
    kind: 'session';
    steps: Array<{
        name: string;
        cmd: string;
    }>;
    modes: Array<{
        name: string;
        label: string;
        skipped?: string;
    }>;
    /** the repository cloned by step 1, and its commit */
    source: {
        path: string;
        commit: string;
    };
    /** the cache-priming step, run once before the rounds */
    prime: {
        name: string;
        cmd: string;
        ms: number;
    };
    rounds: Array<{
        order: string[];
        runs: Record<string, ModeRoundResult>;
    }>;
}
/** Options of runSession. */
export interface SessionOptions {
    modes: Mode[];
    steps: readonly Step[];
    rounds: number;
    /** the repository to replay on (its HEAD is snapshotted into a temporary clone first) */
    repo: string;
    cleanup: CleanupStack;
    /** progress lines */
    log: (line: string) => void;
    /** per-step limit, ms (default 600000) */
    stepTimeoutMs?: number;
}
/** Runs bash `cmd` in `cwd`; resolves with its wall time in ms, rejects with the tail of its output. */
export declare function timeCommand(cmd: string, cwd: string, env: NodeJS.ProcessEnv, timeoutMs: number): Promise<number>;
/**
 * Runs the session benchmark: snapshots `repo` (git clone --single-branch of
 * its HEAD), primes the npm cache (PRIME_STEP), prepares every mode
 * (skipping, with a printed note, those this machine cannot run), then runs
 * `rounds` rounds. A mode whose step fails keeps the error in that round's
 * result and the run goes on.
 */
export declare function runSession(o: SessionOptions): Promise<SessionResult>;
