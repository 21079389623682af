/**
 * What a store has lost, for verify and `verify --repair`: checkpoints whose
 * records are gone (ids below the highest the store remembers that garbage
 * collection did not remove), a missing state record, and the content the
 * packs still hold that no checkpoint reaches any more.
 *
 * The highest checkpoint id the store remembers is the largest of: the
 * state's counter (`nextCheckpoint - 1`), every checkpoint record's id and
 * parent, every branch's base and head, the state's head, and the
 * checkpoint of the last unmount (`<store>/unmount.json`, outside LevelDB,
 * so it survives a lost database). Garbage collection writes the ids it
 * removes to `meta.gcRemoved` (FORMAT.md), so its gaps are not losses.
 */
import fs from 'node:fs'
import path from 'node:path'
import type { BlockId } from '../../base/types.js'

/** Meta key of the checkpoint ids garbage collection removed: sorted, disjoint [lo, hi] ranges. */
export const META_GC_REMOVED = 'gcRemoved'

/** Inclusive ranges of ids, sorted and disjoint. */
export type IdRanges = Array<[number, number]>

/** `ranges` with `ids` added, merged (sorted, disjoint, adjacent ranges joined). Does not modify its arguments. */
export function addRanges (ranges: IdRanges, ids: Iterable<number>): IdRanges {
  const all: IdRanges = [...ranges.map(([lo, hi]) => [lo, hi] as [number, number]), ...[...ids].map(i => [i, i] as [number, number])]
  all.sort((a, b) => a[0] - b[0])
  const out: IdRanges = []
  for (const [lo, hi] of all) {
    const last = out[out.length - 1]
    if (last && lo <= last[1] + 1) last[1] = Math.max(last[1], hi)
    else out.push([lo, hi])
  }
  return out
}

/** True when `id` is in one of `ranges`. */
export function inRanges (ranges: IdRanges, id: number): boolean {
  return ranges.some(([lo, hi]) => lo <= id && id <= hi)
}

/** Reads a stored IdRanges value; anything malformed counts as none. */
export function asRanges (v: unknown): IdRanges {
  if (!Array.isArray(v)) return []
  return v.filter((r): r is [number, number] => Array.isArray(r) && r.length === 2 && Number.isSafeInteger(r[0]) && Number.isSafeInteger(r[1]) && r[0] <= r[1])
}

/** Number of ids in `ranges`. */
export function countRanges (ranges: IdRanges): number {
  return ranges.reduce((n, [lo, hi]) => n + hi - lo + 1, 0)
}

/** "#1..#4, #7" (at most `max` ranges, then "and N more"). */
export function fmtRanges (ranges: IdRanges, max = 10): string {
  const parts = ranges.slice(0, max).map(([lo, hi]) => lo === hi ? `#${lo}` : `#${lo}..#${hi}`)
  return parts.join(', ') + (ranges.length > max ? ` and ${ranges.length - max} more ranges` : '')
}

/**
 * The ids in 1..highest that are neither in `present` nor in `removed`, as
 * ranges. O(present + removed) — never a loop over 1..highest.
 */
export function missingIds (highest: number, present: Iterable<number>, removed: IdRanges): IdRanges {
  const known = addRanges(removed, [...present].filter(i => i >= 1 && i <= highest))
  const out: IdRanges = []
  let next = 1
  for (const [lo, hi] of known) {
    if (lo > highest) break
    if (lo > next) out.push([next, Math.min(lo - 1, highest)])
    next = Math.max(next, hi + 1)
  }
  if (next <= highest) out.push([next, highest])
  return out
}

/** The checkpoint of the last unmount, from `<store>/unmount.json` (outside LevelDB), or null. */
export function lastUnmountCheckpoint (store: string): number | null {
  try {
    const v = JSON.parse(fs.readFileSync(path.join(store, 'unmount.json'), 'utf8'))
    return Number.isSafeInteger(v?.checkpoint) && v.checkpoint > 0 ? v.checkpoint : null
  } catch { return null }
}

/** What the store lost (VerifyReport.losses). */
export interface Losses {
  /** highest checkpoint id the store remembers having made (0: none known) */
  highest: number
  /** ids of checkpoints whose records are gone (not removed by gc) */
  checkpoints: IdRanges
  /** number of ids in `checkpoints` */
  checkpointCount: number
  /** true when the state record (head, branch, counters) is missing while the store holds data */
  stateMissing: boolean
  /** blocks with an intact copy in the packs that no checkpoint, live state or frozen path uses; null when the packs were not scanned */
  unreachableBlocks: number | null
  /** their bytes */
  unreachableBytes: number | null
}

/** Blocks of `scanned` (id → bytes) that `used` does not contain: count and bytes. */
export function unreachable (scanned: Map<BlockId, number>, used: Set<BlockId>): { blocks: number, bytes: number } {
  let blocks = 0
  let bytes = 0
  for (const [id, len] of scanned) if (!used.has(id)) { blocks++; bytes += len }
  return { blocks, bytes }
}

/** MiB with one decimal. */
export function mib (bytes: number): string {
  return (bytes / 1048576).toFixed(1)
}

/**
 * The plain-words summary of `l` (what repair, `afterRepair`, and verify print), or null
 * when nothing was lost. Names the lost checkpoints, the content the packs
 * still hold, and that gc would delete it.
 */
export function describeLosses (l: Losses, afterRepair: boolean): string | null {
  const verb = afterRepair ? 'could not be rebuilt' : 'are gone (repair cannot rebuild them: they lived only in the metadata database)'
  const lostRecords = l.checkpointCount > 0 || l.stateMissing
  if (!lostRecords) return null
  const what = l.checkpointCount > 0
    ? `the records of ${l.checkpointCount} checkpoint${l.checkpointCount === 1 ? '' : 's'} (${fmtRanges(l.checkpoints)}) ${verb}`
    : `the records of all checkpoints (how many is not known: the store remembers none) ${verb}`
  const held = l.unreachableBytes !== null && l.unreachableBytes > 0
    ? `: the packs still hold ${mib(l.unreachableBytes)} MiB of their content, which no checkpoint reaches (${l.unreachableBlocks} blocks)`
    : ''
  const state = l.stateMissing ? '. The store\'s state record (head, branch, counters) is gone too: the next mount starts over at checkpoint #1 from the directory as it is' : ''
  const gc = l.unreachableBytes !== null && l.unreachableBytes > 0
    ? '. rewindfs gc would delete them; copy the store directory first if you want to keep them (the bytes are in its packs/, each block record carrying its hash and id: FORMAT.md)'
    : ''
  return `${what}${held}${state}${gc}`
}
