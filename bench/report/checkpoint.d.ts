import type { CheckpointResult, CheckpointCell } from '../checkpoint/run.js';
/** The cell of `peer` at `files` and `changed`, if measured. */
export declare function cellOf(r: CheckpointResult, peer: string, files: number, changed: number): CheckpointCell | undefined;
/** One table per size: rows are peers, columns checkpoint / restore ms per count of changed files. */
export declare function checkpointTables(r: CheckpointResult): string;
/** The peers and their restore verdicts (independent manifest comparison), skipped peers with their reason. */
export declare function correctnessTable(r: CheckpointResult): string;
/** rewindfs detail: time inside the daemon per size (10 changed files, or the nearest) and resident memory. */
export declare function rewindDetailTable(r: CheckpointResult): string;
/** Every checkpoint table, with the errors of failed peers. */
export declare function checkpointText(r: CheckpointResult): string;
