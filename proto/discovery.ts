/**
 * The discovery rule: how a client finds the daemon of a workspace from a
 * path (PROTOCOL.md §1 "Finding the daemon"). The rule only; the file system
 * side is client/discover.ts (clients) and daemon/discovery.ts (the daemon's
 * half), and client/python/rewindfs/discover.py implements the same rule.
 *
 *   runtime directories, in order: $REWINDFS_RUNTIME_DIR alone when set;
 *   else $XDG_RUNTIME_DIR/rewindfs (when XDG_RUNTIME_DIR is set),
 *   /run/rewindfs, /tmp/rewindfs-<uid>
 *
 *   key(W) = the first 32 lowercase hex digits of sha256(UTF-8 bytes of W),
 *   W an absolute path without a trailing '/'
 *
 *   R/<key>.json  the connection file: ConnectionInfo + {store, token, hook?}
 *   R/<key>.token a copy of the token (64 hex digits and a newline)
 *   R/<key>.hook  the daemon's hook socket for this workspace (PROTOCOL.md §7)
 *   R/<key>.offline  the offline record: what the hook needs while the daemon
 *                 is down (OfflineRecord); left when the daemon stops
 *
 * No Node-only types: sha256 is WebCrypto's (globalThis.crypto.subtle).
 */
import { isConnectionInfo, type ConnectionInfo } from './messages.js'

/** Environment variable naming the one runtime directory to use (daemon and clients). */
export const RUNTIME_DIR_ENV = 'REWINDFS_RUNTIME_DIR'
/** Runtime directory of a daemon running as root (mode 0755; each published file is 0600 and owned by the user who mounted). */
export const ROOT_RUNTIME_DIR = '/run/rewindfs'

/** A published connection file: where the daemon listens, its store and a token file the user who mounted can read. */
export interface PublishedConnection extends ConnectionInfo {
  /** absolute path of the store directory */
  store: string
  /** absolute path of the token copy `R/<key>.token` */
  token: string
  /** absolute path of the hook socket `R/<key>.hook` (PROTOCOL.md §7), given to the same user; absent when the daemon has none there */
  hook?: string
}

/**
 * The offline record `R/<key>.offline`: written with the connection file and
 * left when the daemon stops, so that the harness hook of the user who
 * mounted (through sudo, whose own registry does not know the workspace)
 * can tell the workspace from any directory while its daemon is down, and
 * refuse the commands of the external-command list (PROTOCOL.md §1).
 */
export interface OfflineRecord {
  /** absolute path of the workspace */
  workspace: string
  /** absolute path of its store directory */
  store: string
  /** the store's external-command list when the daemon started, in the file's form (effects/patterns.ts); null when it could not be read (the hook then refuses every command) */
  externalCommands: { version: 1; patterns: unknown[] } | null
}

/** True when `x` has the shape of a published connection file. */
export function isPublishedConnection (x: unknown): x is PublishedConnection {
  if (!isConnectionInfo(x)) return false
  const y = x as unknown as Record<string, unknown>
  return typeof y.store === 'string' && typeof y.token === 'string' && (y.hook === undefined || typeof y.hook === 'string')
}

/**
 * The runtime directories a client looks in, in order: `env.REWINDFS_RUNTIME_DIR`
 * alone when set; else `$XDG_RUNTIME_DIR/rewindfs` (when set), `/run/rewindfs`,
 * `/tmp/rewindfs-<uid>`. `uid` is the caller's user id.
 */
export function runtimeDirs (env: Record<string, string | undefined>, uid: number): string[] {
  const own = env[RUNTIME_DIR_ENV]
  if (own !== undefined && own !== '') return [own]
  const out: string[] = []
  if (env.XDG_RUNTIME_DIR !== undefined && env.XDG_RUNTIME_DIR !== '') out.push(joinPath(env.XDG_RUNTIME_DIR, 'rewindfs'))
  out.push(ROOT_RUNTIME_DIR, `/tmp/rewindfs-${uid}`)
  return out
}

/**
 * The runtime directory a daemon publishes in: `REWINDFS_RUNTIME_DIR` when
 * set; else /run/rewindfs for root; else `$XDG_RUNTIME_DIR/rewindfs`; else
 * `/tmp/rewindfs-<uid>`. Always one of runtimeDirs(env, uid) of the user who
 * mounted (for root under sudo: /run/rewindfs is in every user's list).
 */
export function daemonRuntimeDir (env: Record<string, string | undefined>, uid: number): string {
  const own = env[RUNTIME_DIR_ENV]
  if (own !== undefined && own !== '') return own
  if (uid === 0) return ROOT_RUNTIME_DIR
  if (env.XDG_RUNTIME_DIR !== undefined && env.XDG_RUNTIME_DIR !== '') return joinPath(env.XDG_RUNTIME_DIR, 'rewindfs')
  return `/tmp/rewindfs-${uid}`
}

/** `workspace` without trailing slashes ('/' stays '/'). */
export function trimSlashes (workspace: string): string {
  const t = workspace.replace(/\/+$/, '')
  return t === '' ? '/' : t
}

/**
 * The discovery key of an absolute workspace path: the first 32 lowercase
 * hex digits of the SHA-256 (FIPS 180-4) of its UTF-8 bytes, trailing '/'
 * removed first. E.g. key('/home/a/proj') = sha256('/home/a/proj')[0..32].
 */
export async function discoveryKey (workspace: string): Promise<string> {
  const data = new TextEncoder().encode(trimSlashes(workspace))
  const digest = new Uint8Array(await globalThis.crypto.subtle.digest('SHA-256', data))
  let hex = ''
  for (let i = 0; i < 16; i++) hex += digest[i].toString(16).padStart(2, '0')
  return hex
}

/** Names of the connection file, the token copy, the hook socket and the offline record for key `key`. */
export function publishedNames (key: string): { json: string; token: string; hook: string; offline: string } {
  return { json: `${key}.json`, token: `${key}.token`, hook: `${key}.hook`, offline: `${key}.offline` }
}

/** `p` and its ancestors up to '/', `p` first (textual: nothing is stat'ed). `p` is absolute. */
export function ancestors (p: string): string[] {
  const out: string[] = []
  let cur = trimSlashes(p)
  for (;;) {
    out.push(cur)
    if (cur === '/') return out
    const i = cur.lastIndexOf('/')
    cur = i <= 0 ? '/' : cur.slice(0, i)
  }
}

function joinPath (dir: string, name: string): string {
  return `${trimSlashes(dir) === '/' ? '' : trimSlashes(dir)}/${name}`
}
