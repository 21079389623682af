/**
 * The benchmarks' own rewindfs mount (bench/ imports nothing from test/): a
 * daemon in a child process serving a fresh workspace under a temporary root
 * named rewindfs-bench-* (so the test runner's leftover sweep never kills a
 * running bench), reached by one websocket client.
 *
 * Any build of rewindfs can serve it: `cli` is the path of that build's
 * the CLI of a build (default: this checkout's, see cliOf), so two builds can be
 * measured side by side in one run.
 */
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { RewindClient } from '../../client/client.js'
import { CONNECTION_FILE } from '../../proto/messages.js'

const here = path.dirname(fileURLToPath(import.meta.url))
/** this checkout's CLI, dist/cli/main.js */
export const CLI = path.resolve(here, '../../cli/main.js')

/**
 * The built CLI of a checkout: dist/cli/main.js, or dist/daemon/cli.js in
 * builds from before the CLI moved to cli/ (so an older build can be
 * measured beside this one).
 */
export function cliOf (checkout: string): string {
  const now = path.join(checkout, 'dist/cli/main.js')
  return fs.existsSync(now) ? now : path.join(checkout, 'dist/daemon/cli.js')
}

/** Makes a temporary directory named rewindfs-bench-<tag>-*. */
export function tempRoot (tag: string): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), `rewindfs-bench-${tag}-`))
}

/** True when `dir` is a mount point now (/proc/mounts). */
export function isMounted (dir: string): boolean {
  return fs.readFileSync('/proc/mounts', 'utf8').split('\n').some(l => l.split(' ')[1] === dir)
}

/** fusermount -u, then fusermount -uz, then umount -l, stopping as soon as `dir` is no longer mounted. */
export function forceUnmount (dir: string): void {
  for (const cmd of [['fusermount', '-u', dir], ['fusermount3', '-u', dir], ['fusermount', '-uz', dir], ['umount', '-l', dir]]) {
    if (!isMounted(dir)) return
    spawnSync(cmd[0], cmd.slice(1), { stdio: 'ignore' })
  }
}

/** True while the child has neither exited nor been killed. */
export function alive (c: ChildProcess): boolean { return c.exitCode === null && c.signalCode === null }

const sleep = (ms: number): Promise<void> => new Promise(resolve => setTimeout(resolve, ms))

/** A mounted workspace served by a daemon child process. */
export interface RewindMount {
  /** temporary root holding dir, store and home */
  root: string
  /** the mounted workspace (absolute) */
  dir: string
  store: string
  /** REWINDFS_HOME of this daemon */
  home: string
  client: RewindClient
  daemon: ChildProcess
  /** the cli.js that serves it */
  cli: string
  /** unmounts (discarding), kills the daemon if it does not go, clears the mount, removes root; idempotent */
  close(): Promise<void>
}

/** Options of mountRewind. */
export interface MountOptions {
  /** the built CLI of the build to run (cliOf; default: this checkout's) */
  cli?: string
  /** fills the plain workspace directory before the mount */
  populate?: (dir: string) => void | Promise<void>
  /** daemon start-up limit, ms (default 60000) */
  startMs?: number
  /** extra environment for the daemon (e.g. REWINDFS_FUSE=ll to pick the FUSE layer) */
  env?: NodeJS.ProcessEnv
}

/**
 * Mounts a new workspace under tempRoot(tag). Throws (after cleaning up)
 * with the tail of the daemon's log when it does not come up within
 * `startMs`.
 */
export async function mountRewind (tag: string, o: MountOptions = {}): Promise<RewindMount> {
  const cli = o.cli ?? CLI
  if (!fs.existsSync(cli)) throw new Error(`rewindfs build not found: ${cli} (build that checkout: npm run setup there)`)
  const root = tempRoot(tag)
  const dir = path.join(root, 'ws'); const store = path.join(root, 'store'); const home = path.join(root, 'home')
  fs.mkdirSync(dir); fs.mkdirSync(store); fs.mkdirSync(home)
  let daemon: ChildProcess | null = null
  let client: RewindClient | null = null
  let closed = false
  const close = async (): Promise<void> => {
    if (closed) return
    closed = true
    await client?.close().catch(() => {})
    if (daemon && alive(daemon)) {
      try {
        const c = await RewindClient.connect({ storeDir: store, timeoutMs: 10000 })
        await c.unmount({ discard: true }).catch(() => {})
        await c.close().catch(() => {})
      } catch {}
      const deadline = Date.now() + 30000
      while (Date.now() < deadline && alive(daemon)) await sleep(25)
      if (alive(daemon)) daemon.kill('SIGKILL')
    }
    forceUnmount(dir)
    fs.rmSync(root, { recursive: true, force: true })
  }
  try {
    if (o.populate) await o.populate(dir)
    const log = fs.openSync(path.join(home, 'daemon.log'), 'a')
    daemon = spawn(process.execPath, [cli, 'daemon', dir, '--store', store], { stdio: ['ignore', log, log], env: { ...process.env, ...o.env, REWINDFS_HOME: home } })
    fs.closeSync(log)
    const deadline = Date.now() + (o.startMs ?? 60000)
    let up = false
    while (Date.now() < deadline && alive(daemon)) {
      try { if (JSON.parse(fs.readFileSync(path.join(store, CONNECTION_FILE), 'utf8')).pid === daemon.pid) { up = true; break } } catch {}
      await sleep(25)
    }
    if (!up) throw new Error(`rewindfs daemon (${cli}) did not start: ${fs.readFileSync(path.join(home, 'daemon.log'), 'utf8').slice(-2000)}`)
    client = await RewindClient.connect({ storeDir: store, timeoutMs: 120000 })
  } catch (e) {
    await close()
    throw e
  }
  return { root, dir, store, home, client, daemon, cli, close }
}
