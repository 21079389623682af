/**
 * The daemon's half of discovery (PROTOCOL.md §1 "Finding the daemon",
 * client/discover.ts): it publishes `R/<key>.json` (the connection file with
 * the store and the token file's path), `R/<key>.token` (a copy of the
 * token) and `R/<key>.offline` (the offline record, left when it stops: the
 * hook's way to know the workspace while the daemon is down) in its runtime
 * directory R, and gives them, and the unix socket when there is one, to
 * the user who mounted: the daemon's own user, or, for a daemon running as
 * root under sudo, SUDO_UID/SUDO_GID. The files are mode 0600: nobody else
 * can read them (root aside).
 *
 * Runtime directory (proto/discovery.ts daemonRuntimeDir): $REWINDFS_RUNTIME_DIR
 * when set; else /run/rewindfs for root (mode 0755, so each user reaches the
 * file given to them); else $XDG_RUNTIME_DIR/rewindfs, else
 * /tmp/rewindfs-<uid> (mode 0700, refused when owned by another user).
 */
import { randomBytes } from 'node:crypto'
import { promises as fs } from 'node:fs'
import { connect } from 'node:net'
import * as path from 'node:path'
import { daemonRuntimeDir as runtimeDirFor, discoveryKey, publishedNames, type OfflineRecord, type PublishedConnection } from '../proto/discovery.js'
import type { ConnectionInfo } from '../proto/messages.js'
import { loadExternalPatterns } from '../effects/patterns.js'

/** A user who gets access to the connection file, token copy and socket. */
export interface AccessUser { uid: number, gid: number }

/** What publishConnection wrote, for unpublishConnection. */
export interface Published { json: string, token: string, pid: number, hook: { path: string, close: () => Promise<void> } | null }

/** Starts a listening hook socket at a path (daemon/hook-socket.ts startHookSocket, given to the user who mounted). */
export type HookListener = (file: string) => Promise<{ path: string, close: () => Promise<void> }>

/**
 * The user who mounted: for a daemon running as root with SUDO_UID and
 * SUDO_GID set (decimal, not 0) that user; otherwise null (the daemon's own
 * user, nothing to give away).
 */
export function accessUser (env: NodeJS.ProcessEnv = process.env, uid: number = process.getuid?.() ?? -1): AccessUser | null {
  if (uid !== 0) return null
  const u = env.SUDO_UID
  const g = env.SUDO_GID
  if (u === undefined || g === undefined || !/^[1-9][0-9]*$/.test(u) || !/^[0-9]+$/.test(g)) return null
  return { uid: Number(u), gid: Number(g) }
}

/** The runtime directory this daemon publishes in (see the module comment), absolute. */
export function daemonRuntimeDir (env: NodeJS.ProcessEnv = process.env, uid: number = process.getuid?.() ?? 0): string {
  return path.resolve(runtimeDirFor(env, uid))
}

async function ensureDir (dir: string, uid: number): Promise<void> {
  const shared = uid === 0
  await fs.mkdir(dir, { recursive: true, mode: shared ? 0o755 : 0o700 })
  const st = await fs.lstat(dir)
  if (!st.isDirectory()) throw new Error(`runtime directory ${dir} is not a directory: remove it, or set REWINDFS_RUNTIME_DIR`)
  if (st.uid !== uid) throw new Error(`runtime directory ${dir} belongs to uid ${st.uid}, not to this user (uid ${uid}): remove it, or set REWINDFS_RUNTIME_DIR`)
  if ((st.mode & 0o022) !== 0) await fs.chmod(dir, shared ? 0o755 : 0o700)
}

async function writePrivate (file: string, text: string, access: AccessUser | null): Promise<void> {
  const tmp = `${file}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`
  const fh = await fs.open(tmp, 'wx', 0o600)
  try {
    await fh.chmod(0o600)
    if (access !== null) await fh.chown(access.uid, access.gid)
    await fh.writeFile(text, 'utf8')
  } finally { await fh.close() }
  try { await fs.rename(tmp, file) } catch (e) { await fs.rm(tmp, { force: true }); throw e }
}

/**
 * Publish where the daemon of `info.workspace` listens, for discovery:
 * `R/<key>.offline` (the offline record: the workspace, the store and
 * `externalCommands`, the store's external-command list or null),
 * `R/<key>.token` (the token), with `hook` the hook socket `R/<key>.hook`
 * (started by `hook`, which gives it to the user who mounted; left out
 * when it cannot listen there, e.g. a path longer than a unix socket's
 * 107 bytes: the hook then uses `<store>/hook.sock`), and `R/<key>.json`
 * ({...info, store, token: path of the copy, hook: the socket's path}),
 * both files 0600, owned by `access` when given. Written atomically
 * (temporary file, rename), the connection file last. Throws the fs error
 * when they cannot be written.
 */
export async function publishConnection (o: { info: ConnectionInfo, store: string, token: string, access: AccessUser | null, dir?: string, hook?: HookListener, externalCommands?: OfflineRecord['externalCommands'] }): Promise<Published> {
  const dir = o.dir ?? daemonRuntimeDir()
  await ensureDir(dir, process.getuid?.() ?? 0)
  const names = publishedNames(await discoveryKey(o.info.workspace))
  const token = path.join(dir, names.token)
  const json = path.join(dir, names.json)
  const offline: OfflineRecord = { workspace: o.info.workspace, store: o.store, externalCommands: o.externalCommands ?? null }
  await writePrivate(path.join(dir, names.offline), JSON.stringify(offline) + '\n', o.access)
  await writePrivate(token, o.token + '\n', o.access)
  let hook: Published['hook'] = null
  if (o.hook !== undefined) { try { hook = await o.hook(path.join(dir, names.hook)) } catch { hook = null } }
  const published: PublishedConnection = { ...o.info, store: o.store, token, ...(hook !== null ? { hook: hook.path } : {}) }
  try { await writePrivate(json, JSON.stringify(published) + '\n', o.access) } catch (e) { await hook?.close().catch(() => {}); throw e }
  return { json, token, pid: o.info.pid, hook }
}

/**
 * The external-command list of `store` (effects/patterns.ts: its config
 * file, else the defaults) in the file's form, for the offline record;
 * null when the file cannot be read or is malformed.
 */
export function externalCommandsOf (store: string): OfflineRecord['externalCommands'] {
  try { return { version: 1, patterns: loadExternalPatterns(store) } } catch { return null }
}

/**
 * Stop the published hook socket, and remove the connection file and the
 * token copy if the connection file still names this daemon. The offline
 * record stays (the next publish replaces it; /run is emptied at boot).
 */
export async function unpublishConnection (p: Published): Promise<void> {
  await p.hook?.close().catch(() => {})
  try {
    const info = JSON.parse(await fs.readFile(p.json, 'utf8')) as { pid?: unknown }
    if (info.pid !== p.pid) return
  } catch { return }
  await fs.rm(p.json, { force: true })
  await fs.rm(p.token, { force: true })
}

/** Give the unix socket to `access` (mode stays 0600), so the user who mounted can connect. */
export async function grantSocket (socketPath: string, access: AccessUser | null): Promise<void> {
  if (access !== null) await fs.chown(socketPath, access.uid, access.gid)
}

/**
 * Remove a unix socket left at `socketPath` by a daemon that died (a
 * connection to it is refused), so the new daemon can listen there. A live
 * socket, or a file that is not a socket, is left alone (listen then fails
 * with EADDRINUSE).
 */
export async function clearStaleSocket (socketPath: string): Promise<void> {
  let st
  try { st = await fs.lstat(socketPath) } catch { return }
  if (!st.isSocket()) return
  const live = await new Promise<boolean>(resolve => {
    const c = connect(socketPath)
    c.once('connect', () => { c.destroy(); resolve(true) })
    c.once('error', () => resolve(false))
  })
  if (!live) await fs.rm(socketPath, { force: true })
}
