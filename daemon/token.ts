/**
 * Local credentials of the daemon: the token file `<storeDir>/token` (32
 * random bytes as 64 lowercase hex digits and a newline, mode 0600) and the
 * connection file `<storeDir>/daemon.json` (proto/messages.ts ConnectionInfo).
 * A token file that group or others can read or write is refused: anyone who
 * reads it can restore the workspace.
 */
import { randomBytes } from 'node:crypto'
import { promises as fs, constants as fsc } from 'node:fs'
import * as path from 'node:path'
import { CONNECTION_FILE, TOKEN_FILE, type ConnectionInfo } from '../proto/messages.js'

const TOKEN_RE = /^[0-9a-f]{64}$/

/** A token file that is missing, malformed, or too open. */
export class TokenError extends Error {
  /** why: 'missing' | 'unsafe' (mode, owner, symlink, not a file) | 'malformed' | 'io' */
  constructor (message: string, readonly file: string, readonly reason: 'missing' | 'unsafe' | 'malformed' | 'io' = 'unsafe') {
    super(message)
    this.name = 'TokenError'
  }
}

/** Path of the token file in `storeDir`. */
export function tokenPath (storeDir: string): string {
  return path.join(storeDir, TOKEN_FILE)
}

/** Path of the connection file in `storeDir`. */
export function connectionPath (storeDir: string): string {
  return path.join(storeDir, CONNECTION_FILE)
}

/** A new random token: 32 bytes as 64 lowercase hex digits. */
export function newToken (): string {
  return randomBytes(32).toString('hex')
}

/**
 * Read and check a token file: it must be a regular file owned by this user
 * (when the platform has uids), with no group or other permission bits
 * (mode & 0o077 === 0), holding 64 hex digits (a trailing newline allowed).
 * Throws TokenError with a message saying what is wrong and how to fix it.
 */
export async function readTokenFile (file: string): Promise<string> {
  // Open first and check the open descriptor, so the file checked is the file read.
  let fh: fs.FileHandle
  try {
    fh = await fs.open(file, fsc.O_RDONLY | (fsc.O_NOFOLLOW ?? 0))
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code
    if (code === 'ENOENT') throw new TokenError(`token file ${file} does not exist`, file, 'missing')
    if (code === 'ELOOP') throw new TokenError(`token file ${file} is a symbolic link; refusing to use it`, file)
    throw new TokenError(`cannot open token file ${file}: ${(err as Error).message}`, file, 'io')
  }
  try {
    const st = await fh.stat()
    if (!st.isFile()) throw new TokenError(`token file ${file} is not a regular file`, file)
    if ((st.mode & 0o077) !== 0) {
      const mode = (st.mode & 0o777).toString(8).padStart(4, '0')
      throw new TokenError(`token file ${file} has mode ${mode}: group or others can access it; refusing to use it (run: chmod 600 ${file})`, file)
    }
    if (typeof process.getuid === 'function' && st.uid !== process.getuid()) {
      throw new TokenError(`token file ${file} is owned by uid ${st.uid}, not by this user (uid ${process.getuid()}); refusing to use it`, file)
    }
    const text = (await fh.readFile('utf8')).replace(/\r?\n$/, '')
    if (!TOKEN_RE.test(text)) throw new TokenError(`token file ${file} does not hold a token (64 lowercase hex digits)`, file, 'malformed')
    return text
  } finally {
    await fh.close()
  }
}

/**
 * Write a new token file with mode 0600, replacing any existing one
 * atomically (temporary file in the same directory, then rename). Returns the token.
 */
export async function writeTokenFile (file: string, token: string = newToken()): Promise<string> {
  if (!TOKEN_RE.test(token)) throw new TokenError('a token is 64 lowercase hex digits', file, 'malformed')
  const tmp = `${file}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`
  const fh = await fs.open(tmp, fsc.O_WRONLY | fsc.O_CREAT | fsc.O_EXCL, 0o600)
  try {
    await fh.chmod(0o600) // the umask cannot widen it, but be explicit
    await fh.writeFile(token + '\n', 'utf8')
    await fh.sync()
  } finally {
    await fh.close()
  }
  try {
    await fs.rename(tmp, file)
  } catch (err) {
    await fs.rm(tmp, { force: true })
    throw err
  }
  return token
}

/**
 * The token of a store: read `<storeDir>/token` if it exists (checked as by
 * readTokenFile; a too-open file is an error, not silently replaced), else
 * create it.
 */
export async function loadOrCreateToken (storeDir: string): Promise<string> {
  const file = tokenPath(storeDir)
  try {
    return await readTokenFile(file)
  } catch (err) {
    if (err instanceof TokenError && err.reason === 'missing') return await writeTokenFile(file)
    throw err
  }
}

/** Write `<storeDir>/daemon.json` (mode 0600) atomically. */
export async function writeConnectionFile (storeDir: string, info: ConnectionInfo): Promise<void> {
  const file = connectionPath(storeDir)
  const tmp = `${file}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`
  await fs.writeFile(tmp, JSON.stringify(info) + '\n', { mode: 0o600, flag: 'wx' })
  await fs.rename(tmp, file)
}

/** Remove `<storeDir>/daemon.json` if it names this process (at shutdown). */
export async function removeConnectionFile (storeDir: string, pid: number = process.pid): Promise<void> {
  const file = connectionPath(storeDir)
  try {
    const info = JSON.parse(await fs.readFile(file, 'utf8')) as Partial<ConnectionInfo>
    if (info.pid === pid) await fs.rm(file, { force: true })
  } catch { /* absent or unreadable: nothing to remove */ }
}
