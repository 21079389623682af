/**
 * Finding the daemon of a workspace from a path inside it (PROTOCOL.md §1
 * "Finding the daemon"; the rule is proto/discovery.ts):
 *
 *   from a path P: A = realpath(P) when it resolves, else P made absolute;
 *   for A and then each of its ancestors up to '/', for each runtime
 *   directory R: the first `R/key(A).json` that exists and names A as its
 *   workspace is the connection file; its `token` names the token file.
 *
 * A connection file is refused unless it is a regular file owned by the
 * caller or root, or found in a directory owned by the caller or root that
 * nobody else can write (so nobody else can point a client at their own
 * daemon).
 */
import { promises as fs } from 'node:fs'
import * as path from 'node:path'
import { ancestors, discoveryKey, isPublishedConnection, publishedNames, runtimeDirs, type PublishedConnection } from '../proto/discovery.js'

export { discoveryKey, runtimeDirs } from '../proto/discovery.js'

/** A connection file found by discovery. */
export interface Discovered extends PublishedConnection {
  /** the connection file this came from */
  file: string
}

/** The error discovery throws for a connection file that exists but cannot be used (says which and what to do). */
export class DiscoveryError extends Error {
  constructor (message: string, readonly file: string) {
    super(message)
    this.name = 'DiscoveryError'
  }
}

/**
 * The daemon serving the workspace that contains `from` (a workspace, or any
 * path inside one, existing or not), by the rule above; null when no
 * connection file is found. `env` gives REWINDFS_RUNTIME_DIR and
 * XDG_RUNTIME_DIR (default process.env). Throws DiscoveryError when a
 * connection file exists but is unreadable, refused or malformed.
 */
export async function discover (from: string, env: Record<string, string | undefined> = process.env): Promise<Discovered | null> {
  let start = path.resolve(from)
  try { start = await fs.realpath(start) } catch { /* a path that does not resolve is taken as written */ }
  const me = process.getuid?.() ?? 0
  const dirs = runtimeDirs(env, me).map(d => path.resolve(d))
  for (const a of ancestors(start)) {
    const names = publishedNames(await discoveryKey(a))
    for (const r of dirs) {
      const file = path.join(r, names.json)
      let text: string
      try {
        const st = await fs.lstat(file)
        if (!st.isFile()) throw new DiscoveryError(`connection file ${file} of ${a} is not a regular file; refusing it (remove it, or set REWINDFS_RUNTIME_DIR)`, file)
        if (st.uid !== me && st.uid !== 0 && !(await trustedDir(r, me))) {
          throw new DiscoveryError(`connection file ${file} of ${a} is owned by uid ${st.uid}, neither this user (uid ${me}) nor root; refusing it (remove it, or set REWINDFS_RUNTIME_DIR)`, file)
        }
        text = await fs.readFile(file, 'utf8')
      } catch (e) {
        if (e instanceof DiscoveryError) throw e
        const code = (e as NodeJS.ErrnoException).code
        if (code === 'ENOENT' || code === 'ENOTDIR') continue
        throw new DiscoveryError(`cannot read the connection file ${file} of ${a}: ${(e as Error).message} (only the user who mounted the workspace may read it)`, file)
      }
      let info: unknown
      try { info = JSON.parse(text) } catch { throw new DiscoveryError(`connection file ${file} of ${a} is not JSON; mount the workspace again`, file) }
      if (!isPublishedConnection(info)) throw new DiscoveryError(`connection file ${file} of ${a} is malformed; mount the workspace again`, file)
      if (info.workspace !== a) continue
      return { ...info, file }
    }
  }
  return null
}

/** True when `dir` is owned by `uid` or root and no one else can write to it. */
async function trustedDir (dir: string, uid: number): Promise<boolean> {
  try {
    const st = await fs.lstat(dir)
    return st.isDirectory() && (st.uid === uid || st.uid === 0) && (st.mode & 0o022) === 0
  } catch { return false }
}
