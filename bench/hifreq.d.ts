import { Cleanup } from './lib.js';
/** One phase: marks asked for (`target` per s, 0 none, Infinity back to back) and what came of them. */
export interface HifreqPhase {
    /** marks per second asked for: 0 = none (writer alone), null = back to back */
    target: number | null;
    /** marks per second achieved */
    achieved: number;
    marks: number;
    /** mark latency at the client, ms (every sample) */
    markMs: number[];
    /** writer's throughput, MB/s (10^6 bytes) and files/s */
    writerMBps: number;
    writerFilesPerS: number;
}
/** Result of the high-frequency benchmark. */
export interface HifreqResult {
    kind: 'hifreq';
    seconds: number;
    fileBytes: number;
    phases: HifreqPhase[];
}
/** Options of hifreqBench. */
export interface HifreqOptions {
    /** length of each phase, s (full 10, quick 3) */
    seconds: number;
    /** paced rates, marks/s (default 10, 100, 1000) */
    rates?: number[];
    log: (line: string) => void;
}
/** Runs the phases on one fresh mount (registered on `cleanup`). */
export declare function hifreqBench(cleanup: Cleanup, o: HifreqOptions): Promise<HifreqResult>;
/** The table of a result: per phase the marks achieved, mark latency and the writer's share of its alone figure. */
export declare function hifreqText(r: HifreqResult): string;
