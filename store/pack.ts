/**
 * Pack files: append-only files of block records, `<storeDir>/packs/<8 hex>.pack`.
 * Byte layout (FORMAT.md "Packs"), all integers little endian:
 *
 *   header  16 bytes: magic "RWPACK02" (8 ASCII bytes) + 8 reserved zero bytes
 *   record  u32 length | u64 xxh64(bytes, seed 0) | u64 BlockId | length bytes   (20 + length bytes)
 *
 * A BlockLocation's `offset` is the offset of the bytes (record start + 20).
 * Records carry their own length, hash and BlockId, so `verify --repair` can
 * rebuild the block index by scanning the packs alone.
 *
 * Packs know nothing of block ids, the index or generations. Bytes, once
 * written, are never modified. Every `PackWriter.open` starts a fresh pack
 * (created on first append), so bytes a crashed daemon wrote but never
 * indexed are only ever garbage at the tail of an older pack, and a scan of
 * any pack is valid up to its first bad record (FORMAT.md "Decisions").
 */

import * as fs from 'node:fs'
import * as path from 'node:path'
import type { BlockId, BlockLocation, PackId } from '../base/types.js'
import { BLOCK_SIZE } from '../base/types.js'
import { CorruptStoreError, StoreClosedError, storeIoError } from './errors.js'

/** Pack magic, bytes 0..7 of every pack. */
export const PACK_MAGIC = Buffer.from('RWPACK02', 'ascii')
/** Bytes of the pack header (magic + 8 reserved bytes). */
export const PACK_HEADER_SIZE = 16
/** Bytes of a record header: u32 length + u64 xxh64 + u64 BlockId. */
export const RECORD_HEADER_SIZE = 20
/** Default size at which the writer rolls to a new pack: 256 MiB (brief; bounds scan and GC units). */
export const DEFAULT_PACK_SIZE = 256 * 1024 * 1024
/** Default bound on cached read file descriptors (one per pack), least recently used closed first. */
export const DEFAULT_MAX_OPEN_PACKS = 256
/** Name of the pack directory inside a store directory. */
export const PACKS_DIR = 'packs'

/** File name of a pack: 8 lowercase hex digits + `.pack`. */
export function packFileName (id: PackId): string {
  return id.toString(16).padStart(8, '0') + '.pack'
}

/** Limits of a PackWriter (all optional). */
export interface PackOptions {
  /** roll to a new pack once the current one has at least this many bytes; default DEFAULT_PACK_SIZE */
  packSize?: number
  /** most read fds kept open; default DEFAULT_MAX_OPEN_PACKS */
  maxOpenPacks?: number
}

/** One record found by `scanPack`. */
export interface ScannedRecord {
  location: BlockLocation
  /** xxh64 stored in the record header */
  hash: bigint
  /** BlockId stored in the record header */
  id: BlockId
}

/**
 * Writes and reads the packs of one store directory. Single-threaded: all
 * methods but `sync` are synchronous and must be called from the daemon's
 * event loop; `sync` runs fdatasync on libuv's pool.
 */
export class PackWriter {
  readonly dir: string
  private readonly packSize: number
  private readonly maxOpenPacks: number
  /** read/write fds by pack; Map order is LRU order (oldest first). The current write pack is never evicted. */
  private readonly fds = new Map<PackId, number>()
  /** packs appended to since the last sync started */
  private dirty = new Set<PackId>()
  /** packs whose fdatasync is in flight; with `dirty` and `current`, never evicted (an fd must not be closed under a sync) */
  private readonly syncing = new Map<PackId, number>()
  private dirDirty = false
  private current: PackId | undefined
  private currentEnd = 0
  private nextPack: PackId
  private closed = false
  private readonly recordHeader = Buffer.alloc(RECORD_HEADER_SIZE)

  private constructor (dir: string, nextPack: PackId, opts: PackOptions) {
    this.dir = dir
    this.nextPack = nextPack
    this.packSize = opts.packSize ?? DEFAULT_PACK_SIZE
    this.maxOpenPacks = Math.max(2, opts.maxOpenPacks ?? DEFAULT_MAX_OPEN_PACKS)
  }

  /**
   * Open the packs of `<storeDir>/packs` (creating the directory). Lists the
   * directory once to find the highest PackId; the next append creates a new
   * pack after it. Throws on I/O errors.
   */
  static async open (storeDir: string, opts: PackOptions = {}): Promise<PackWriter> {
    const dir = path.join(storeDir, PACKS_DIR)
    await fs.promises.mkdir(dir, { recursive: true })
    let max = 0
    for (const name of await fs.promises.readdir(dir)) {
      const m = /^([0-9a-f]{8})\.pack$/.exec(name)
      if (m !== null) max = Math.max(max, parseInt(m[1] as string, 16))
    }
    return new PackWriter(dir, max + 1, opts)
  }

  /** Path of a pack file. */
  packPath (id: PackId): string {
    return path.join(this.dir, packFileName(id))
  }

  /**
   * Append one record synchronously (one pwritev of header and bytes) and return where its bytes
   * are. `data` is 1..BLOCK_SIZE bytes; `hash` is its xxh64; `id` the BlockId
   * the record is stored under. The bytes are readable at once but durable
   * only after `sync()` resolves. An I/O error (ENOSPC, EIO) is rethrown and
   * the next append starts a new pack.
   */
  append (data: Uint8Array, hash: bigint, id: BlockId): BlockLocation {
    this.checkOpen()
    if (data.length < 1 || data.length > BLOCK_SIZE) throw new RangeError(`block of ${data.length} bytes (must be 1..${BLOCK_SIZE})`)
    if (this.current === undefined || this.currentEnd >= this.packSize) this.roll()
    const pack = this.current as PackId
    const fd = this.fds.get(pack) as number
    const h = this.recordHeader
    h.writeUInt32LE(data.length, 0)
    h.writeBigUInt64LE(hash, 4)
    h.writeBigUInt64LE(BigInt(id), 12)
    const start = this.currentEnd
    try {
      writeRecord(fd, h, data, start)
    } catch (err) {
      // a partial record may be on disk: never write over it, continue in a new pack
      this.current = undefined
      this.dirty.add(pack)
      throw storeIoError(err, `append to pack ${this.packPath(pack)}`, { path: this.packPath(pack), pack })
    }
    this.currentEnd = start + RECORD_HEADER_SIZE + data.length
    this.dirty.add(pack)
    return { pack, offset: start + RECORD_HEADER_SIZE, length: data.length }
  }

  /**
   * Make every byte appended before this call durable: fdatasync each pack
   * written since the previous sync, and fsync the pack directory if a pack
   * was created. Runs on libuv's pool, off the event loop.
   */
  async sync (): Promise<void> {
    this.checkOpen()
    const packs = [...this.dirty]
    const dirDirty = this.dirDirty
    this.dirty = new Set()
    this.dirDirty = false
    for (const id of packs) this.syncing.set(id, (this.syncing.get(id) ?? 0) + 1)
    try {
      await Promise.all(packs.map(async id => {
        const fd = this.fds.get(id)
        // an evicted fd was closed; reopen to sync (close does not imply durability)
        if (fd !== undefined) await fdatasync(fd)
        else {
          const h = await fs.promises.open(this.packPath(id), 'r')
          try { await h.datasync() } finally { await h.close() }
        }
      }))
      if (dirDirty) {
        const h = await fs.promises.open(this.dir, 'r')
        try { await h.sync() } finally { await h.close() }
      }
    } catch (err) {
      for (const id of packs) this.dirty.add(id)
      this.dirDirty ||= dirDirty
      throw storeIoError(err, `fsync of the packs in ${this.dir}`, { path: this.dir })
    } finally {
      for (const id of packs) {
        const n = (this.syncing.get(id) ?? 1) - 1
        if (n === 0) this.syncing.delete(id)
        else this.syncing.set(id, n)
      }
    }
  }

  /**
   * Copy bytes [fromByte, fromByte + length) of the block at `loc` into
   * `target` at `targetOffset` (fs.readSync). `length` is clamped to the end of
   * the block; returns the number of bytes copied. Throws CorruptStoreError if
   * the pack is missing or shorter than the block.
   */
  readInto (loc: BlockLocation, target: Uint8Array, targetOffset: number, fromByte: number, length: number): number {
    this.checkOpen()
    if (fromByte < 0 || length < 0 || targetOffset < 0) throw new RangeError('negative offset or length')
    const n = Math.min(length, loc.length - fromByte, target.length - targetOffset)
    if (n <= 0) return 0
    const fd = this.readFd(loc.pack)
    let done = 0
    while (done < n) {
      const got = fs.readSync(fd, target, targetOffset + done, n - done, loc.offset + fromByte + done)
      if (got === 0) {
        throw new CorruptStoreError(
          `pack ${this.packPath(loc.pack)} ends before the block at offset ${loc.offset} (${loc.length} bytes); run \`rewindfs verify\``,
          { path: this.packPath(loc.pack), pack: loc.pack, offset: loc.offset })
      }
      done += got
    }
    return n
  }

  /** Read the whole block at `loc` into a new Buffer. Throws like readInto. */
  read (loc: BlockLocation): Buffer {
    const b = Buffer.allocUnsafe(loc.length)
    this.readInto(loc, b, 0, 0, loc.length)
    return b
  }

  /** Read the record header in front of `loc` (for verify): its stored length, hash and BlockId. Throws like readInto. */
  readRecordHeader (loc: BlockLocation): { length: number, hash: bigint, id: BlockId } {
    const b = Buffer.alloc(RECORD_HEADER_SIZE)
    this.readInto({ pack: loc.pack, offset: loc.offset - RECORD_HEADER_SIZE, length: RECORD_HEADER_SIZE }, b, 0, 0, RECORD_HEADER_SIZE)
    return { length: b.readUInt32LE(0), hash: b.readBigUInt64LE(4), id: Number(b.readBigUInt64LE(12)) }
  }

  /**
   * What is wrong with pack `id` for blocks that end at byte `end`, in plain
   * words, or undefined when it exists, starts with the pack header and is
   * at least `end` bytes long. One stat and one 8-byte read.
   */
  checkPack (id: PackId, end: number): string | undefined {
    const file = this.packPath(id)
    let fd: number
    try { fd = fs.openSync(file, 'r') } catch (e: any) {
      return e.code === 'ENOENT' ? `pack ${file} is missing` : `pack ${file} cannot be opened (${e.message})`
    }
    try {
      const size = fs.fstatSync(fd).size
      const head = Buffer.alloc(PACK_MAGIC.length)
      if (fs.readSync(fd, head, 0, head.length, 0) < head.length || !head.equals(PACK_MAGIC)) return `pack ${file} has no ${PACK_MAGIC.toString('ascii')} header`
      if (size < end) return `pack ${file} is truncated: ${size} bytes, but its blocks end at byte ${end}`
      return undefined
    } finally { fs.closeSync(fd) }
  }

  /**
   * Scan one pack from the start, yielding each record whose header is
   * plausible and whose bytes fit in the file; stops at the first record that
   * does not (a torn tail). Hashes are NOT checked here (the caller hashes).
   * For `verify --repair`. Throws CorruptStoreError on a bad pack header.
   */
  * scanPack (id: PackId): Generator<ScannedRecord> {
    this.checkOpen()
    const fd = this.readFd(id)
    const size = fs.fstatSync(fd).size
    if (size === 0) return
    const head = Buffer.alloc(PACK_HEADER_SIZE)
    if (fs.readSync(fd, head, 0, PACK_HEADER_SIZE, 0) < PACK_HEADER_SIZE || !head.subarray(0, 8).equals(PACK_MAGIC)) {
      throw new CorruptStoreError(`pack ${this.packPath(id)} has no ${PACK_MAGIC.toString('ascii')} header`, { path: this.packPath(id), pack: id, offset: 0 })
    }
    const h = Buffer.alloc(RECORD_HEADER_SIZE)
    let pos = PACK_HEADER_SIZE
    while (pos + RECORD_HEADER_SIZE <= size) {
      if (fs.readSync(fd, h, 0, RECORD_HEADER_SIZE, pos) < RECORD_HEADER_SIZE) return
      const length = h.readUInt32LE(0)
      if (length < 1 || length > BLOCK_SIZE || pos + RECORD_HEADER_SIZE + length > size) return
      yield { location: { pack: id, offset: pos + RECORD_HEADER_SIZE, length }, hash: h.readBigUInt64LE(4), id: Number(h.readBigUInt64LE(12)) }
      pos += RECORD_HEADER_SIZE + length
    }
  }

  /** Ends the current pack: the next append starts a new one (garbage collection can then compact the old one). */
  startNewPack (): void {
    this.current = undefined
  }

  /** The pack appends go to now, or undefined before the first append of this process. */
  get currentPack (): PackId | undefined {
    return this.current
  }

  /** Every pack file in the pack directory with its size in bytes, by PackId. One readdir + one stat per pack. */
  listPacks (): Map<PackId, number> {
    const out = new Map<PackId, number>()
    for (const name of fs.readdirSync(this.dir)) {
      const m = /^([0-9a-f]{8})\.pack$/.exec(name)
      if (m === null) continue
      try { out.set(parseInt(m[1] as string, 16), fs.statSync(path.join(this.dir, name)).size) } catch {}
    }
    return out
  }

  /**
   * Delete pack files (garbage collection, once no index record points into
   * them), then fsync the pack directory. Never the current pack, nor one
   * with unsynced appends (RangeError). Returns the bytes the files held.
   */
  async deletePacks (ids: PackId[]): Promise<number> {
    this.checkOpen()
    let freed = 0
    for (const id of ids) {
      if (id === this.current || this.dirty.has(id) || this.syncing.has(id)) throw new RangeError(`pack ${id} is being written; it cannot be deleted`)
    }
    for (const id of ids) {
      const fd = this.fds.get(id)
      if (fd !== undefined) { this.fds.delete(id); fs.closeSync(fd) }
      const file = this.packPath(id)
      try {
        freed += fs.statSync(file).size
        fs.unlinkSync(file)
      } catch (err: any) {
        if (err.code !== 'ENOENT') throw storeIoError(err, `delete pack ${file}`, { path: file, pack: id })
      }
    }
    if (ids.length > 0) {
      const h = await fs.promises.open(this.dir, 'r')
      try { await h.sync() } finally { await h.close() }
    }
    return freed
  }

  /** True while pack `id` has appends not yet made durable (or being made durable). */
  isWriting (id: PackId): boolean {
    return id === this.current || this.dirty.has(id) || this.syncing.has(id)
  }

  /** Close every fd. Appended but unsynced bytes may be lost on a crash. Closing twice is allowed. */
  close (): void {
    if (this.closed) return
    // an in-flight sync() keeps using its fds; callers await sync() before close()
    this.closed = true
    for (const fd of this.fds.values()) fs.closeSync(fd)
    this.fds.clear()
  }

  /** Create the next pack (O_EXCL: never reuse a file) and write its header. */
  private roll (): void {
    const id = this.nextPack++
    const file = this.packPath(id)
    let fd: number
    try { fd = fs.openSync(file, 'wx+') } catch (err) { throw storeIoError(err, `create pack ${file}`, { path: file, pack: id }) }
    const head = Buffer.alloc(PACK_HEADER_SIZE)
    PACK_MAGIC.copy(head, 0)
    try {
      writeFully(fd, head, 0)
    } catch (err) {
      // no pack without a whole header (a scan would call it corrupt): remove it
      fs.closeSync(fd)
      try { fs.unlinkSync(file) } catch {}
      throw storeIoError(err, `create pack ${file}`, { path: file, pack: id })
    }
    this.current = id
    this.currentEnd = PACK_HEADER_SIZE
    this.remember(id, fd)
    this.dirty.add(id)
    this.dirDirty = true
  }

  private readFd (id: PackId): number {
    const fd = this.fds.get(id)
    if (fd !== undefined) {
      this.fds.delete(id)
      this.fds.set(id, fd) // most recently used
      return fd
    }
    let opened: number
    try {
      opened = fs.openSync(this.packPath(id), 'r')
    } catch (err) {
      throw new CorruptStoreError(
        `pack ${this.packPath(id)} cannot be opened (${(err as Error).message}); run \`rewindfs verify\``,
        { path: this.packPath(id), pack: id, cause: err })
    }
    this.remember(id, opened)
    return opened
  }

  private remember (id: PackId, fd: number): void {
    this.fds.set(id, fd)
    for (const [old, oldFd] of this.fds) {
      if (this.fds.size <= this.maxOpenPacks) break
      if (old === this.current || this.dirty.has(old) || this.syncing.has(old)) continue
      this.fds.delete(old)
      fs.closeSync(oldFd)
    }
  }

  private checkOpen (): void {
    if (this.closed) throw new StoreClosedError(`packs in ${this.dir} are closed`, { path: this.dir })
  }
}

/**
 * Writes a record's header and bytes at `position` of `fd` with one pwritev;
 * after a short write (a signal, a filesystem near full) the rest follows
 * with pwrite at the right offsets. Throws the write's error (ENOSPC, EIO).
 * `writev` is replaceable for tests (default fs.writevSync).
 */
export function writeRecord (fd: number, header: Uint8Array, data: Uint8Array, position: number,
  writev: (fd: number, bufs: Uint8Array[], position: number) => number = fs.writevSync): void {
  const done = writev(fd, [header, data], position)
  if (done >= header.length + data.length) return
  if (done < header.length) {
    writeFully(fd, header.subarray(done), position + done)
    writeFully(fd, data, position + header.length)
  } else writeFully(fd, data.subarray(done - header.length), position + done)
}

function writeFully (fd: number, data: Uint8Array, position: number): void {
  let done = 0
  while (done < data.length) {
    done += fs.writeSync(fd, data, done, data.length - done, position + done)
  }
}

async function fdatasync (fd: number): Promise<void> {
  await new Promise<void>((resolve, reject) => fs.fdatasync(fd, err => err === null ? resolve() : reject(err)))
}
