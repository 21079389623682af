/**
 * Pieces of the daemon's unmount (daemon.ts) that deal with a full disk and
 * with the outcome file the CLI reads.
 */
import fs from 'node:fs'
import path from 'node:path'
import { StoreNoSpaceError, isNoSpace } from '../store/errors.js'
import { freeBytes } from '../store/space.js'
import { FULL_BELOW } from '../store/diskfull.js'

/** Name of the file in the store where the daemon leaves the outcome of its last unmount. */
export const UNMOUNT_FILE = 'unmount.json'

/** What the last unmount did (`<store>/unmount.json`). */
export interface UnmountOutcome {
  ok: boolean
  discarded: boolean
  /** checkpoint holding the final state */
  checkpoint: number | null
  /** paths write-back could not write, with the reason; or why the unmount failed */
  errors: string[]
  /** ms since the epoch */
  time: number
  /** true: the unmount was abandoned before anything was torn down; the daemon still serves the workspace */
  mounted?: boolean
  /** what the user should know although the unmount succeeded (e.g. files not frozen for lack of space) */
  warnings?: string[]
}

/**
 * Throws StoreNoSpaceError when the store's filesystem has less than
 * FULL_BELOW (1 MiB) free: step 2 of the unmount writes the final state
 * record (and write-back's frozen copies) into the store, and must not
 * start what it cannot finish.
 */
export function checkRoom (store: string): void {
  const free = freeBytes(store)
  if (free !== null && free < FULL_BELOW) {
    throw new StoreNoSpaceError(`the store's filesystem (${store}) has ${free} bytes free, too little to record the end of the unmount`, { path: store, errno: 'ENOSPC' })
  }
}

/**
 * The error an unmount that failed in step 1 throws, after logging one
 * line: for a full disk "unmount failed: the store's filesystem is full;
 * free space, then unmount again (nothing is lost)", as E_NO_SPACE.
 */
export function unmountRefused (e: unknown, store: string, log: (m: string) => void): Error {
  if (isNoSpace(e)) {
    const free = freeBytes(store)
    const msg = `unmount failed: the store's filesystem (${store}) is full${free === null ? '' : ` (${free} bytes free)`}, the final checkpoint cannot be written; ` +
      'free space there, then unmount again (nothing is lost: the workspace stays mounted and in use)'
    log(`rewindfs: ${msg}`)
    return new StoreNoSpaceError(msg, { path: store, errno: 'ENOSPC', cause: e })
  }
  const err = e instanceof Error ? e : new Error(String(e))
  log(`rewindfs: unmount failed before anything was unmounted: ${err.message}; the workspace stays mounted and in use: unmount again (nothing is lost)`)
  return err
}

/**
 * Writes `outcome` to `<store>/unmount.json` atomically (a temporary file
 * renamed over it): the file is the whole outcome or absent, never empty.
 * A failure (full disk) is logged, not thrown: the CLI then says what it can.
 */
export function writeOutcome (store: string, outcome: UnmountOutcome, log: (m: string) => void): void {
  const file = path.join(store, UNMOUNT_FILE)
  const tmp = `${file}.tmp`
  try {
    fs.writeFileSync(tmp, JSON.stringify(outcome) + '\n', { mode: 0o600 })
    fs.renameSync(tmp, file)
  } catch (e: any) {
    try { fs.rmSync(tmp, { force: true }) } catch {}
    log(`rewindfs: cannot write ${file} (${e.message}); the unmount ${outcome.ok ? 'succeeded' : 'failed: ' + outcome.errors.slice(0, 3).join('; ')}`)
  }
}
