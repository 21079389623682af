/** Description of the machine, recorded in every result file. */
export interface MachineInfo {
    cpu: string;
    cores: number;
    /** total memory, bytes */
    memoryBytes: number;
    kernel: string;
    node: string;
    /** filesystem of the temporary directory the benchmarks work in (e.g. "ext4") */
    tmpFs: string;
    hostname: string;
}
/** Describes this machine (os module, /proc/mounts via df for the temp directory's filesystem). */
export declare function machineInfo(): MachineInfo;
/** One line: "2 cores (AMD EPYC), 23 GiB RAM, Linux 6.18, Node v20, tmp on ext4". */
export declare function describeMachine(m: MachineInfo): string;
/** A sample of the 1-, 5- and 15-minute load averages at `t` (ms since the epoch). */
export interface LoadSample {
    t: number;
    load1: number;
    load5: number;
    load15: number;
}
/**
 * Samples os.loadavg() every `everyMs` (default 5000) until stop(); the
 * timer does not keep the process alive.
 */
export declare function sampleLoad(everyMs?: number): {
    samples: LoadSample[];
    stop: () => LoadSample[];
};
/** Resident memory of process `pid` (VmRSS of /proc/PID/status), bytes; NaN when it cannot be read. */
export declare function residentBytes(pid: number): number;
