/**
 * Saying "the store's disk is full" when something failed for lack of space
 * on it, even when no message reached us (the daemon's log is on that disk).
 */
import { freeBytes } from './space.js'
import { NO_SPACE_ADVICE } from './errors.js'

/** Below this many free bytes a filesystem counts as full for diagnosis: LevelDB cannot even start a new log (1 MiB). */
export const FULL_BELOW = 1024 * 1024

/** True when `text` says a write failed for lack of space. */
export function saysNoSpace (text: string): boolean {
  return /No space left on device|ENOSPC|EDQUOT|E_NO_SPACE|Disk quota exceeded|filesystem is full/i.test(text)
}

/**
 * When the store's filesystem is full (less than FULL_BELOW free), or
 * `reason` says so: "the store's filesystem (STORE) is full (N bytes free):
 * free space there, then NEXT; nothing is lost". Otherwise null.
 * @param store the store directory
 * @param next what to run once space is freed (e.g. "run rewindfs mount DIR again")
 * @param reason what the failing process said, if anything
 */
export function fullDiskNote (store: string, next: string, reason = ''): string | null {
  const free = freeBytes(store)
  if (!(free !== null && free < FULL_BELOW) && !saysNoSpace(reason)) return null
  const amount = free === null ? '' : ` (${free} bytes free)`
  return `the store's filesystem (${store}) is full${amount}: ${NO_SPACE_ADVICE}, then ${next}; nothing is lost`
}
