/**
 * Typed errors of the store (store/). The `code` string is the contract
 * (documented in FORMAT.md "Errors"); messages may change between versions.
 *
 * Absence is a value, not an error: `StoreDb.get` returns `undefined` for a key
 * that is not there. A block that is *referenced* but missing or unreadable is
 * corruption and raises `CorruptStoreError`.
 */

/** Stable error codes raised by store/. */
export type StoreErrorCode = 'E_CORRUPT' | 'E_LOCKED' | 'E_FORMAT' | 'E_CLOSED' | 'E_NO_SPACE' | 'E_IO'

/** Context carried by store errors; every field is optional and only set when known. */
export interface StoreErrorContext {
  /** file or directory the error is about (pack file, LevelDB directory) */
  path?: string
  /** block the error is about */
  blockId?: number
  /** pack the error is about */
  pack?: number
  /** byte offset inside the pack */
  offset?: number
  /** record kind and key inside the metadata database */
  kind?: string
  key?: string
  /** the underlying error, if one was thrown by a lower layer */
  cause?: unknown
  /** errno name of the underlying system error (ENOSPC, EIO, ...) */
  errno?: string
}

/** Base class of every error the store throws on purpose. */
export class StoreError extends Error {
  readonly code: StoreErrorCode
  readonly context: StoreErrorContext

  constructor (code: StoreErrorCode, message: string, context: StoreErrorContext = {}) {
    super(message, context.cause === undefined ? undefined : { cause: context.cause })
    this.name = new.target.name
    this.code = code
    this.context = context
  }
}

/**
 * `E_CORRUPT`: the store's bytes or records contradict each other — an unknown
 * BlockId, a pack shorter than an indexed block, a bad pack header, an
 * undecodable metadata value, or a LevelDB that reports corruption.
 * Remedy: stop writing, run `rewindfs verify` (and `--repair` to rebuild the
 * index by scanning the packs).
 */
export class CorruptStoreError extends StoreError {
  constructor (message: string, context: StoreErrorContext = {}) {
    super('E_CORRUPT', message, context)
  }
}

/** `E_LOCKED`: another process (usually another rewindfs daemon) holds the store's LevelDB lock. */
export class StoreLockedError extends StoreError {
  constructor (message: string, context: StoreErrorContext = {}) {
    super('E_LOCKED', message, context)
  }
}

/** `E_FORMAT`: the store was written in a format version this build does not understand (meta `format`). */
export class StoreFormatError extends StoreError {
  constructor (message: string, context: StoreErrorContext = {}) {
    super('E_FORMAT', message, context)
  }
}

/** `E_CLOSED`: an operation was called on a store object after `close()`. */
export class StoreClosedError extends StoreError {
  constructor (message: string, context: StoreErrorContext = {}) {
    super('E_CLOSED', message, context)
  }
}

/**
 * `E_NO_SPACE`: the store's filesystem is full, or has less free space than
 * the reserve kept for checkpoints (store/space.ts). Nothing sealed
 * was changed; the operation that got it had no effect. Remedy: free space on
 * that filesystem (delete files there); writes work again at once.
 * `rewindfs gc` helps only when there are abandoned branches or unpinned
 * checkpoints of ended runs: it keeps every ancestor of live heads, so on a
 * single line of checkpoints it frees nothing.
 */
export class StoreNoSpaceError extends StoreError {
  constructor (message: string, context: StoreErrorContext = {}) {
    super('E_NO_SPACE', message, context)
  }
}

/** `E_IO`: a read or write of a store file failed with an I/O error (context.errno names it). */
export class StoreIoError extends StoreError {
  constructor (message: string, context: StoreErrorContext = {}) {
    super('E_IO', message, context)
  }
}

/**
 * How to get space back, for messages. Honest about gc: it keeps every
 * ancestor of live branches' heads, so it frees only abandoned branches and
 * unpinned checkpoints of ended runs.
 */
export const NO_SPACE_ADVICE = 'free space on that filesystem (delete files there, or grow it; rewindfs gc helps only if there are abandoned branches or unpinned checkpoints of ended runs, it never removes the current line of checkpoints)'

/** errno names that mean "the filesystem is full". */
const NO_SPACE = new Set(['ENOSPC', 'EDQUOT'])

/**
 * A store error for a failed system call on a store file: StoreNoSpaceError
 * for ENOSPC/EDQUOT (LevelDB says "No space left on device" in its message),
 * StoreIoError for the rest. A StoreError is returned as it is. `what` says
 * what was being done ("append to pack /s/packs/00000003.pack").
 */
export function storeIoError (err: unknown, what: string, context: StoreErrorContext = {}): StoreError {
  if (err instanceof StoreError) return err
  const e = err as { code?: string, message?: string }
  const msg = String(e?.message ?? err)
  const errno = typeof e?.code === 'string' && /^E[A-Z0-9]+$/.test(e.code) ? e.code : /No space left on device/i.test(msg) ? 'ENOSPC' : undefined
  if (errno !== undefined && NO_SPACE.has(errno)) {
    return new StoreNoSpaceError(`${what} failed: the store's filesystem is full (${msg}); ${NO_SPACE_ADVICE}, then try again`, { ...context, errno, cause: err })
  }
  return new StoreIoError(`${what} failed: ${msg}`, { ...context, ...(errno ? { errno } : {}), cause: err })
}

/** True when `err` says the store's filesystem is full (StoreNoSpaceError, or a raw ENOSPC/EDQUOT). */
export function isNoSpace (err: unknown): boolean {
  const code = (err as { code?: unknown })?.code
  return code === 'E_NO_SPACE' || code === 'ENOSPC' || code === 'EDQUOT'
}
