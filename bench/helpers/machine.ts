/**
 * What machine a benchmark ran on, and how loaded it was while it ran (the
 * machine may be shared: the load average is part of every result).
 */
import os from 'node:os'
import fs from 'node:fs'
import { execFileSync } from 'node:child_process'

/** Description of the machine, recorded in every result file. */
export interface MachineInfo {
  cpu: string
  cores: number
  /** total memory, bytes */
  memoryBytes: number
  kernel: string
  node: string
  /** filesystem of the temporary directory the benchmarks work in (e.g. "ext4") */
  tmpFs: string
  hostname: string
  /** 1-, 5- and 15-minute load averages when the description was taken (the run's own samples are in BenchResults.load) */
  loadAtStart?: number[]
}

/** Describes this machine (os module, /proc/mounts via df for the temp directory's filesystem). */
export function machineInfo (): MachineInfo {
  const cpus = os.cpus()
  let tmpFs = '?'
  try { tmpFs = execFileSync('df', ['--output=fstype', os.tmpdir()], { encoding: 'utf8' }).trim().split('\n').pop() ?? '?' } catch {}
  return { cpu: cpus[0]?.model ?? '?', cores: cpus.length, memoryBytes: os.totalmem(), kernel: os.release(), node: process.version, tmpFs, hostname: os.hostname(), loadAtStart: os.loadavg().map(x => Math.round(x * 100) / 100) }
}

/** One line: "2 cores (AMD EPYC), 23 GiB RAM, Linux 6.18, Node v20, temp dir on ext4, load average 6.1 / 4.2 / 2.0 at the start". */
export function describeMachine (m: MachineInfo): string {
  return `${m.cores} cores (${m.cpu}), ${(m.memoryBytes / 2 ** 30).toFixed(0)} GiB RAM, Linux ${m.kernel}, Node ${m.node}, temp dir on ${m.tmpFs}` +
    (m.loadAtStart ? `, load average ${m.loadAtStart.map(x => x.toFixed(1)).join(' / ')} (1 / 5 / 15 min) at the start` : '')
}

/** A sample of the 1-, 5- and 15-minute load averages at `t` (ms since the epoch). */
export interface LoadSample { t: number, load1: number, load5: number, load15: number }

/**
 * Samples os.loadavg() every `everyMs` (default 5000) until stop(); the
 * timer does not keep the process alive.
 */
export function sampleLoad (everyMs = 5000): { samples: LoadSample[], stop: () => LoadSample[] } {
  const samples: LoadSample[] = []
  const take = (): void => { const [load1, load5, load15] = os.loadavg(); samples.push({ t: Date.now(), load1, load5, load15 }) }
  take()
  const timer = setInterval(take, everyMs)
  timer.unref()
  return { samples, stop: () => { clearInterval(timer); take(); return samples } }
}

/** Clock ticks per second of /proc/PID/stat's times (USER_HZ: 100 on every Linux architecture rewindfs runs on). */
const USER_HZ = 100

/**
 * CPU time process `pid` has used so far, user + system, all its threads,
 * ms (/proc/PID/stat fields utime and stime, at USER_HZ resolution: 10 ms);
 * NaN when it cannot be read. Unlike wall time it barely moves when other
 * work shares the cores.
 */
export function processCpuMs (pid: number): number {
  try {
    const s = fs.readFileSync(`/proc/${pid}/stat`, 'utf8')
    const f = s.slice(s.lastIndexOf(')') + 2).split(' ')
    return (Number(f[11]) + Number(f[12])) * 1000 / USER_HZ
  } catch { return NaN }
}

/** Resident memory of process `pid` (VmRSS of /proc/PID/status), bytes; NaN when it cannot be read. */
export function residentBytes (pid: number): number {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))
    return m ? Number(m[1]) * 1024 : NaN
  } catch { return NaN }
}
