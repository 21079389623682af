/**
 * Which workspace, store and daemon a command acts on: the -w option, the
 * registered workspace containing the current directory, the running
 * daemon of a store (its connection file), and a connected client.
 */
import fs from 'node:fs'
import path from 'node:path'
import { Argument, Option } from 'commander'
import { RewindClient, type ConnectOptions } from '../client/client.js'
import { discover, DiscoveryError } from '../client/discover.js'
import { HOOK_SOCKET } from '../proto/hook.js'
import { findWorkspace, registered } from '../daemon/paths.js'
import { CONNECTION_FILE } from '../proto/messages.js'
import { OfflineError } from '../daemon/offline.js'
import { CliError } from './errors.js'

/** The `-w, --workspace <dir>` option every command that acts on a workspace takes (a new Option per command). */
export function workspaceOption (): Option {
  return new Option('-w, --workspace <dir>', 'the workspace (default: the mounted workspace containing the current directory)')
}

/**
 * The optional `[dir]` operand of the commands whose only operand is the
 * workspace (unmount, status, verify, gc, mcp): `rewindfs unmount DIR` as
 * `rewindfs mount DIR`, the same as -w DIR. Read with workspaceFrom.
 */
export function workspaceArgument (): Argument {
  return new Argument('[dir]', 'the workspace, the same as -w DIR (default: the mounted workspace containing the current directory)')
}

/**
 * Options `o` with the `[dir]` operand (workspaceArgument) as `workspace`.
 * Throws CliError for an empty DIR (an unset shell variable) and for a DIR
 * and a -w that name different directories.
 */
export function workspaceFrom<T extends { workspace?: string }> (dir: string | undefined, o: T): T {
  if (dir === undefined) return o
  if (dir.trim() === '') throw new CliError('the workspace operand is an empty name (an unset shell variable?): give the directory, e.g. ~/project, or leave it out to use the workspace containing the current directory')
  if (o.workspace !== undefined && path.resolve(o.workspace) !== path.resolve(dir)) throw new CliError(`two workspaces given, ${dir} and -w ${o.workspace}: give one`)
  return { ...o, workspace: dir }
}

/** The workspace a command acts on: -w, else the registered workspace containing the cwd. Throws CliError naming what to do. */
export function locate (opts: { workspace?: string }): { workspace: string, store: string } {
  if (opts.workspace) {
    const ws = path.resolve(opts.workspace)
    const store = registered(ws)
    if (!store) {
      let exists = true
      try { fs.statSync(ws) } catch (e: any) { exists = e.code !== 'ENOENT' }
      throw new CliError(exists ? `${ws} has never been mounted by rewindfs: run rewindfs mount ${ws}` : `${ws} does not exist`)
    }
    return { workspace: ws, store }
  }
  const found = findWorkspace(process.cwd())
  if (!found) throw new CliError('not inside a rewindfs workspace: cd into a mounted workspace or give -w DIR')
  return found
}

/**
 * How a command reaches the daemon of a workspace: the client's connect
 * options, and the hook socket (PROTOCOL.md §7) with the token file to use
 * on it. `running` is false when the registry knows the workspace but no
 * daemon serves it.
 */
export interface DaemonRoute {
  workspace: string
  store: string
  running: boolean
  connect: ConnectOptions
  hook: { socket: string, token: string }
}

/**
 * The route to the daemon of the workspace a command acts on (-w, else the
 * current directory): this user's registry when it knows the workspace
 * and its daemon runs (a daemon this user started), else discovery from
 * the path (PROTOCOL.md §1 "Finding the daemon": a daemon started through
 * sudo, whose store and registry are root's), else the registry's entry
 * with `running` false. Throws CliError when neither knows the workspace,
 * or a connection file exists but cannot be used.
 */
export async function route (opts: { workspace?: string }): Promise<DaemonRoute> {
  let loc: { workspace: string, store: string } | null = null
  let missing: unknown = null
  try { loc = locate(opts) } catch (e) { missing = e }
  if (loc !== null && fs.existsSync(path.join(loc.store, CONNECTION_FILE))) {
    return { ...loc, running: true, connect: { storeDir: loc.store }, hook: { socket: path.join(loc.store, HOOK_SOCKET), token: path.join(loc.store, 'token') } }
  }
  let found
  try { found = await discover(path.resolve(opts.workspace ?? process.cwd())) } catch (e) {
    if (e instanceof DiscoveryError) throw new CliError(e.message)
    throw e
  }
  if (found !== null) return { workspace: found.workspace, store: found.store, running: true, connect: { workspace: found.workspace }, hook: { socket: found.hook ?? path.join(found.store, HOOK_SOCKET), token: found.token } }
  if (loc !== null) return { ...loc, running: false, connect: { storeDir: loc.store }, hook: { socket: path.join(loc.store, HOOK_SOCKET), token: path.join(loc.store, 'token') } }
  throw missing
}

/** A client connected to the workspace's daemon (120 s request timeout), found by route(); throws CliError when it is not running or cannot be reached. */
export async function connect (opts: { workspace?: string }): Promise<RewindClient> {
  const r = await route(opts)
  if (!r.running) throw new CliError(`the daemon for ${r.workspace} is not running: run rewindfs mount ${r.workspace}`)
  try {
    return await RewindClient.connect({ ...r.connect, timeoutMs: 120000 })
  } catch (e: any) {
    throw new CliError(`cannot reach the daemon for ${r.workspace} (${e.message}): if it died, run rewindfs mount ${r.workspace} to resume from its last checkpoint`)
  }
}

/** Runs `fn` with a connected client and closes it after. */
export async function withClient<T> (opts: { workspace?: string }, fn: (c: RewindClient) => Promise<T>): Promise<T> {
  const c = await connect(opts)
  try { return await fn(c) } finally { await c.close().catch(() => {}) }
}

/**
 * The store a command that also works on a stopped store acts on (--store,
 * else the workspace's), and the workspace of its running daemon (null
 * when none runs: the command then opens the store itself).
 */
export function storeOf (o: { workspace?: string, store?: string }): { store: string, daemon: string | null } {
  const loc = o.store !== undefined ? null : locate(o)
  const store = loc ? loc.store : path.resolve(o.store!)
  const d = runningDaemon(store)
  if (!d) return { store, daemon: null }
  const ws = loc?.workspace ?? d.workspace
  if (ws === null) throw new CliError(`the daemon (pid ${d.pid}) holds the store ${store} but its ${CONNECTION_FILE} names no workspace: run the command with -w WORKSPACE`)
  return { store, daemon: ws }
}

/** Runs `fn` on a stopped store; its errors (no store, locked, unknown checkpoint) become one line. */
export async function offline<T> (fn: () => Promise<T>): Promise<T> {
  try { return await fn() } catch (e) {
    if (e instanceof OfflineError) throw new CliError(e.message)
    throw e
  }
}

/** The running daemon that holds `store` (pid and workspace from its connection file), or null when none runs. */
export function runningDaemon (store: string): { pid: number, workspace: string | null } | null {
  let info: { pid?: unknown, workspace?: unknown }
  try { info = JSON.parse(fs.readFileSync(path.join(store, CONNECTION_FILE), 'utf8')) } catch { return null }
  if (typeof info.pid !== 'number' || !alive(info.pid)) return null
  return { pid: info.pid, workspace: typeof info.workspace === 'string' ? info.workspace : null }
}

/** True while process `pid` runs (a zombie waiting for its parent to reap it has exited). */
export function alive (pid: number): boolean {
  try { process.kill(pid, 0) } catch { return false }
  try { return fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.[0] !== 'Z' } catch { return false }
}
