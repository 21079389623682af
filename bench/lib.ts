/**
 * Shared helpers for the benchmarks: a rewindfs mount served by a daemon in a
 * child process (bench/helpers/mount.ts, bench's own: bench/ imports nothing
 * from test/), a cleanup stack that also runs on SIGINT/SIGTERM, timing and
 * table printing.
 */
import os from 'node:os'
import { execFileSync } from 'node:child_process'
import { mountRewind as mountBench, type RewindMount } from './helpers/mount.js'
export { CLI, tempRoot, isMounted, forceUnmount, alive, type RewindMount } from './helpers/mount.js'
export { median } from './helpers/stats.js'

/** LIFO cleanup stack; runs on normal exit, on failure and on SIGINT/SIGTERM. */
export class Cleanup {
  private fns: Array<{ what: string, fn: () => unknown }> = []
  private running = false
  constructor () {
    for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
      process.once(sig, () => { void this.run().finally(() => process.exit(130)) })
    }
  }

  /** Registers `fn`; the returned function runs it now (once) and unregisters it. */
  push (what: string, fn: () => unknown): () => Promise<void> {
    const entry = { what, fn }
    this.fns.push(entry)
    return async () => {
      const i = this.fns.indexOf(entry)
      if (i >= 0) { this.fns.splice(i, 1); await entry.fn() }
    }
  }

  /** Runs every registered function, last first; a failure is printed and the rest still run. */
  async run (): Promise<void> {
    if (this.running) return
    this.running = true
    while (this.fns.length > 0) {
      const { what, fn } = this.fns.pop()!
      try { await fn() } catch (e) { process.stderr.write(`cleanup (${what}) failed: ${String(e)}\n`) }
    }
    this.running = false
  }
}

export const sleep = (ms: number): Promise<void> => new Promise(resolve => setTimeout(resolve, ms))

/**
 * Mounts a rewindfs workspace on a fresh directory populated by `populate`
 * (on the plain directory, before mounting), served by the build at `cli`
 * (default this checkout's; bench/helpers/mount.ts); its teardown is
 * registered on `cleanup`.
 */
export async function mountRewind (cleanup: Cleanup, tag: string, populate?: (dir: string) => void | Promise<void>, cli?: string): Promise<RewindMount> {
  const m = await mountBench(tag, { populate, cli })
  const close = cleanup.push(`rewindfs mount (${tag})`, () => m.close())
  return { ...m, close: async () => await close() }
}

/** High-resolution wall clock in ms. */
export function now (): number { return Number(process.hrtime.bigint()) / 1e6 }

/** Runs a command synchronously (never from a process that serves a mount); throws with its stderr on failure. */
export function sh (cmd: string, opts: { cwd?: string, env?: NodeJS.ProcessEnv, timeoutMs?: number } = {}): string {
  try {
    return execFileSync('bash', ['-c', cmd], { cwd: opts.cwd, env: opts.env ?? process.env, timeout: opts.timeoutMs ?? 600000, maxBuffer: 256 * 1024 * 1024, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] })
  } catch (e: any) {
    throw new Error(`command failed: ${cmd}\n${String(e.stderr ?? '').slice(-2000)}${String(e.stdout ?? '').slice(-500)}`)
  }
}

/** Times a synchronous command in ms. */
export function timeSh (cmd: string, opts: { cwd?: string, env?: NodeJS.ProcessEnv, timeoutMs?: number } = {}): number {
  const t0 = now(); sh(cmd, opts); return now() - t0
}

export function fmt (x: number | undefined, _digits = 1): string {
  if (x === undefined || !Number.isFinite(x)) return '–'
  const a = Math.abs(x)
  return x.toFixed(a >= 100 ? 0 : a >= 10 ? 1 : 2)
}

/** Markdown table. */
export function table (header: string[], rows: string[][]): string {
  const w = header.map((h, i) => Math.max(h.length, ...rows.map(r => (r[i] ?? '').length)))
  const line = (r: string[]): string => '| ' + r.map((c, i) => (c ?? '').padEnd(w[i])).join(' | ') + ' |'
  return [line(header), '|' + w.map(n => '-'.repeat(n + 2)).join('|') + '|', ...rows.map(line)].join('\n')
}

export function machine (): string {
  const cpus = os.cpus()
  return `${cpus.length} vCPU (${cpus[0]?.model ?? '?'}), ${(os.totalmem() / 2 ** 30).toFixed(0)} GiB RAM, Linux ${os.release()}, Node ${process.version}`
}
