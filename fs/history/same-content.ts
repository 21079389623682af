/**
 * Whether two file records hold the same bytes, for diff (issue 11, item
 * 4): `M` means the bytes differ, never that only the mtime does. A file's
 * content is known as a block list (its own, or the frozen copy its lower
 * reference resolves to) or as a file of the lower directory. Rules,
 * cheapest first:
 *  - other size: different;
 *  - both lower references that `sameLower` finds the same: equal;
 *  - both block lists and no unsealed writes: equal ids at every block are
 *    equal bytes (blocks are content-addressed, a hash hit is confirmed byte
 *    for byte, so equal bytes written through the store get one id); where
 *    the ids differ, those blocks' bytes are compared (a block stored while
 *    deduplication could not confirm, e.g. after a repair, may repeat bytes
 *    under a new id). Cost: O(blocks holding data) to walk the lists, plus
 *    64 KiB read per block whose ids differ, stopping at the first
 *    difference;
 *  - otherwise (a block list against a file of the directory, e.g. a file
 *    edited in one session and read back from the directory after its
 *    write-back in the next; unsealed writes): the bytes are compared, 1 MiB
 *    at a time, O(size) reads, stopping at the first difference. A lower
 *    file that cannot be read counts as different.
 * The mtime is not consulted: `git reset --hard` rewrites files with the
 * bytes they had and a new mtime, which is an attribute change (`m`).
 */
import { BLOCK_SIZE } from '../../base/types.js'
import { type InodeRecord, S_IFMT, S_IFREG } from '../inode.js'
import { BlockList } from '../blocklist.js'
import { type LowerLayer, frozenBlocks } from '../lower.js'
import type { Workspace } from '../workspace.js'

/** Bytes compared per read when content is compared byte by byte. */
const COMPARE_CHUNK = 1 << 20

/**
 * Content of two non-directory records: the bytes of files, the target of
 * symlinks, the device number of devices. `xLive`/`yLive` say whether a
 * record is of the live state (its unsealed writes count). `sameLower` is
 * generations' test that two lower references name the same unchanged
 * lower entry.
 */
export function sameContent (ws: Workspace, x: InodeRecord, y: InodeRecord, xLive: boolean, yLive: boolean,
  sameLower: (lower: LowerLayer, x: InodeRecord, y: InodeRecord) => boolean): boolean {
  if (x.size !== y.size || x.target !== y.target || x.rdev !== y.rdev) return false
  if ((x.mode & S_IFMT) !== S_IFREG) return true
  const xd = xLive ? ws.hasUnsealedWrites(x) : false
  const yd = yLive ? ws.hasUnsealedWrites(y) : false
  if (x.lower && y.lower && !x.blocks && !y.blocks && sameLower(ws.lower, x, y)) return true
  if (x.size === 0) return true
  const bx = blocksOf(ws.lower, x); const by = blocksOf(ws.lower, y)
  if (bx && by && !xd && !yd) return sameBlocks(ws, x, y, bx, by)
  const a = Buffer.allocUnsafe(Math.min(COMPARE_CHUNK, x.size)); const b = Buffer.allocUnsafe(a.length)
  try {
    for (let pos = 0; pos < x.size; pos += a.length) {
      const n = Math.min(a.length, x.size - pos)
      ws.readRecord(x, a, n, pos, xd)
      ws.readRecord(y, b, n, pos, yd)
      if (!a.subarray(0, n).equals(b.subarray(0, n))) return false
    }
  } catch {
    return false
  }
  return true
}

/** Two block lists of files of one size: the blocks whose ids differ are compared byte for byte. */
function sameBlocks (ws: Workspace, x: InodeRecord, y: InodeRecord, bx: BlockList, by: BlockList): boolean {
  if (bx.equals(by)) return true
  const differ = new Set<number>()
  for (const [k, id] of bx.entries()) if (by.get(k) !== id) differ.add(k)
  for (const [k, id] of by.entries()) if (bx.get(k) !== id) differ.add(k)
  const a = Buffer.allocUnsafe(BLOCK_SIZE); const b = Buffer.allocUnsafe(BLOCK_SIZE)
  try {
    for (const k of differ) {
      const pos = k * BLOCK_SIZE
      const n = Math.min(BLOCK_SIZE, x.size - pos)
      if (n <= 0) continue
      ws.readRecord(x, a, n, pos, false)
      ws.readRecord(y, b, n, pos, false)
      if (!a.subarray(0, n).equals(b.subarray(0, n))) return false
    }
  } catch {
    return false
  }
  return true
}


/** The block list of a file record: its own, the frozen copy its lower reference resolves to, or undefined (a lower file). */
function blocksOf (lower: LowerLayer, r: InodeRecord): BlockList | undefined {
  if (r.blocks) return r.blocks
  if (!r.lower) return BlockList.empty()
  const f = lower.frozenFor(r.lower)?.blocks
  return f ? frozenBlocks(f) : undefined
}
