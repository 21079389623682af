/**
 * Typed errors of the store (daemon/store). The `code` string is the contract
 * (documented in FORMAT.md "Errors"); messages may change between versions.
 *
 * Absence is a value, not an error: `StoreDb.get` returns `undefined` for a key
 * that is not there. A block that is *referenced* but missing or unreadable is
 * corruption and raises `CorruptStoreError`.
 */

/** Stable error codes raised by daemon/store. */
export type StoreErrorCode = 'E_CORRUPT' | 'E_LOCKED' | 'E_FORMAT' | 'E_CLOSED'

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
