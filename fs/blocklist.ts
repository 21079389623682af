/**
 * The content of one regular file as a list of blocks: block k holds bytes
 * [k × BLOCK_SIZE, (k + 1) × BLOCK_SIZE) of the file; a block that is not
 * stored is a hole and reads as zeros. Memory and persisted size are in
 * proportion to the blocks that hold data, not to the file's size: a 10 TiB
 * file made by truncate costs nothing, one written at a 15 TiB offset costs
 * one entry (issue 11, item 1).
 *
 * In memory: a dense prefix (`BlockId[]`, 0 for a hole, up to the last
 * block written near it) and a map of the blocks beyond it that a gap of
 * more than DENSE_GAP holes separates from it. Persisted (store format 3,
 * FORMAT.md "Inode record"): an array where an entry ≥ 1 is a BlockId, 0 one
 * hole and a negative integer -n a run of n holes; trailing holes are not
 * written (the record's size says where the file ends). A format-2 block
 * list (one entry per block, 0 for a hole, no negatives) is a valid
 * format-3 one, so format-2 stores need no rewrite.
 */
import { BLOCK_SIZE, type BlockId } from '../base/types.js'

/** Holes a write may leave between the dense prefix and itself before the block goes to the map (64 entries = 4 MiB of file). */
const DENSE_GAP = 64

/** Largest number of blocks a list may hold: 2^28 (16 TiB / 64 KiB, MAX_FILE_BYTES). */
export const MAX_BLOCKS = 2 ** 28

export class BlockList {
  /** blocks 0 .. dense.length-1; 0 is a hole */
  private dense: BlockId[]
  /** blocks at k ≥ dense.length that hold data (never 0) */
  private far: Map<number, BlockId> | undefined
  /** number of blocks that hold data (not holes) */
  private used: number

  private constructor (dense: BlockId[], far: Map<number, BlockId> | undefined, used: number) {
    this.dense = dense
    this.far = far
    this.used = used
  }

  /** An empty list (every block a hole). */
  static empty (): BlockList { return new BlockList([], undefined, 0) }

  /** A list from one id per block (0 for a hole), as format 2 stored it; the array is copied. */
  static fromDense (ids: readonly BlockId[]): BlockList {
    let used = 0
    for (const id of ids) if (id !== 0) used++
    return new BlockList(ids.slice(), undefined, used)
  }

  /**
   * Decodes the persisted form (format 3, or format 2's dense array).
   * Throws TypeError when `v` is not an array of integers or a run goes
   * past MAX_BLOCKS.
   */
  static decode (v: unknown): BlockList {
    if (!Array.isArray(v)) throw new TypeError('block list is not an array')
    const l = BlockList.empty()
    let k = 0
    for (const x of v) {
      if (typeof x !== 'number' || !Number.isInteger(x)) throw new TypeError(`block list entry ${String(x)} is not an integer`)
      if (x < 0) k += -x
      else { if (x !== 0) l.set(k, x); k++ }
      if (k > MAX_BLOCKS) throw new TypeError(`block list runs past ${MAX_BLOCKS} blocks`)
    }
    return l
  }

  /** The persisted form (see the module comment): O(blocks holding data + runs of holes). */
  encode (): number[] {
    const out: number[] = []
    let pos = 0
    for (const [k, id] of this.entries()) {
      const gap = k - pos
      if (gap === 1) out.push(0)
      else if (gap > 1) out.push(-gap)
      out.push(id)
      pos = k + 1
    }
    return out
  }

  /** Block k's id, 0 for a hole. */
  get (k: number): BlockId {
    if (k < this.dense.length) return this.dense[k]!
    return this.far?.get(k) ?? 0
  }

  /** Sets block k (0 makes it a hole). Throws RangeError for k outside 0 .. MAX_BLOCKS-1. */
  set (k: number, id: BlockId): void {
    if (!(k >= 0 && k < MAX_BLOCKS)) throw new RangeError(`block index ${k} out of range`)
    const prev = this.get(k)
    if (prev === id) return
    this.used += (id !== 0 ? 1 : 0) - (prev !== 0 ? 1 : 0)
    const d = this.dense
    if (k < d.length) { d[k] = id; return }
    if (id === 0) { this.far!.delete(k); return }
    if (k - d.length > DENSE_GAP) { (this.far ??= new Map()).set(k, id); return }
    while (d.length < k) d.push(0)
    d.push(id)
    this.far?.delete(k)
    // blocks of the map that now continue the prefix join it
    while (this.far !== undefined && this.far.size > 0) {
      const next = this.far.get(d.length)
      if (next === undefined) break
      d.push(next)
      this.far.delete(d.length - 1)
    }
  }

  /** Makes every block at k ≥ count a hole (truncate). O(blocks dropped + map size). */
  truncate (count: number): void {
    const d = this.dense
    if (count < d.length) {
      for (let k = count; k < d.length; k++) if (d[k] !== 0) this.used--
      d.length = count
    }
    if (this.far) for (const k of [...this.far.keys()]) if (k >= count) { this.far.delete(k); this.used-- }
  }

  /** Number of blocks that hold data. O(1). */
  get dataBlocks (): number { return this.used }

  /** One past the highest block that holds data (0 when none). */
  get extent (): number {
    let top = 0
    if (this.far) for (const k of this.far.keys()) if (k + 1 > top) top = k + 1
    if (top > 0) return top
    for (let k = this.dense.length - 1; k >= 0; k--) if (this.dense[k] !== 0) return k + 1
    return 0
  }

  /** [k, id] of every block that holds data, in increasing k. */
  * entries (): IterableIterator<[number, BlockId]> {
    const d = this.dense
    for (let k = 0; k < d.length; k++) if (d[k] !== 0) yield [k, d[k]!]
    if (this.far && this.far.size > 0) {
      const ks = [...this.far.keys()].sort((a, b) => a - b)
      for (const k of ks) yield [k, this.far.get(k)!]
    }
  }

  /** Every id of a block that holds data (with repeats, in increasing k). */
  * ids (): IterableIterator<BlockId> {
    for (const [, id] of this.entries()) yield id
  }

  /** Iterating a list yields ids(). */
  [Symbol.iterator] (): IterableIterator<BlockId> { return this.ids() }

  /** A copy the caller may change (O(blocks holding data)). */
  clone (): BlockList {
    return new BlockList(this.dense.slice(), this.far ? new Map(this.far) : undefined, this.used)
  }

  /** True when both lists hold the same id at every block. */
  equals (o: BlockList): boolean {
    if (o === this) return true
    if (o.used !== this.used) return false
    const a = this.entries()
    const b = o.entries()
    for (;;) {
      const x = a.next()
      const y = b.next()
      if (x.done || y.done) return x.done === y.done
      if (x.value[0] !== y.value[0] || x.value[1] !== y.value[1]) return false
    }
  }
}

const ZERO = Buffer.alloc(BLOCK_SIZE)

/**
 * True when every byte of `b` (at most BLOCK_SIZE bytes) is 0: such a block
 * is kept as a hole (id 0), never stored. Native memcmp against a zero block.
 */
export function isZeroBlock (b: Uint8Array): boolean {
  return Buffer.from(b.buffer, b.byteOffset, b.length).equals(ZERO.subarray(0, b.length))
}
