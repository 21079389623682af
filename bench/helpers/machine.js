/**
 * What machine a benchmark ran on, and how loaded it was while it ran (the
 * machine may be shared: the load average is part of every result).
 */
import os from 'node:os';
import fs from 'node:fs';
import { execFileSync } from 'node:child_process';
/** Describes this machine (os module, /proc/mounts via df for the temp directory's filesystem). */
export function machineInfo() {
    const cpus = os.cpus();
    let tmpFs = '?';
    try {
        tmpFs = execFileSync('df', ['--output=fstype', os.tmpdir()], { encoding: 'utf8' }).trim().split('\n').pop() ?? '?';
    }
    catch { }
    return { cpu: cpus[0]?.model ?? '?', cores: cpus.length, memoryBytes: os.totalmem(), kernel: os.release(), node: process.version, tmpFs, hostname: os.hostname() };
}
/** One line: "2 cores (AMD EPYC), 23 GiB RAM, Linux 6.18, Node v20, tmp on ext4". */
export function describeMachine(m) {
    return `${m.cores} cores (${m.cpu}), ${(m.memoryBytes / 2 ** 30).toFixed(0)} GiB RAM, Linux ${m.kernel}, Node ${m.node}, temp dir on ${m.tmpFs}`;
}
/**
 * Samples os.loadavg() every `everyMs` (default 5000) until stop(); the
 * timer does not keep the process alive.
 */
export function sampleLoad(everyMs = 5000) {
    const samples = [];
    const take = () => { const [load1, load5, load15] = os.loadavg(); samples.push({ t: Date.now(), load1, load5, load15 }); };
    take();
    const timer = setInterval(take, everyMs);
    timer.unref();
    return { samples, stop: () => { clearInterval(timer); take(); return samples; } };
}
/** Resident memory of process `pid` (VmRSS of /proc/PID/status), bytes; NaN when it cannot be read. */
export function residentBytes(pid) {
    try {
        const m = /VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
        return m ? Number(m[1]) * 1024 : NaN;
    }
    catch {
        return NaN;
    }
}
//# sourceMappingURL=machine.js.map