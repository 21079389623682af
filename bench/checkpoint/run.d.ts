/**
 * The checkpoint benchmark's runner (bench/checkpoint.ts is its command
 * line): for each size and peer, a fresh populated tree (bench/checkpoint/
 * tree.ts), the base checkpoint, then for each count of changed files
 * `reps` times: change, checkpoint (timed), restore to the base (timed).
 * The first restore of each peer at the first size is judged against the
 * base's independent manifest (scripts/manifest.sh); every restore is
 * checked for the changed files. Raw samples only; summaries are made by
 * bench/report/checkpoint.ts.
 */
import { Cleanup } from '../lib.js';
import { type RestoreCheck } from '../helpers/compare.js';
import { type Peer } from './peers.js';
/** Samples of one peer at one size and one count of changed files. */
export interface CheckpointCell {
    peer: string;
    files: number;
    changed: number;
    /** checkpoint wall time at the caller, ms */
    ckptMs: number[];
    /** restore wall time at the caller, ms */
    restoreMs: number[];
    /** rewindfs: time inside the daemon (reply .ms) */
    insideCkptMs?: number[];
    insideRestoreMs?: number[];
    /** restores that left a changed file changed */
    missed: number;
}
/** Everything the checkpoint benchmark measured. */
export interface CheckpointResult {
    kind: 'checkpoint';
    sizes: number[];
    changed: number[];
    reps: Record<string, number>;
    peers: Array<{
        name: string;
        label: string;
        skipped?: string;
    }>;
    cells: CheckpointCell[];
    /** verdict of each peer's first restore (manifest comparison), at the first size */
    correctness: Record<string, {
        verdict: string;
        check: RestoreCheck;
    }>;
    /** rewindfs daemon resident memory after the base checkpoint and after all repetitions, bytes, by size */
    rss: Record<string, {
        afterBase: number;
        afterReps: number;
    }>;
    /** per peer and size: populate + base checkpoint ms, and the errors of the peers that failed */
    setupMs: Record<string, Record<string, number>>;
    errors: string[];
}
/** Options of runCheckpoint. */
export interface CheckpointOptions {
    peers: Peer[];
    sizes: number[];
    changed: number[];
    /** repetitions per (size, changed); a function of the size */
    reps: (files: number) => number;
    cleanup: Cleanup;
    log: (line: string) => void;
}
/** Runs the benchmark; a peer that fails at a size has the error recorded and the run goes on. */
export declare function runCheckpoint(o: CheckpointOptions): Promise<CheckpointResult>;
