/**
 * Test builder: a real rewindfs mount in a temporary directory, served by a
 * daemon in a child process (so the test process may touch the mount freely,
 * even synchronously). Teardown always unmounts — through the daemon, then
 * `fusermount -u`, then `fusermount -uz` — kills the daemon and removes the
 * temporary directories, whether the test passed or not.
 */
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { spawn, spawnSync, execFile, type ChildProcess } from 'node:child_process'
import { promisify } from 'node:util'
import { fileURLToPath } from 'node:url'
import { RewindClient } from '../../client/client.js'
import { CONNECTION_FILE } from '../../proto/messages.js'

const run = promisify(execFile)
const here = path.dirname(fileURLToPath(import.meta.url))
/** dist/cli/main.js */
export const CLI = path.resolve(here, '../../cli/main.js')

/** Minimal shape of a tap test used here (teardown registration). */
export interface Teardownable { teardown(fn: () => unknown): void }

export interface Mounted {
  /** the mounted workspace (absolute) */
  dir: string
  store: string
  /** REWINDFS_HOME of this mount */
  home: string
  /** temporary root holding dir, store and home */
  root: string
  /** the daemon's runtime directory (REWINDFS_RUNTIME_DIR): where clients discover it from the workspace path */
  runtime: string
  client: RewindClient
  daemon: ChildProcess
  /** runs the CLI against this workspace */
  cli(args: string[]): Promise<{ stdout: string, stderr: string, code: number }>
  /** runs a shell command with cwd = the workspace */
  sh(cmd: string, opts?: { cwd?: string, timeoutMs?: number }): Promise<{ stdout: string, stderr: string, code: number }>
  /** clean unmount through the daemon (write-back unless discard) */
  unmount(discard?: boolean): Promise<void>
  /** SIGKILL the daemon and clear the dead mount */
  kill9(): Promise<void>
  /** start a daemon again on the same directory and store */
  remount(): Promise<void>
}

/** Makes a fresh temporary root named rewindfs-test-* (test.sh clears leftovers by that name). */
export function tempRoot (): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), 'rewindfs-test-'))
}

function isMounted (dir: string): boolean {
  return fs.readFileSync('/proc/mounts', 'utf8').split('\n').some(l => l.split(' ')[1] === dir)
}

async function startDaemon (dir: string, store: string, home: string, choices: MountChoices, root: string): Promise<ChildProcess> {
  const runtime = path.join(root, 'run')
  fs.mkdirSync(store, { recursive: true })
  const log = fs.openSync(path.join(home, 'daemon.log'), 'a')
  const child = spawn(process.execPath, [CLI, 'daemon', dir, '--store', store, ...(choices.daemonArgs?.(root) ?? [])], {
    stdio: ['ignore', log, log], env: { ...process.env, REWINDFS_HOME: home, REWINDFS_RUNTIME_DIR: runtime, ...choices.env }
  })
  fs.closeSync(log)
  // a bound on start-up, not a timing assertion: at load 15 on 2 cores a niced daemon took over 30 s to start
  const deadline = Date.now() + 90000
  let exited = false
  child.once('exit', () => { exited = true })
  while (Date.now() < deadline && !exited) {
    try { if (JSON.parse(fs.readFileSync(path.join(store, CONNECTION_FILE), 'utf8')).pid === child.pid) return child } catch {}
    await new Promise(resolve => setTimeout(resolve, 25))
  }
  child.kill('SIGKILL')
  throw new Error(`daemon did not start: ${fs.readFileSync(path.join(home, 'daemon.log'), 'utf8').slice(-2000)}`)
}

/** Force-clears a mount: fusermount -u, then -uz, then umount -l. */
export async function forceUnmount (dir: string): Promise<void> {
  for (const cmd of [['fusermount', '-u', dir], ['fusermount', '-uz', dir], ['umount', '-l', dir]]) {
    if (!isMounted(dir)) return
    await run(cmd[0], cmd.slice(1)).catch(() => {})
  }
}

/** Choices of mountWorkspace beyond the defaults. */
export interface MountChoices {
  /** the store directory (default `<root>/store`); made by the caller when it needs a filesystem of its own */
  store?: (root: string) => string
  /** more arguments of `rewindfs daemon` (e.g. --socket PATH), given the temporary root */
  daemonArgs?: (root: string) => string[]
  /** more environment of the daemon (e.g. SUDO_UID) */
  env?: Record<string, string>
}

/**
 * Mounts a new workspace populated by `populate(dir)` (runs before the
 * mount, on the plain directory) and registers its teardown on `t`.
 */
export async function mountWorkspace (t: Teardownable, populate?: (dir: string) => void | Promise<void>, choices: MountChoices = {}): Promise<Mounted> {
  const root = tempRoot()
  const dir = path.join(root, 'ws')
  const store = choices.store ? choices.store(root) : path.join(root, 'store')
  const home = path.join(root, 'home')
  fs.mkdirSync(dir); fs.mkdirSync(home)
  if (populate) await populate(dir)
  const m: Mounted = {
    dir, store, home, root, runtime: path.join(root, 'run'),
    client: null as unknown as RewindClient,
    daemon: null as unknown as ChildProcess,
    cli: async (args) => {
      try {
        const r = await run(process.execPath, [CLI, args[0], '-w', dir, ...args.slice(1)], { env: { ...process.env, REWINDFS_HOME: home, REWINDFS_RUNTIME_DIR: path.join(root, 'run') }, cwd: root, timeout: 120000 })
        return { stdout: r.stdout, stderr: r.stderr, code: 0 }
      } catch (e: any) { return { stdout: e.stdout ?? '', stderr: e.stderr ?? String(e), code: typeof e.code === 'number' ? e.code : 1 } }
    },
    sh: async (cmd, opts = {}) => {
      try {
        const r = await run('bash', ['-c', cmd], { cwd: opts.cwd ?? dir, timeout: opts.timeoutMs ?? 120000, maxBuffer: 64 * 1024 * 1024 })
        return { stdout: r.stdout, stderr: r.stderr, code: 0 }
      } catch (e: any) { return { stdout: e.stdout ?? '', stderr: e.stderr ?? String(e), code: typeof e.code === 'number' ? e.code : 1 } }
    },
    unmount: async (discard = false) => {
      const pid = m.daemon.pid
      await m.client.close().catch(() => {})
      const c = await RewindClient.connect({ storeDir: store, timeoutMs: 60000 })
      await c.unmount({ discard }).catch(() => {})
      await c.close().catch(() => {})
      const deadline = Date.now() + 120000
      while (Date.now() < deadline && m.daemon.exitCode === null && m.daemon.signalCode === null) await new Promise(resolve => setTimeout(resolve, 25))
      const tail = (): string => { try { return fs.readFileSync(path.join(home, 'daemon.log'), 'utf8').slice(-3000) } catch { return '' } }
      if (m.daemon.exitCode === null && m.daemon.signalCode === null) throw new Error(`daemon ${pid} still runs 120 s after the unmount request; its log:\n${tail()}`)
      if (isMounted(dir)) throw new Error(`daemon ${pid} exited but ${dir} is still mounted; its log:\n${tail()}`)
    },
    kill9: async () => {
      await m.client.close().catch(() => {})
      m.daemon.kill('SIGKILL')
      await new Promise(resolve => m.daemon.exitCode !== null || m.daemon.signalCode !== null ? resolve(null) : m.daemon.once('exit', resolve))
      // auto_unmount's helper removes the mount shortly after the daemon dies; on a loaded
      // machine it can take longer than the wait: then clear the dead mount here (a test that
      // wants it left uses killLeavingDeadMount)
      const deadline = Date.now() + 10000
      while (Date.now() < deadline && isMounted(dir)) await new Promise(resolve => setTimeout(resolve, 25))
      if (isMounted(dir)) await forceUnmount(dir)
    },
    remount: async () => {
      m.daemon = await startDaemon(dir, store, home, choices, root)
      m.client = await RewindClient.connect({ storeDir: store, timeoutMs: 60000 })
    }
  }
  t.teardown(async () => {
    await m.client?.close().catch(() => {})
    if (m.daemon && m.daemon.exitCode === null && m.daemon.signalCode === null) {
      try {
        const c = await RewindClient.connect({ storeDir: store, timeoutMs: 10000 })
        await c.unmount({ discard: true }).catch(() => {})
        await c.close().catch(() => {})
      } catch {}
      const deadline = Date.now() + 15000
      while (Date.now() < deadline && m.daemon.exitCode === null && m.daemon.signalCode === null) await new Promise(resolve => setTimeout(resolve, 25))
      if (m.daemon.exitCode === null && m.daemon.signalCode === null) m.daemon.kill('SIGKILL')
    }
    await forceUnmount(dir)
    fs.rmSync(root, { recursive: true, force: true })
  })
  await m.remount()
  return m
}

/**
 * A tmpfs of `size` (mount(8) syntax, e.g. "24m") for a store, mounted on a
 * new temporary directory and unmounted in `t`'s teardown. Needs root: where
 * the mount fails, plans `t` to 0 with the reason (the file is skipped) and
 * returns null.
 */
export function storeTmpfs (t: Teardownable & { plan: (n: number, reason?: string) => void }, size: string): string | null {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rewindfs-test-storefs-'))
  const r = spawnSync('mount', ['-t', 'tmpfs', '-o', `size=${size}`, 'tmpfs', dir], { encoding: 'utf8' })
  if (r.status !== 0) {
    fs.rmSync(dir, { recursive: true, force: true })
    t.plan(0, `cannot mount a tmpfs for the store (needs root): ${r.stderr.trim()}`)
    return null
  }
  t.teardown(() => {
    spawnSync('umount', ['-l', dir])
    fs.rmSync(dir, { recursive: true, force: true })
  })
  return dir
}
