/**
 * SpaceGuard: keeps new file data from filling the store's filesystem, so
 * that a full disk never leaves the store unable to seal a checkpoint.
 *
 * Writes of new data ask `ensure(bytes)` first and fail with E_NO_SPACE
 * (ENOSPC to the writer) once the filesystem would keep less than `reserve`
 * bytes free. What the reserve is for: sealing data already buffered in
 * memory, the metadata of checkpoints, fsync and LevelDB compactions, which
 * are not refused. When space returns (files deleted there), the
 * next `ensure` sees it and writes work again.
 *
 * Cost: one statfs(2) at most every REFRESH_MS while far from the reserve;
 * closer to it, a statfs whenever the bytes written since the last one could
 * have used half of what was left above the reserve.
 */
import fs from 'node:fs'
import { StoreNoSpaceError, NO_SPACE_ADVICE } from './errors.js'

/** Default bytes kept free on the store's filesystem: 64 MiB. */
export const DEFAULT_RESERVE = 64 * 1024 * 1024
/** Longest time between two statfs calls, ms. */
const REFRESH_MS = 100

export class SpaceGuard {
  private free = 0
  private checkedAt = -Infinity
  private since = 0

  /**
   * @param dir a directory on the store's filesystem (statfs target)
   * @param reserve bytes to keep free (>= 0)
   * @param now clock in ms (tests replace it)
   */
  constructor (readonly dir: string, readonly reserve: number = DEFAULT_RESERVE, private readonly now: () => number = () => performance.now()) {
    if (!Number.isSafeInteger(reserve) || reserve < 0) throw new RangeError(`reserve must be a non-negative number of bytes, got ${reserve}`)
  }

  /**
   * Throws StoreNoSpaceError (E_NO_SPACE) when writing `bytes` more would
   * leave less than the reserve free. Nothing is counted here: the writer
   * calls `used` for what it really appends.
   */
  ensure (bytes: number): void {
    const t = this.now()
    if (t - this.checkedAt > REFRESH_MS || this.since + bytes > (this.free - this.reserve) / 2) this.refresh(t)
    const left = this.free - this.since - bytes
    if (left < this.reserve) {
      throw new StoreNoSpaceError(
        `the store's filesystem (${this.dir}) has ${fmt(Math.max(0, this.free - this.since))} free, and rewindfs keeps ${fmt(this.reserve)} of it for checkpoints: ` +
        `new data is refused with ENOSPC until space is freed: ${NO_SPACE_ADVICE}; everything written so far is kept`,
        { path: this.dir, errno: 'ENOSPC' })
    }
  }

  /** Free bytes above the reserve now (one statfs; negative when below it). */
  aboveReserve (): number {
    this.refresh(this.now())
    return this.free - this.reserve
  }

  /** Counts bytes appended to the store since the last statfs. */
  used (bytes: number): void { this.since += bytes }

  /** Forgets the last reading (after a write failed with ENOSPC): the next ensure runs statfs. */
  stale (): void { this.checkedAt = -Infinity }

  private refresh (t: number): void {
    const s = fs.statfsSync(this.dir)
    this.free = s.bavail * s.bsize
    this.since = 0
    this.checkedAt = t
  }
}

function fmt (n: number): string {
  return n >= 1024 * 1024 ? `${(n / 1024 / 1024).toFixed(1)} MiB` : `${n} bytes`
}

/**
 * Bytes free for an unprivileged writer on the filesystem holding `dir`
 * (statfs bavail × bsize), or null when statfs fails (dir missing: the
 * nearest existing parent is asked first).
 */
export function freeBytes (dir: string): number | null {
  let d = dir
  for (;;) {
    try {
      const s = fs.statfsSync(d)
      return s.bavail * s.bsize
    } catch (e: any) {
      const up = d.replace(/\/[^/]*\/?$/, '') || '/'
      if (e?.code !== 'ENOENT' || up === d) return null
      d = up
    }
  }
}
