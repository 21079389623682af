/**
 * Rewind memory: what an agent learned before it rewound (what was tried, why
 * it was abandoned, what to do instead, facts that stay true), kept by the
 * daemon per run so that it survives a client crash and a daemon kill -9.
 *
 * Shapes: a run is named by a string (validated by proto/validate.ts: 1..200
 * characters, no control characters, no '!'); its memory is a list of JSON
 * objects (entries) in insertion order. It only grows: an entry is never
 * overwritten or removed.
 *
 * Records (store/FORMAT.md "Rewind memory"): kind `memory`, key
 * `<run>!<seq>` with seq a 16-hex-digit intKey counting from 0, value
 * `{time, entry}`. An add is written with sync before it resolves.
 *
 * Errors: whatever the store throws (StoreClosedError after close,
 * CorruptStoreError on an undecodable record); a record without an `entry`
 * object is E_CORRUPT.
 */
import { ApiError } from '../proto/errors.js'
import type { MemoryEntry } from '../proto/messages.js'
import { intKey, type StoreDb } from '../store/db.js'

/** A persisted memory record (kind `memory`). */
export interface MemoryRecord {
  /** when it was added, ms since the Unix epoch */
  time: number
  entry: MemoryEntry
}

/** The rewind memory of every run in one store. */
export class Memory {
  /** entries per run, once counted (the next sequence number) */
  private readonly counts = new Map<string, number>()
  /** adds are serialised so sequence numbers are never shared */
  private tail: Promise<unknown> = Promise.resolve()

  constructor (private readonly db: StoreDb) {}

  /** Appends `entry` to `run`'s memory, durably (sync). Resolves to the number of entries now. */
  add (run: string, entry: MemoryEntry): Promise<number> {
    const p = this.tail.then(async () => {
      const seq = await this.count(run)
      const rec: MemoryRecord = { time: Date.now(), entry }
      await this.db.batch().put('memory', key(run, seq), rec).write({ sync: true })
      this.counts.set(run, seq + 1)
      return seq + 1
    })
    this.tail = p.catch(() => {})
    return p
  }

  /** Every entry of `run`'s memory in insertion order ([] for an unknown run). */
  async get (run: string): Promise<MemoryEntry[]> {
    const out: MemoryEntry[] = []
    for await (const e of this.db.iterate<MemoryRecord>('memory', { gte: key(run, 0), lt: `${run}"` })) {
      if (typeof e.value !== 'object' || e.value === null || typeof e.value.entry !== 'object' || e.value.entry === null) {
        throw new ApiError('E_CORRUPT', `rewind memory record ${e.key} has no entry; run rewindfs verify`)
      }
      out.push(e.value.entry)
    }
    return out
  }

  /** Number of entries of `run`: the last key's sequence + 1 (one reverse seek), cached. */
  private async count (run: string): Promise<number> {
    const hit = this.counts.get(run)
    if (hit !== undefined) return hit
    let n = 0
    for await (const e of this.db.iterate<MemoryRecord>('memory', { gte: key(run, 0), lt: `${run}"`, reverse: true, limit: 1 })) {
      n = parseInt(e.key.slice(run.length + 1), 16) + 1
    }
    this.counts.set(run, n)
    return n
  }
}

/** Key of entry `seq` of `run`: `<run>!<16 hex digits>`; '"' (after '!') bounds a run's keys. */
function key (run: string, seq: number): string {
  return `${run}!${intKey(seq)}`
}
