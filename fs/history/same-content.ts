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
 * record is of the live state (its unsealed writes count).
 */
export function sameContent (ws: Workspace, x: InodeRecord, y: InodeRecord, xLive: boolean, yLive: boolean): boolean {
  if (x.size !== y.size || x.target !== y.target || x.rdev !== y.rdev) return false
  if ((x.mode & S_IFMT) !== S_IFREG) return true
  const xd = xLive ? ws.hasUnsealedWrites(x) : false
  const yd = yLive ? ws.hasUnsealedWrites(y) : false
  if (x.lower && y.lower && !x.blocks && !y.blocks && sameLower(ws.lower, x, y)) return true
  if (x.size === 0) return true
  const bx = blocksOf(ws.lower, x); const by = blocksOf(ws.lower, y)
  if (bx && by && !xd && !yd) return sameBlocks(ws, x, y, bx, by)
  const ranges: Array<[number, number]> = []
  for (let pos = 0; pos < x.size; pos += COMPARE_CHUNK) ranges.push([pos, Math.min(COMPARE_CHUNK, x.size - pos)])
  return sameBytes(ws, x, y, ranges, xd, yd)
}

/** Two block lists of files of one size: the blocks whose ids differ are compared byte for byte. */
function sameBlocks (ws: Workspace, x: InodeRecord, y: InodeRecord, bx: BlockList, by: BlockList): boolean {
  if (bx.equals(by)) return true
  const differ = new Set<number>()
  for (const [k, id] of bx.entries()) if (by.get(k) !== id) differ.add(k)
  for (const [k, id] of by.entries()) if (bx.get(k) !== id) differ.add(k)
  const ranges: Array<[number, number]> = []
  for (const k of differ) {
    const pos = k * BLOCK_SIZE
    const n = Math.min(BLOCK_SIZE, x.size - pos)
    if (n > 0) ranges.push([pos, n])
  }
  return sameBytes(ws, x, y, ranges, false, false)
}

/**
 * True when `x` and `y` hold the same bytes in every range [pos, length]
 * (bytes); stops at the first difference. `xd`/`yd`: read unsealed writes of
 * the live record. A record that cannot be read counts as different.
 */
function sameBytes (ws: Workspace, x: InodeRecord, y: InodeRecord, ranges: Array<[number, number]>, xd: boolean, yd: boolean): boolean {
  const max = ranges.reduce((m, r) => Math.max(m, r[1]), 0)
  const a = Buffer.allocUnsafe(max); const b = Buffer.allocUnsafe(max)
  try {
    for (const [pos, n] of ranges) {
      ws.readRecord(x, a, n, pos, xd)
      ws.readRecord(y, b, n, pos, yd)
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

/**
 * True when two lower references (file content or a directory's listing)
 * name the same thing. References of one mount session do when they name
 * one path. Every mount session reads the directory as a new lower layer,
 * so after an unmount and a remount the same unchanged file is `{s: 1, p}`
 * in the old records and `{s: 2, p}` in the new ones. Two sessions' references
 * to one path name the same thing when no write-back changed the path in
 * between: write-back freezes a path before it changes it (for every
 * session up to its own, fs/writeback.ts), so that is when both resolve
 * to the same frozen copy, or both to the directory as it is now
 * (LowerLayer.frozenFor). For files one more condition: the two records
 * agree on mtime or on ctime (write-back that sets only a file's attributes
 * changes its ctime; when the mtime was changed too, a file with the same
 * bytes is reported modified: the references cannot tell). Edits made to the directory while it was not mounted
 * are outside what rewindfs versions: both references then read the edited
 * bytes, the old ones are gone. Through this rule such an edit shows as
 * changed content (a size that differs always does), unless it set the mtime
 * back too; then only what else differs (mode, owner, ...) shows.
 */
export function sameLower (lower: LowerLayer, x: InodeRecord, y: InodeRecord): boolean {
  const a = x.lower!; const b = y.lower!
  if (a.p !== b.p) return false
  if (a.s === b.s) return true
  if (lower.frozenFor(a) !== lower.frozenFor(b)) return false
  return (x.mode & S_IFMT) !== S_IFREG || x.mtime === y.mtime || x.ctime === y.ctime
}
