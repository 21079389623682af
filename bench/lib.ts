/**
 * Shared helpers for the benchmarks: a rewindfs mount served by a daemon in a
 * child process (like test/helpers/mount.ts, but under temporary directories
 * named rewindfs-bench-*, so the test runner's leftover sweep never kills a
 * running bench), a cleanup stack that also runs on SIGINT/SIGTERM, timing
 * and table printing.
 */
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { spawn, execFileSync, spawnSync, type ChildProcess } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { RewindClient } from '../client/client.js'
import { mountWorkspace } from '../test/helpers/mount.js'

const here = path.dirname(fileURLToPath(import.meta.url))
/** dist/cli/main.js */
export const CLI = path.resolve(here, '../cli/main.js')

/** LIFO cleanup stack; runs on normal exit, on failure and on SIGINT/SIGTERM. */
export class Cleanup {
  private fns: Array<{ what: string, fn: () => unknown }> = []
  private running = false
  constructor () {
    for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
      process.once(sig, () => { void this.run().finally(() => process.exit(130)) })
    }
  }

  push (what: string, fn: () => unknown): () => Promise<void> {
    const entry = { what, fn }
    this.fns.push(entry)
    return async () => {
      const i = this.fns.indexOf(entry)
      if (i >= 0) { this.fns.splice(i, 1); await entry.fn() }
    }
  }

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

export function tempRoot (tag: string): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), `rewindfs-bench-${tag}-`))
}

export function isMounted (dir: string): boolean {
  return fs.readFileSync('/proc/mounts', 'utf8').split('\n').some(l => l.split(' ')[1] === dir)
}

/** fusermount -u, then -uz, then umount -l. */
export function forceUnmount (dir: string): void {
  for (const cmd of [['fusermount', '-u', dir], ['fusermount', '-uz', dir], ['umount', '-l', dir]]) {
    if (!isMounted(dir)) return
    spawnSync(cmd[0], cmd.slice(1), { stdio: 'ignore' })
  }
}

export const sleep = (ms: number): Promise<void> => new Promise(resolve => setTimeout(resolve, ms))

export function alive (c: ChildProcess): boolean { return c.exitCode === null && c.signalCode === null }

export interface RewindMount {
  root: string
  dir: string
  store: string
  home: string
  client: RewindClient
  daemon: ChildProcess
  /** discards and unmounts, kills the daemon if needed, removes root */
  close(): Promise<void>
}

/**
 * Mounts a rewindfs workspace on a fresh directory populated by `populate`
 * (on the plain directory, before mounting), with the tests' mount builder
 * (test/helpers/mount.ts); its teardown is registered on `cleanup`.
 */
export async function mountRewind (cleanup: Cleanup, tag: string, populate?: (dir: string) => void | Promise<void>): Promise<RewindMount> {
  let close: () => Promise<void> = async () => {}
  const m = await mountWorkspace({ teardown: fn => { close = cleanup.push(`rewindfs mount (${tag})`, fn) } }, populate)
  return Object.assign(m, { close: async () => await close() })
}

/** High-resolution wall clock in ms. */
export function now (): number { return Number(process.hrtime.bigint()) / 1e6 }

export function median (xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b)
  const n = s.length
  if (n === 0) return NaN
  return n % 2 === 1 ? s[(n - 1) / 2] : (s[n / 2 - 1] + s[n / 2]) / 2
}

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
