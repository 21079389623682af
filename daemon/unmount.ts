/**
 * The daemon's unmount (its state UNMOUNTING, lifecycle.ts; daemon.ts
 * drives it) apart from tearing down: the room check of step 1, writing
 * the final state into the directory (or discarding it) in step 2, and the
 * outcome file the CLI reads.
 */
import fs from 'node:fs'
import path from 'node:path'
import { StoreNoSpaceError, isNoSpace } from '../store/errors.js'
import { freeBytes } from '../store/space.js'
import { FULL_BELOW } from '../store/diskfull.js'
import { writeBack, type WriteBackOptions } from '../fs/writeback.js'
import { xattrIo } from '../fuse/xattr.js'

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

/** The log line when unmount could not freeze the paths it did not change (WriteBackStats.unfrozen). */
function unfrozenWarning (dir: string, reason: string): string {
  return `rewindfs: warning: the store had no space to keep a copy of the files the unmount did not change (${reason}); checkpoints of this session read them from ${dir}, so change ${dir} only through a mount, or free space and run rewindfs mount then unmount again to freeze them`
}

/** What writeFinalState works on: the unmounted workspace, its store, the directory (and an fd opened on it before the mount). */
export type FinalStateOptions = Pick<WriteBackOptions, 'ws' | 'gens' | 'db' | 'blocks' | 'dir' | 'dirFd' | 'log'>

/**
 * Unmount, step 2, once the kernel has let go of the directory: writes the
 * final state back into it (fs/writeback.ts), or with `discard` leaves its
 * original content and only freezes it, then saves the state record. Fills
 * `outcome` (errors, warnings, ok). When write-back cannot write every
 * path, the store stays marked as mounted, so the next mount resumes from
 * the "unmount" checkpoint instead of trusting the half-written directory.
 * Throws when the state record cannot be written (a full disk: the caller
 * says how to resume).
 */
export async function writeFinalState (o: FinalStateOptions, discard: boolean, outcome: UnmountOutcome): Promise<void> {
  const { ws, gens, db, blocks, dir, dirFd, log } = o
  const state = gens.state
  if (!discard) {
    let r
    try {
      r = await writeBack({ ws, gens, db, blocks, dir, dirFd, log, xattrs: xattrIo })
    } catch (e: any) {
      r = { written: 0, removed: 0, frozen: 0, errors: [`write-back stopped before changing the directory: ${e.message}`] }
    }
    outcome.errors = r.errors
    if (r.errors.length === 0) {
      log(`rewindfs: wrote the final state back into ${dir} (${r.written} paths written, ${r.removed} removed, ${r.frozen} frozen)`)
      if (r.unfrozen !== undefined) { log(unfrozenWarning(dir, r.unfrozen)); (outcome.warnings ??= []).push(unfrozenWarning(dir, r.unfrozen).replace(/^rewindfs: warning: /, '')) }
      state.session++
      state.mounted = false
    } else {
      outcome.ok = false
      log(`rewindfs: write-back into ${dir} failed for ${r.errors.length} paths; the store keeps the final state as checkpoint ${state.head} and the next mount resumes from it:\n  ${r.errors.slice(0, 20).join('\n  ')}`)
    }
  } else {
    // the directory keeps the session's lower content: frozen too, for the checkpoints made meanwhile
    try {
      const r = await writeBack({ ws, gens, db, blocks, dir, dirFd, log, xattrs: xattrIo, apply: false })
      log(`rewindfs: discarded; ${dir} holds its original content (${r.frozen} paths frozen)`)
      if (r.unfrozen !== undefined) { log(unfrozenWarning(dir, r.unfrozen)); (outcome.warnings ??= []).push(unfrozenWarning(dir, r.unfrozen).replace(/^rewindfs: warning: /, '')) }
      state.session++
    } catch (e: any) {
      // the next mount goes on in this session, reading the directory (as before freezing existed)
      log(`rewindfs: discarded; ${dir} holds its original content, but freezing it failed (${e.message}): the checkpoints of this session read it from the directory, so edit it only through a mount`)
    }
    state.mounted = false
  }
  await gens.saveState(ws)
}
