import { type ChildProcess } from 'node:child_process';
import { type CleanupStack } from '../helpers/btrfs.js';
/** One round's workspace of a mode. */
export interface ModeRun {
    /** the workspace root; step 1 clones into `<dir>/repo` */
    dir: string;
    /** takes the checkpoint after step `step` (0-based); undefined when the mode takes none */
    checkpoint?: (step: number) => Promise<void>;
    /** FUSE requests served so far by opcode (monotonic); undefined when not reported */
    requests?: () => Promise<Record<string, number> | undefined>;
    /** resident memory of the daemon, bytes (rewindfs modes) */
    rss?: () => number;
    /** removes the workspace and everything it needed */
    close: () => Promise<void>;
}
/** A way of keeping the workspace. */
export interface Mode {
    /** short name: table column, JSON key, chart series */
    name: string;
    /** one-line description for the report */
    label: string;
    /**
     * Prepares what every round needs (a build, a loop image); returns the
     * reason when this machine cannot run the mode (then it is skipped).
     */
    prepare: () => Promise<string | null>;
    /** a fresh workspace for one round */
    start: () => Promise<ModeRun>;
}
/** bench/cpt/passthrough-ll.c in the source tree (this module runs from dist/bench/session/) */
export declare const PASSTHROUGH_LL_SRC: string;
/** The plain-directory mode. */
export declare function nativeMode(): Mode;
/** Git snapshots into a separate GIT_DIR after each step; `force` adds ignored files too. */
export declare function gitMode(force: boolean): Mode;
/** A rewindfs mount (build at `cli`, default this checkout's) with a mark after every step. */
export declare function rewindMode(name: string, cli: string | undefined, label: string): Mode;
/** A btrfs subvolume per round, a read-only snapshot after every step. */
export declare function btrfsMode(cleanup: CleanupStack): Mode;
/** Compiles bench/cpt/passthrough-ll.c into `outDir`; returns the binary or throws with the compiler's output. */
export declare function buildPassthroughLL(outDir: string): string;
/** Starts passthrough-ll on `src` at `mnt`; resolves once it printed "ready". */
export declare function startPassthroughLL(bin: string, src: string, mnt: string): Promise<ChildProcess>;
/** Stops a passthrough-ll started by startPassthroughLL and clears its mount. */
export declare function stopPassthroughLL(child: ChildProcess, mnt: string): Promise<void>;
/** The C low-level passthrough over a fresh backing directory per round. */
export declare function cllMode(cleanup: CleanupStack): Mode;
/** The git commit of the checkout at `dir` (short), or '?' */
export declare function commitOf(dir: string): string;
/** Names of every mode, in the default order. */
export declare const MODE_NAMES: readonly ["native", "rewindfs", "rewindfs-b", "git", "git -f", "btrfs", "c-ll"];
/**
 * The modes named in `names` (default all; rewindfs-b only when `rewindfsB`,
 * a second checkout's root, is given). Throws for an unknown name.
 */
export declare function selectModes(cleanup: CleanupStack, o: {
    names?: string[];
    rewindfsB?: string;
    repo: string;
}): Mode[];
