/**
 * Where a workspace's store lives and how the CLI finds the daemon of a
 * workspace. Home: $REWINDFS_HOME, else /var/lib/rewindfs for root, else
 * $XDG_STATE_HOME/rewindfs (~/.local/state/rewindfs).
 *   <home>/stores/<basename>-<12 hex of sha256(realpath)>/   the store
 *   <home>/mounts/<24 hex of sha256(realpath)>.json          {workspace, store}
 */
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { createHash } from 'node:crypto'

/** The rewindfs home directory. */
export function rewindHome (): string {
  if (process.env.REWINDFS_HOME) return path.resolve(process.env.REWINDFS_HOME)
  if (process.getuid?.() === 0) return '/var/lib/rewindfs'
  return path.join(process.env.XDG_STATE_HOME ?? path.join(os.homedir(), '.local', 'state'), 'rewindfs')
}

function digest (dir: string): string { return createHash('sha256').update(dir).digest('hex') }

/** Default store directory of a workspace (absolute real path). */
export function defaultStore (workspace: string): string {
  return path.join(rewindHome(), 'stores', `${path.basename(workspace) || 'root'}-${digest(workspace).slice(0, 12)}`)
}

function registryFile (workspace: string): string {
  return path.join(rewindHome(), 'mounts', `${digest(workspace).slice(0, 24)}.json`)
}

/**
 * Records which store serves a workspace (written by `mount`; nothing is
 * written when it is already recorded). Throws the fs error when it cannot
 * be written (a full disk): the previous registration stays as it was.
 */
export function register (workspace: string, store: string): void {
  const f = registryFile(workspace)
  const text = JSON.stringify({ workspace, store }) + '\n'
  try { if (fs.readFileSync(f, 'utf8') === text) return } catch {}
  fs.mkdirSync(path.dirname(f), { recursive: true, mode: 0o700 })
  // a new file renamed over the old one: a failed write (full disk) leaves the old registration
  const tmp = `${f}.${process.pid}.tmp`
  try {
    fs.writeFileSync(tmp, text, { mode: 0o600 })
    fs.renameSync(tmp, f)
  } catch (e) {
    fs.rmSync(tmp, { force: true })
    throw e
  }
}

/** The store registered for a workspace, or null. */
export function registered (workspace: string): string | null {
  try { return (JSON.parse(fs.readFileSync(registryFile(workspace), 'utf8')) as { store: string }).store } catch { return null }
}

/**
 * The workspace that contains `from` (itself or an ancestor) and has a
 * registered store, or null. Walks up the path textually: nothing is
 * stat'ed, so a hung mount cannot block it.
 */
export function findWorkspace (from: string): { workspace: string, store: string } | null {
  let cur = path.resolve(from)
  for (;;) {
    const store = registered(cur)
    if (store) return { workspace: cur, store }
    const up = path.dirname(cur)
    if (up === cur) return null
    cur = up
  }
}
