import { type MachineInfo, type LoadSample } from '../helpers/machine.js';
import type { SessionResult } from '../session/run.js';
import type { CheckpointResult } from '../checkpoint/run.js';
import type { HifreqResult } from '../hifreq.js';
/** Everything one `npm run bench` measured, with where and when. */
export interface BenchResults {
    /** format of this file */
    version: 1;
    mode: 'quick' | 'full';
    /** ISO times */
    started: string;
    finished: string;
    machine: MachineInfo;
    /** load average every 5 s during the run */
    load: LoadSample[];
    session?: SessionResult;
    checkpoint?: CheckpointResult;
    hifreq?: HifreqResult;
}
/** The chart files of a report: file name -> SVG text. */
export type Charts = Record<string, string>;
/** The charts of `r` (only those whose data the run has). */
export declare function charts(r: BenchResults): Charts;
/** The load average during the run: min / median / max of the 1-minute figure. */
export declare function loadLine(load: LoadSample[]): string;
/** The headline table (session totals) for the README, with date and machine. */
export declare function headline(r: BenchResults): string;
/** The Markdown report of `r`, linking the charts by file name. */
export declare function markdown(r: BenchResults, chartFiles: string[]): string;
/**
 * Writes `r` to `dir`: `<prefix>.json` (every raw sample), `report.md` and
 * the charts; returns the paths written.
 */
export declare function writeReport(dir: string, r: BenchResults, prefix: string): string[];
