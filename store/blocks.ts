/**
 * BlockStore: content-addressed, deduplicated block storage on top of packs
 * (pack.ts) and the `block` records of the metadata database (db.ts).
 *
 * - `put` is synchronous (FUSE hot path): hash with xxh64, and on a hash hit
 *   compare the stored bytes (a 64-bit hash alone is not proof of equality,
 *   DESIGN.md "Store"); identical → the existing BlockId, otherwise append to
 *   the current pack and allocate the next BlockId.
 * - New blocks are pending until committed. Commit order (FORMAT.md "Read and
 *   write ordering"): pack bytes → `sync()` (fdatasync) → `commitTo(batch)` +
 *   `batch.write()` (block records + meta nextBlockId) → generation record
 *   (written by the caller in the same or a later batch).
 *
 * Memory: the whole block index is held in memory, loaded once by `open` (the
 * only scan). Per block: one `entries` Map slot + one entry object
 * {pack, offset, length, hash} + its 64-bit BigInt hash + one `byHash` Map
 * slot keyed by that same BigInt. Measured on Node 20 (1M blocks, --expose-gc,
 * heapUsed delta): about 140 bytes per block, i.e. ~2.2 KiB of index per MiB
 * of unique content at 64 KiB blocks (FORMAT.md "Memory").
 */

import xxhash from 'xxhash-wasm'
import type { BlockId, BlockLocation, PackId } from '../base/types.js'
import { BLOCK_SIZE } from '../base/types.js'
import type { StoreBatch, StoreDb } from './db.js'
import { parseIntKey } from './db.js'
import { CorruptStoreError } from './errors.js'
import type { PackOptions } from './pack.js'
import { PackWriter, RECORD_HEADER_SIZE } from './pack.js'
import { SpaceGuard, DEFAULT_RESERVE } from './space.js'

/** Value of a `block` record (key: BlockId as intKey). `hash` is xxh64 (seed 0) as 16 lowercase hex digits. */
export interface BlockRecord {
  pack: PackId
  offset: number
  length: number
  hash: string
}

/** A 64-bit content hash; the default is xxhash-wasm `h64Raw` with seed 0. */
export type BlockHasher = (data: Uint8Array) => bigint

/** Options of `BlockStore.open`; pack limits are passed on to PackWriter. */
export interface BlockStoreOptions extends PackOptions {
  /** replace the hash (tests force collisions with `() => 1n`); must be the same function on every open of a store */
  hash?: BlockHasher
  /**
   * check at open that every pack the index names exists, has a pack header
   * and is long enough for its blocks (O(packs) stats); a failure throws
   * CorruptStoreError. Default true; verify and repair pass false and report
   * what they find instead.
   */
  checkPacks?: boolean
  /** bytes kept free on the store's filesystem: `ensureSpace` refuses new data below it (SpaceGuard); default DEFAULT_RESERVE (64 MiB) */
  reserve?: number
}

/** Codes of the problems `verifyAll` reports (not thrown; verify collects them). */
export type BlockProblemCode = 'E_BLOCK_UNREADABLE' | 'E_BLOCK_LENGTH' | 'E_BLOCK_HASH'

/** One problem found by `verifyAll`. */
export interface BlockProblem {
  code: BlockProblemCode
  blockId: BlockId
  location: BlockLocation
  message: string
}

/** A valid block record found by `scanPacks`. */
export interface ScannedBlock {
  id: BlockId
  location: BlockLocation
  /** xxh64 as 16 hex digits */
  hash: string
}

/** The next step after a damaged block (verify appends it to each block problem). */
export const BLOCK_REPAIR_HINT = 'Next: `rewindfs verify --repair` points the block at an intact copy of its bytes if any pack holds one; ' +
  'if none does, the block stays damaged and reading the files that use it fails with EIO (restore a checkpoint without them, or delete those files)'

/** What is left to do with a damaged block that repair found no intact copy of. */
export const BLOCK_LOST_HINT = 'No pack holds an intact copy of it, so repair cannot fix it: reading the files that use it fails with EIO ' +
  '(restore a checkpoint without them, or delete those files)'

/** Meta key of the next BlockId to allocate (a number). */
export const META_NEXT_BLOCK_ID = 'nextBlockId'

interface Entry extends BlockLocation {
  hash: bigint
}

/** Blocks verified between yields to the event loop in `verifyAll`. */
const VERIFY_YIELD_EVERY = 64

let defaultHasher: Promise<BlockHasher> | undefined

function loadDefaultHasher (): Promise<BlockHasher> {
  defaultHasher ??= xxhash().then(api => (data: Uint8Array) => api.h64Raw(data))
  return defaultHasher
}

function hashHex (h: bigint): string {
  return h.toString(16).padStart(16, '0')
}

/** The block store of one store directory. Not thread-safe; use from the daemon's event loop. */
export class BlockStore {
  private readonly packs: PackWriter
  private readonly hash: BlockHasher
  /** every known block, committed or pending */
  private readonly entries = new Map<BlockId, Entry>()
  /** xxh64 → the block (or, after a collision, blocks) with that hash */
  private readonly byHash = new Map<bigint, BlockId | BlockId[]>()
  /** put since the last sync() began: bytes maybe not durable */
  private unsynced: BlockId[] = []
  /** bytes durable, record not yet written */
  private readonly durable = new Set<BlockId>()
  private nextId: BlockId
  /** scratch for comparing on a hash hit and for first reads; BLOCK_SIZE bytes */
  private readonly scratch = Buffer.allocUnsafe(BLOCK_SIZE)
  /**
   * blocks whose bytes this process has read back and found to match their
   * hash (so a flipped byte in a pack is an error, never data served to a
   * reader); `recheck` empties it so a bulk copy hashes every block again
   */
  private readonly checked = new Set<BlockId>()

  private readonly space: SpaceGuard

  private constructor (packs: PackWriter, hash: BlockHasher, nextId: BlockId, reserve: number) {
    this.packs = packs
    this.hash = hash
    this.nextId = nextId
    this.space = new SpaceGuard(packs.dir, reserve)
  }

  /**
   * Open the block store of `storeDir` using `db` (which the caller owns and
   * closes). Initialises the xxhash wasm once, loads every `block` record into
   * memory (the only scan) and meta nextBlockId. Throws CorruptStoreError on a
   * malformed block record.
   */
  static async open (storeDir: string, db: StoreDb, opts: BlockStoreOptions = {}): Promise<BlockStore> {
    const hash = opts.hash ?? await loadDefaultHasher()
    const stored = await db.get<number>('meta', META_NEXT_BLOCK_ID)
    const packs = await PackWriter.open(storeDir, opts)
    const store = new BlockStore(packs, hash, 1, opts.reserve ?? DEFAULT_RESERVE)
    let max = 0
    try {
      for await (const { key, value } of db.iterate<BlockRecord>('block')) {
        const id = parseIdKey(key, db)
        const entry = toEntry(id, value, db)
        store.index(id, entry)
        if (id > max) max = id
      }
    } catch (err) {
      packs.close()
      throw err
    }
    if (stored !== undefined && (!Number.isSafeInteger(stored) || stored < 1)) {
      packs.close()
      throw new CorruptStoreError(`meta ${META_NEXT_BLOCK_ID} in ${db.location} is ${String(stored)}, not a positive integer`,
        { path: db.location, kind: 'meta', key: META_NEXT_BLOCK_ID })
    }
    store.nextId = Math.max(stored ?? 1, max + 1)
    if (opts.checkPacks ?? true) {
      const problems = store.packProblems()
      if (problems.length > 0) {
        packs.close()
        throw new CorruptStoreError(
          `the store ${storeDir} is damaged: ${problems.slice(0, 5).join('; ')}${problems.length > 5 ? `; and ${problems.length - 5} more` : ''}. ` +
          'Nothing was served from it. Run `rewindfs verify --store ' + storeDir + ' --repair` to rebuild what the packs still hold and see what is lost',
          { path: storeDir })
      }
    }
    return store
  }

  /**
   * Problems of the packs the index refers to, in plain words: a pack that
   * is missing, has no pack header, or ends before the end of one of its
   * indexed blocks. O(blocks) in memory plus one stat and one 8-byte read per
   * pack; it cannot see a flipped byte inside a pack (reads check the hash of
   * every block the first time they read it, and verify re-hashes all).
   */
  packProblems (): string[] {
    const ends = new Map<PackId, { end: number, blocks: number }>()
    for (const e of this.entries.values()) {
      const x = ends.get(e.pack)
      if (!x) ends.set(e.pack, { end: e.offset + e.length, blocks: 1 })
      else { x.end = Math.max(x.end, e.offset + e.length); x.blocks++ }
    }
    const out: string[] = []
    for (const [pack, { end, blocks }] of [...ends].sort((a, b) => a[0] - b[0])) {
      const problem = this.packs.checkPack(pack, end)
      if (problem) out.push(`${problem} (${blocks} indexed block${blocks === 1 ? '' : 's'} in it)`)
    }
    return out
  }

  /** Number of blocks known (committed and pending). */
  get size (): number {
    return this.entries.size
  }

  /** Number of blocks put but not yet committed. */
  get pendingCount (): number {
    return this.unsynced.length + this.durable.size
  }

  /**
   * Store `data` (1..BLOCK_SIZE bytes; RangeError otherwise) and return its
   * BlockId. Synchronous. Identical bytes return the id already stored
   * (committed or pending) and write nothing; the caller may reuse `data`
   * afterwards. Throws CorruptStoreError if a same-hash block cannot be read.
   */
  put (data: Uint8Array): BlockId {
    if (data.length < 1 || data.length > BLOCK_SIZE) throw new RangeError(`block of ${data.length} bytes (must be 1..${BLOCK_SIZE})`)
    const h = this.hash(data)
    const hit = this.byHash.get(h)
    if (hit !== undefined) {
      const view = Buffer.from(data.buffer, data.byteOffset, data.length)
      for (const id of typeof hit === 'number' ? [hit] : hit) {
        const e = this.entries.get(id) as Entry
        if (e.length !== data.length) continue
        this.packs.readInto(e, this.scratch, 0, 0, e.length)
        if (view.equals(this.scratch.subarray(0, e.length))) { this.tracked?.add(id); return id }
      }
    }
    const id = this.nextId
    let loc: BlockLocation
    try {
      loc = this.packs.append(data, h, id)
    } catch (err) {
      if ((err as { code?: string }).code === 'E_NO_SPACE') this.space.stale()
      throw err
    }
    this.space.used(RECORD_HEADER_SIZE + data.length)
    this.nextId++
    this.tracked?.add(id)
    this.index(id, { pack: loc.pack, offset: loc.offset, length: loc.length, hash: h })
    this.unsynced.push(id)
    return id
  }

  /**
   * Throws StoreNoSpaceError (E_NO_SPACE) when storing `bytes` more new bytes
   * would leave less than the reserve free on the store's filesystem. Asked
   * by writers of new data before they change anything (SpaceGuard).
   */
  ensureSpace (bytes: number): void {
    this.space.ensure(bytes)
  }

  /** True if `id` is a known block (committed or pending). */
  has (id: BlockId): boolean {
    return this.entries.has(id)
  }

  /** Number of bytes of block `id`. Throws CorruptStoreError for an unknown id. */
  length (id: BlockId): number {
    return this.entry(id).length
  }

  /** Where block `id` is stored. Throws CorruptStoreError for an unknown id. */
  location (id: BlockId): BlockLocation {
    const e = this.entry(id)
    return { pack: e.pack, offset: e.offset, length: e.length }
  }

  /**
   * Copy bytes [fromByte, fromByte + length) of block `id` into `target` at
   * `targetOffset`, synchronously; `length` is clamped to the end of the block
   * and of `target`. Returns the number of bytes copied. Throws
   * CorruptStoreError for an unknown id, a pack shorter than the block, or
   * (first read of the block in this process) bytes that do not hash to the
   * index's hash; after a throw the target range holds unspecified bytes.
   */
  readInto (id: BlockId, target: Uint8Array, targetOffset: number, fromByte: number, length: number): number {
    const e = this.entry(id)
    if (this.checked.has(id)) return this.packs.readInto(e, target, targetOffset, fromByte, length)
    // first read of this block in this process: read it whole and check its hash; a read of the whole block
    // (a sequential read) goes straight into the target and is hashed there, a part of one through the scratch buffer
    const whole = fromByte === 0 && length >= e.length && target.length - targetOffset >= e.length
    const bytes = whole ? Buffer.from(target.buffer, target.byteOffset + targetOffset, e.length) : this.scratch.subarray(0, e.length)
    this.packs.readInto(e, bytes, 0, 0, e.length)
    const actual = this.hash(bytes)
    if (actual !== e.hash) {
      throw new CorruptStoreError(
        `block ${id} (pack ${this.packs.packPath(e.pack)}, offset ${e.offset}, ${e.length} bytes) is corrupt: its bytes hash to ${hashHex(actual)}, the index says ${hashHex(e.hash)}; ` +
        'the read fails instead of returning wrong bytes. Unmount and run `rewindfs verify --repair`',
        { blockId: id, pack: e.pack, offset: e.offset, path: this.packs.packPath(e.pack) })
    }
    this.checked.add(id)
    if (whole) return e.length
    const n = Math.max(0, Math.min(length, e.length - fromByte, target.length - targetOffset))
    if (n > 0) bytes.copy(target, targetOffset, fromByte, fromByte + n)
    return n
  }

  /**
   * Forgets which blocks were already checked: the next read of each block
   * hashes it again. Export and write-back call it before they copy a
   * checkpoint out of the store, so bytes damaged since their first read
   * are not written anywhere.
   */
  recheck (): void {
    this.checked.clear()
  }

  /** The bytes of block `id` in a new Buffer. Throws like readInto. */
  read (id: BlockId): Buffer {
    const b = Buffer.allocUnsafe(this.length(id))
    this.readInto(id, b, 0, 0, b.length)
    return b
  }

  /**
   * Make the bytes of every block put before this call durable (fdatasync of
   * the packs, off the event loop). Those blocks become committable by the
   * next `commitTo`; blocks put while this runs wait for the next sync.
   */
  async sync (): Promise<void> {
    const taken = this.unsynced
    this.unsynced = []
    try {
      await this.packs.sync()
    } catch (err) {
      this.unsynced = taken.concat(this.unsynced)
      throw err
    }
    for (const id of taken) this.durable.add(id)
  }

  /**
   * Add the records of every block made durable by a completed `sync()`, and
   * meta nextBlockId, to `batch`. They count as committed once the batch is
   * written (StoreBatch.onWritten); if the write fails they stay pending and
   * the next commitTo adds them again.
   */
  commitTo (batch: StoreBatch): void {
    const ids = [...this.durable]
    for (const id of ids) {
      const e = this.entries.get(id) as Entry
      const rec: BlockRecord = { pack: e.pack, offset: e.offset, length: e.length, hash: hashHex(e.hash) }
      batch.put('block', id, rec)
    }
    batch.put('meta', META_NEXT_BLOCK_ID, this.nextId)
    batch.onWritten(() => { for (const id of ids) this.durable.delete(id) })
  }

  /**
   * Re-read every known block (in BlockId order) and check its record header
   * and bytes against the index: length and xxh64. Yields one problem per bad
   * block; yields to the event loop every VERIFY_YIELD_EVERY blocks. For
   * `rewindfs verify`; O(store size).
   */
  async * verifyAll (): AsyncGenerator<BlockProblem> {
    const ids = [...this.entries.keys()].sort((a, b) => a - b)
    let n = 0
    for (const id of ids) {
      if (++n % VERIFY_YIELD_EVERY === 0) await new Promise(resolve => setImmediate(resolve))
      const e = this.entries.get(id)
      if (e === undefined) continue
      const problem = this.verifyOne(id, e)
      if (problem !== undefined) yield problem
    }
  }

  // ---- garbage collection (fs/maint/gc.ts) ---------------------------------

  /** The next BlockId `put` allocates: every known block's id is below it. */
  get nextBlockId (): BlockId {
    return this.nextId
  }

  /** Ids put but not yet committed (their index records are not written). */
  pendingIds (): Set<BlockId> {
    return new Set([...this.unsynced, ...this.durable])
  }

  /** Every known block (committed and pending) with where it is; do not modify the values. */
  locations (): IterableIterator<[BlockId, Readonly<BlockLocation>]> {
    return this.entries.entries()
  }

  /** The packs (see PackWriter). */
  get packFiles (): PackWriter {
    return this.packs
  }

  private tracked: Set<BlockId> | null = null

  /**
   * From now until `stopTracking`, remember every id `put` returns, new or
   * deduplicated: garbage collection must not delete a block a writer took
   * while it was deciding what is unreachable.
   */
  startTracking (): void {
    this.tracked = new Set()
  }

  /** Ends tracking; returns the ids `put` returned since `startTracking`. */
  stopTracking (): Set<BlockId> {
    const t = this.tracked ?? new Set<BlockId>()
    this.tracked = null
    return t
  }

  /**
   * Removes blocks from the in-memory index (garbage collection, before their
   * records are deleted): `put` never returns them again and reading them
   * fails as an unknown block. Synchronous.
   */
  forget (ids: Iterable<BlockId>): Map<BlockId, Readonly<BlockLocation & { hash: bigint }>> {
    const out = new Map<BlockId, Entry>()
    for (const id of ids) {
      const e = this.entries.get(id)
      if (!e) continue
      out.set(id, e)
      this.entries.delete(id)
      this.checked.delete(id)
      const h = this.byHash.get(e.hash)
      if (h === id) this.byHash.delete(e.hash)
      else if (Array.isArray(h)) {
        const rest = h.filter(x => x !== id)
        if (rest.length === 1) this.byHash.set(e.hash, rest[0]!)
        else this.byHash.set(e.hash, rest)
      }
    }
    return out
  }

  /** Undoes `forget` for blocks whose records could not be deleted after all (their entries as forget returned them). */
  reinstate (entries: Iterable<readonly [BlockId, Readonly<BlockLocation & { hash: bigint }>]>): void {
    for (const [id, e] of entries) if (!this.entries.has(id)) this.index(id, { pack: e.pack, offset: e.offset, length: e.length, hash: e.hash })
  }

  /**
   * Copies committed blocks into the current pack under the same ids
   * (garbage collection's compaction), checking each one's hash on the way;
   * yields to the event loop every VERIFY_YIELD_EVERY blocks; then makes
   * the copies durable. Returns the new locations and the ids that could
   * not be copied (unreadable or failing their hash: they stay where they
   * are). The index is not changed: write the new locations
   * (`relocationRecord`) and then call `moved`.
   */
  async copyBlocks (ids: BlockId[]): Promise<{ copies: Map<BlockId, BlockLocation>, failed: BlockId[] }> {
    const copies = new Map<BlockId, BlockLocation>()
    const failed: BlockId[] = []
    let n = 0
    for (const id of ids) {
      if (++n % VERIFY_YIELD_EVERY === 0) await new Promise(resolve => setImmediate(resolve))
      const e = this.entries.get(id)
      if (!e) continue // forgotten meanwhile
      let bytes: Buffer
      try {
        this.packs.readInto(e, this.scratch, 0, 0, e.length)
        bytes = this.scratch.subarray(0, e.length)
        if (this.hash(bytes) !== e.hash) { failed.push(id); continue }
      } catch { failed.push(id); continue }
      const loc = this.packs.append(bytes, e.hash, id)
      this.space.used(RECORD_HEADER_SIZE + e.length)
      copies.set(id, loc)
    }
    await this.packs.sync()
    return { copies, failed }
  }

  /** The `block` record of `id` at location `loc` (for a batch that relocates it). */
  relocationRecord (id: BlockId, loc: BlockLocation): BlockRecord {
    const e = this.entry(id)
    return { pack: loc.pack, offset: loc.offset, length: loc.length, hash: hashHex(e.hash) }
  }

  /** Points the in-memory index at the copies once their records are written. Synchronous. */
  moved (copies: Map<BlockId, BlockLocation>): void {
    for (const [id, loc] of copies) {
      const e = this.entries.get(id)
      if (!e) continue
      e.pack = loc.pack
      e.offset = loc.offset
    }
  }

  /** Free bytes above the reserve on the store's filesystem (may be negative). One statfs. */
  spaceAboveReserve (): number {
    return this.space.aboveReserve()
  }

  // ---- repair (fs/maint/repair.ts) -----------------------------------------

  /**
   * Scans every pack (`verify --repair`): reads each record, keeps those
   * whose bytes hash to the hash in their header, and returns them by
   * BlockId (the newest record wins: highest pack, then offset, FORMAT.md
   * "Packs") and by hash. Packs with no pack header are listed in
   * `unreadable`. O(store size) reads; yields to the event loop between
   * records.
   */
  async scanPacks (): Promise<{ byId: Map<BlockId, ScannedBlock>, byHash: Map<string, ScannedBlock>, records: number, unreadable: string[] }> {
    const byId = new Map<BlockId, ScannedBlock>()
    const byHash = new Map<string, ScannedBlock>()
    const unreadable: string[] = []
    let records = 0
    const buf = Buffer.allocUnsafe(BLOCK_SIZE)
    for (const pack of [...this.packs.listPacks().keys()].sort((a, b) => a - b)) {
      try {
        for (const r of this.packs.scanPack(pack)) {
          if (++records % VERIFY_YIELD_EVERY === 0) await new Promise(resolve => setImmediate(resolve))
          this.packs.readInto(r.location, buf, 0, 0, r.location.length)
          if (this.hash(buf.subarray(0, r.location.length)) !== r.hash) continue
          const b: ScannedBlock = { id: r.id, location: r.location, hash: hashHex(r.hash) }
          byId.set(r.id, b)
          byHash.set(b.hash, b)
        }
      } catch (err) {
        unreadable.push(`${this.packs.packPath(pack)}: ${(err as Error).message}`)
      }
    }
    return { byId, byHash, records, unreadable }
  }

  /** The index hash of block `id` as 16 hex digits, or undefined when it is not in the index. */
  indexHash (id: BlockId): string | undefined {
    const e = this.entries.get(id)
    return e ? hashHex(e.hash) : undefined
  }

  /** Close the pack fds (not the db). Await `sync()` first if pending bytes matter. */
  close (): void {
    this.packs.close()
  }

  private verifyOne (id: BlockId, e: Entry): BlockProblem | undefined {
    const location = { pack: e.pack, offset: e.offset, length: e.length }
    const where = `block ${id} (pack ${e.pack}, offset ${e.offset}, ${e.length} bytes)`
    let bytes: Buffer
    let header: { length: number, hash: bigint }
    try {
      header = this.packs.readRecordHeader(e)
      bytes = this.packs.read(e)
    } catch (err) {
      // the reader's own advice ("run rewindfs verify") is where this is printed: replaced by the next step
      const why = (err as Error).message.replace(/; run `rewindfs verify`$/, '')
      return { code: 'E_BLOCK_UNREADABLE', blockId: id, location, message: `${where} cannot be read: ${why}` }
    }
    if (header.length !== e.length) {
      return { code: 'E_BLOCK_LENGTH', blockId: id, location, message: `${where}: pack record says ${header.length} bytes` }
    }
    const actual = this.hash(bytes)
    if (actual !== e.hash || header.hash !== e.hash) {
      return {
        code: 'E_BLOCK_HASH',
        blockId: id,
        location,
        message: `${where}: index hash ${hashHex(e.hash)}, record hash ${hashHex(header.hash)}, bytes hash ${hashHex(actual)}: ` +
          'its bytes changed after they were written (a disk error or an edit of the pack)'
      }
    }
    return undefined
  }

  private entry (id: BlockId): Entry {
    const e = this.entries.get(id)
    if (e === undefined) {
      throw new CorruptStoreError(`unknown block ${id}: a record references a block the store does not have; run \`rewindfs verify\``,
        { blockId: id })
    }
    return e
  }

  private index (id: BlockId, e: Entry): void {
    this.entries.set(id, e)
    const prev = this.byHash.get(e.hash)
    if (prev === undefined) this.byHash.set(e.hash, id)
    else if (typeof prev === 'number') this.byHash.set(e.hash, [prev, id])
    else prev.push(id)
  }
}

function parseIdKey (key: string, db: StoreDb): BlockId {
  try {
    const id = parseIntKey(key)
    if (id >= 1) return id
  } catch {}
  throw new CorruptStoreError(`block record key ${JSON.stringify(key)} in ${db.location} is not a BlockId`,
    { path: db.location, kind: 'block', key })
}

function toEntry (id: BlockId, v: BlockRecord, db: StoreDb): Entry {
  const ok = typeof v === 'object' && v !== null &&
    Number.isSafeInteger(v.pack) && v.pack >= 1 &&
    Number.isSafeInteger(v.offset) && v.offset >= 0 &&
    Number.isSafeInteger(v.length) && v.length >= 1 && v.length <= BLOCK_SIZE &&
    typeof v.hash === 'string' && /^[0-9a-f]{16}$/.test(v.hash)
  if (!ok) {
    throw new CorruptStoreError(`block record ${id} in ${db.location} is malformed: ${JSON.stringify(v)}`,
      { path: db.location, kind: 'block', key: String(id), blockId: id })
  }
  return { pack: v.pack, offset: v.offset, length: v.length, hash: BigInt('0x' + v.hash) }
}
