/**
 * StoreDb: the store's metadata database, one LevelDB (classic-level) at
 * `<storeDir>/meta`. Key layout and value encoding are frozen in FORMAT.md
 * "Metadata database".
 *
 * - Keys are utf8 strings `!<kind>!<key>` — the same bytes abstract-level's
 *   `sublevel(kind)` would write, so a plain `db.sublevel(kind)` reads them.
 * - Integer keys are 16 lowercase hex digits (`intKey`), so byte order is
 *   numeric order.
 * - Values are msgpack maps encoded by one shared msgpackr `Packr` with
 *   `useRecords: false` (no msgpackr record extension), so any language's
 *   msgpack library can read them.
 *
 * This module knows nothing of blocks, generations or FUSE: it only stores
 * plain values under (kind, key).
 */

import { ClassicLevel } from 'classic-level'
import { Packr } from 'msgpackr'
import * as path from 'node:path'
import * as fs from 'node:fs'
import { CorruptStoreError, StoreClosedError, StoreError, StoreFormatError, StoreLockedError, StoreNoSpaceError, isNoSpace, storeIoError } from './errors.js'
import { initNewStore, migrationPath } from './migrate.js'

/** Kinds of record, one key prefix (sublevel) each. Values of all but `meta` and `block` are owned by other modules. */
export type RecordKind = 'meta' | 'block' | 'node' | 'gen' | 'checkpoint' | 'context' | 'lower' | 'branch' | 'memory' | 'run' | 'hist'

/** Every record kind, in key-prefix order. */
export const RECORD_KINDS: readonly RecordKind[] = ['block', 'branch', 'checkpoint', 'context', 'gen', 'hist', 'lower', 'memory', 'meta', 'node', 'run']

/** A key: a string is used as is; a number must be a safe non-negative integer and is encoded with `intKey`. */
export type StoreKey = string | number

/**
 * On-disk format version written to meta `format` (FORMAT.md "Versions"):
 * 3 since block lists may hold runs of holes (fs/blocklist.ts), 4 since the
 * store keeps the effect ledger (store/effect-chain.ts), 5 since it keeps
 * the per-path history index (kind `hist`, fs/history/path-index.ts). Older formats are
 * migrated step by step (store/migrate.ts).
 */
export const STORE_FORMAT = 5

/** The one shared codec: msgpack maps, no records extension (FORMAT.md "Metadata database"). */
export const packr = new Packr({ useRecords: false })

/** Name of the metadata directory inside a store directory. */
export const META_DIR = 'meta'

/**
 * Encode a non-negative safe integer as 16 lowercase hex digits, so that byte
 * order equals numeric order. Throws RangeError for anything else.
 */
export function intKey (n: number): string {
  if (!Number.isSafeInteger(n) || n < 0) throw new RangeError(`store key must be a non-negative safe integer, got ${n}`)
  return n.toString(16).padStart(16, '0')
}

/** Inverse of `intKey`. Throws RangeError if `s` is not 16 hex digits. */
export function parseIntKey (s: string): number {
  if (!/^[0-9a-f]{16}$/.test(s)) throw new RangeError(`not an integer store key: ${JSON.stringify(s)}`)
  return parseInt(s, 16)
}

function encodeKey (key: StoreKey): string {
  return typeof key === 'number' ? intKey(key) : key
}

function prefix (kind: RecordKind): string {
  return `!${kind}!`
}

/** Options of `StoreDb.iterate`: bounds are keys inside the kind (not the full LevelDB key). */
export interface IterateOptions {
  gt?: StoreKey
  gte?: StoreKey
  lt?: StoreKey
  lte?: StoreKey
  reverse?: boolean
  /** at most this many entries; default unlimited */
  limit?: number
}

/** One entry of `StoreDb.iterate`: the key inside the kind (integer keys stay hex; use `parseIntKey`) and its decoded value. */
export interface StoreEntry<T> {
  key: string
  value: T
}

type Level = ClassicLevel<string, Uint8Array>

/**
 * A set of puts and deletes applied atomically by `write()`. Values are
 * encoded when `put` is called, so later mutation of the object has no effect.
 */
export class StoreBatch {
  private readonly ops: Array<{ type: 'put', key: string, value: Uint8Array } | { type: 'del', key: string }> = []
  private readonly written: Array<() => void> = []
  private done = false

  /** @internal use `StoreDb.batch()` */
  constructor (private readonly db: StoreDb) {}

  /** Number of operations queued. */
  get length (): number {
    return this.ops.length
  }

  /** Queue a put of `value` (any msgpack-encodable value) under (kind, key). */
  put (kind: RecordKind, key: StoreKey, value: unknown): this {
    this.ops.push({ type: 'put', key: prefix(kind) + encodeKey(key), value: packr.pack(value) })
    return this
  }

  /** Queue a delete of (kind, key); deleting an absent key is not an error. */
  del (kind: RecordKind, key: StoreKey): this {
    this.ops.push({ type: 'del', key: prefix(kind) + encodeKey(key) })
    return this
  }

  /**
   * Register `fn` to run after the batch has been written successfully (not if
   * the write fails). Used by layers that keep in-memory "pending" state until
   * their records are durable.
   */
  onWritten (fn: () => void): this {
    this.written.push(fn)
    return this
  }

  /**
   * Write every queued operation atomically. `sync` (default true) makes
   * LevelDB fsync its log before resolving. A batch can be written once.
   * Throws StoreClosedError if written twice; StoreNoSpaceError (E_NO_SPACE)
   * or StoreIoError (E_IO) when LevelDB cannot write: then nothing of the
   * batch is applied (see StoreDb.writeOps).
   */
  async write (opts: { sync?: boolean } = {}): Promise<void> {
    if (this.done) throw new StoreClosedError('store batch already written or discarded')
    this.done = true
    await this.db.writeOps(this.ops, opts.sync ?? true)
    for (const fn of this.written) fn()
  }

  /** Drop the queued operations without writing them. */
  async discard (): Promise<void> {
    this.done = true
  }
}

/** The metadata database of one store directory. */
export class StoreDb {
  /** Path of the LevelDB directory (`<storeDir>/meta`). */
  readonly location: string
  private readonly level: Level
  private closed = false
  /** a write failed: LevelDB must be reopened before the next write (see writeOps) */
  private poisoned = false
  /** the reopen in progress; reads and writes wait for it */
  private reopening: Promise<void> | null = null

  private constructor (location: string, level: Level) {
    this.location = location
    this.level = level
  }

  /**
   * Open (creating if missing) the metadata database at `<storeDir>/meta` and
   * check meta `format`: a new database gets the effect ledger
   * (initNewStore) and then `STORE_FORMAT`; an older format is migrated step
   * by step (store/migrate.ts), `meta.format` raised after each step.
   * Throws StoreLockedError (E_LOCKED) if another process has it open,
   * StoreNoSpaceError (E_NO_SPACE) if the filesystem is full (opening writes
   * a new log: free space and retry, no repair), CorruptStoreError
   * (E_CORRUPT) if LevelDB reports corruption or cannot read it,
   * StoreFormatError (E_FORMAT) for an unknown format version.
   */
  static async open (storeDir: string): Promise<StoreDb> {
    const location = path.join(storeDir, META_DIR)
    const level: Level = new ClassicLevel<string, Uint8Array>(location, { keyEncoding: 'utf8', valueEncoding: 'view' })
    // only a new (absent or empty) directory is created: LevelDB would take a
    // database whose CURRENT file is lost for a missing one, start an empty
    // one over it and delete the old files as obsolete
    let fresh = true
    try { fresh = fs.readdirSync(location).length === 0 } catch {}
    try {
      await level.open({ createIfMissing: fresh })
    } catch (err) {
      throw openError(location, err)
    }
    const db = new StoreDb(location, level)
    try {
      const format = await db.get<number>('meta', 'format')
      if (format === undefined) {
        try { await initNewStore(storeDir, STORE_FORMAT) } catch (err) { throw storeIoError(err, `creating the effect ledger of the store at ${storeDir}`, { path: storeDir }) }
        await db.batch().put('meta', 'format', STORE_FORMAT).write({ sync: true })
      } else if (format !== STORE_FORMAT) {
        const steps = migrationPath(format, STORE_FORMAT)
        if (steps === null) {
          throw new StoreFormatError(
            `store at ${storeDir} has format ${String(format)}, this rewindfs understands format ${STORE_FORMAT}; use a matching rewindfs version`,
            { path: location, kind: 'meta', key: 'format' })
        }
        for (const step of steps) {
          try { await step.run(storeDir) } catch (err) { throw storeIoError(err, `migrating the store at ${storeDir} to format ${step.to}`, { path: storeDir }) }
          await db.batch().put('meta', 'format', step.to).write({ sync: true })
        }
      }
    } catch (err) {
      await level.close().catch(() => {})
      throw err
    }
    return db
  }

  /**
   * Read the value at (kind, key), or `undefined` if there is none.
   * Throws CorruptStoreError if the stored bytes are not valid msgpack.
   */
  async get<T> (kind: RecordKind, key: StoreKey): Promise<T | undefined> {
    await this.ready()
    const k = encodeKey(key)
    const bytes = await this.level.get(prefix(kind) + k)
    if (bytes === undefined) return undefined
    return this.decode<T>(kind, k, bytes)
  }

  /** Start a batch of puts and deletes (see StoreBatch). */
  batch (): StoreBatch {
    this.checkOpen()
    return new StoreBatch(this)
  }

  /**
   * @internal StoreBatch.write. Writes `ops` as one LevelDB batch.
   *
   * After a failed write LevelDB's log ends in a partial record, and a write
   * it accepts after that can be dropped when the log is next recovered
   * (measured: ENOSPC on the log, space freed, a synced put acknowledged,
   * gone after reopen). So a failed write poisons the database: the next
   * write first closes and reopens it (recovery discards the partial
   * record), and only then writes. Reads meanwhile wait for the reopen.
   */
  async writeOps (ops: Array<{ type: 'put', key: string, value: Uint8Array } | { type: 'del', key: string }>, sync: boolean): Promise<void> {
    await this.ready()
    if (this.poisoned) await this.reopen()
    try {
      // a chained batch: abstract-level's array form checks and encodes each
      // operation again (measured: ~90 ms of CPU for an fsync committing 8k
      // blocks, not visible in the profile with the chained batch)
      const b = this.level.batch()
      for (const op of ops) {
        if (op.type === 'put') b.put(op.key, op.value)
        else b.del(op.key)
      }
      await b.write({ sync })
    } catch (err) {
      this.poisoned = true
      throw storeIoError(err, `write to the store database ${this.location}`, { path: this.location })
    }
  }

  /** Throws when closed; waits for a reopen in progress; retries one that failed (LevelDB is closed then). */
  private async ready (): Promise<void> {
    this.checkOpen()
    if (this.reopening) await this.reopening
    if (this.poisoned && this.level.status !== 'open') await this.reopen()
  }

  /**
   * The keys of one kind in key order (inside the kind, integer keys as
   * hex), without reading values. For garbage collection's sweep.
   */
  async * keys (kind: RecordKind, opts: { gte?: StoreKey, lt?: StoreKey } = {}): AsyncGenerator<string> {
    await this.ready()
    const p = prefix(kind)
    const range = { gte: p + (opts.gte === undefined ? '' : encodeKey(opts.gte)), lt: opts.lt === undefined ? `!${kind}"` : p + encodeKey(opts.lt) }
    for await (const k of this.level.keys(range)) yield k.slice(p.length)
  }

  /** Compacts LevelDB's files (space of deleted records is returned only then). */
  async compact (): Promise<void> {
    await this.ready()
    await this.level.compactRange('!', '~')
  }

  private async reopen (): Promise<void> {
    this.reopening ??= (async () => {
      try {
        await this.level.close()
        await this.level.open({ createIfMissing: false })
        this.poisoned = false
      } catch (err) {
        throw storeIoError(err, `reopen of the store database ${this.location} after a failed write`, { path: this.location })
      } finally {
        this.reopening = null
      }
    })()
    await this.reopening
  }

  /**
   * Iterate the records of one kind in key order (or reverse), bounded by
   * keys inside that kind. Throws CorruptStoreError on an undecodable value.
   */
  async * iterate<T> (kind: RecordKind, opts: IterateOptions = {}): AsyncGenerator<StoreEntry<T>> {
    await this.ready()
    const p = prefix(kind)
    const range: { gt?: string, gte?: string, lt?: string, lte?: string, reverse: boolean, limit: number } = {
      reverse: opts.reverse ?? false,
      limit: opts.limit ?? -1
    }
    if (opts.gt !== undefined) range.gt = p + encodeKey(opts.gt)
    else range.gte = p + (opts.gte === undefined ? '' : encodeKey(opts.gte))
    if (opts.lt !== undefined) range.lt = p + encodeKey(opts.lt)
    else if (opts.lte !== undefined) range.lte = p + encodeKey(opts.lte)
    else range.lt = `!${kind}"` // '"' is '!' + 1: the end of this kind's key space
    for await (const [fullKey, bytes] of this.level.iterator(range)) {
      const key = fullKey.slice(p.length)
      yield { key, value: this.decode<T>(kind, key, bytes) }
    }
  }

  /** Close the database; later calls throw StoreClosedError. Closing twice is allowed. */
  async close (): Promise<void> {
    if (this.closed) return
    this.closed = true
    await this.level.close()
  }

  private decode<T> (kind: RecordKind, key: string, bytes: Uint8Array): T {
    try {
      return packr.unpack(bytes) as T
    } catch (err) {
      throw new CorruptStoreError(
        `metadata record ${kind}/${key} in ${this.location} is not valid msgpack; run \`rewindfs verify\``,
        { path: this.location, kind, key, cause: err })
    }
  }

  private checkOpen (): void {
    if (this.closed) throw new StoreClosedError(`store database ${this.location} is closed`, { path: this.location })
  }
}

function openError (location: string, err: unknown): StoreError {
  const cause = (err as { cause?: { code?: string } }).cause
  const code = cause?.code ?? (err as { code?: string }).code
  if (code === 'LEVEL_LOCKED') {
    return new StoreLockedError(
      `store database ${location} is locked by another process (is another rewindfs daemon running on this store?)`,
      { path: location, cause: err })
  }
  const detail = String((cause as Error | undefined)?.message ?? (err as Error).message)
  if (isNoSpace(cause) || isNoSpace(err) || /No space left on device|Disk quota exceeded/i.test(detail)) {
    // LevelDB writes a new log and manifest when it opens: a full disk is not damage
    return new StoreNoSpaceError(
      `store database ${location} cannot be opened: the store's filesystem is full (${detail}); ` +
      'free space on that filesystem, then retry. Do not run rewindfs verify --repair while the disk is full: a full disk is not damage, and a repair needs room to rewrite the database',
      { path: location, errno: /quota/i.test(detail) ? 'EDQUOT' : 'ENOSPC', cause: err })
  }
  const what = code === 'LEVEL_CORRUPTION' ? 'is corrupt' : 'cannot be opened'
  return new CorruptStoreError(
    `store database ${location} ${what} (${String((cause as Error | undefined)?.message ?? (err as Error).message)}); ` +
    'run `rewindfs verify --repair` (LevelDB repair, then the block index rebuilt from the packs), or restore the store directory from a backup',
    { path: location, cause: err })
}
