/**
 * The live generation's record of which tool call changed which inode
 * (DECISIONS.md "Attribution of changes to tool calls"): the daemon's
 * tool calls (daemon/calls.ts) feed it from the FUSE adapter's reports;
 * each mark takes what its segment recorded (checkpoint.ts) and groups the
 * segment's diff by call (attribution.ts). Its own module so that
 * history.ts can name it without an import cycle.
 *
 * Memory: one entry per changed inode (and per removed name) while calls
 * are open; each mark starts empty.
 */
import type { Ino } from '../../base/types.js'

/** Longest `args` kept per call, UTF-16 code units (as the recorder's SHORT_ARGS_MAX). */
export const CALL_ARGS_MAX = 200

/** One tool call as the daemon keeps it (daemon/calls.ts owns the object; `ended` and `exitStatus` change at call_end). */
export interface CallMeta {
  call: number
  tool: string
  /** the arguments as JSON, cut to CALL_ARGS_MAX */
  args: string
  mechanism: 'cgroup' | 'pid'
  /** ms since the epoch */
  started: number
  /** ms since the epoch; null while open */
  ended: number | null
  exitStatus: number | null
}

/** What the cut of a mark takes from the log (see CallLog.take). */
export interface TakenCalls {
  /** the segment's calls (copies as they were at the cut), in the order they began */
  calls: CallMeta[]
  byIno: Map<Ino, Set<number>>
  /** `${dir ino}/${name}` → calls that removed or renamed away that name */
  byName: Map<string, Set<number>>
}

/** The live generation's record of changes by call; reset by each mark (take). */
export class CallLog {
  /** calls of the current segment: begun in it, open when it began, or whose processes changed something in it */
  private segment = new Map<number, CallMeta>()
  private byIno = new Map<Ino, Set<number>>()
  private byName = new Map<string, Set<number>>()

  /** `meta` belongs to the current segment (it began, or is open). */
  include (meta: CallMeta): void { this.segment.set(meta.call, meta) }

  /** True while the segment has a call (a mark then attributes its changes). */
  get any (): boolean { return this.segment.size > 0 }

  /** Inode `ino` was changed by call `meta`. */
  changed (ino: Ino, meta: CallMeta): void {
    this.segment.set(meta.call, meta)
    add(this.byIno, ino, meta.call)
  }

  /** Name `name` of directory `dir` was removed or renamed away by call `meta`. */
  removedName (dir: Ino, name: string, meta: CallMeta): void {
    this.segment.set(meta.call, meta)
    add(this.byName, `${dir}/${name}`, meta.call)
  }

  /**
   * The cut of a mark: what the segment recorded, or null when it had no
   * call; the log starts the next segment with the calls still open.
   */
  take (): TakenCalls | null {
    if (this.segment.size === 0) return null
    const t: TakenCalls = { calls: [...this.segment.values()].map(m => ({ ...m })).sort((a, b) => a.call - b.call), byIno: this.byIno, byName: this.byName }
    this.byIno = new Map()
    this.byName = new Map()
    const next = new Map<number, CallMeta>()
    for (const m of this.segment.values()) if (m.ended === null) next.set(m.call, m)
    this.segment = next
    return t
  }

  /** Gives back what `take` took (the mark failed: its segment goes on). */
  putBack (t: TakenCalls): void {
    for (const m of t.calls) if (!this.segment.has(m.call)) this.segment.set(m.call, m)
    for (const [k, s] of t.byIno) for (const c of s) add(this.byIno, k, c)
    for (const [k, s] of t.byName) for (const c of s) add(this.byName, k, c)
  }
}

function add<K> (m: Map<K, Set<number>>, k: K, call: number): void {
  const s = m.get(k)
  if (s === undefined) m.set(k, new Set([call]))
  else s.add(call)
}

/** `args` as JSON, cut to CALL_ARGS_MAX code units (the last one "…" when cut). */
export function callArgs (args: unknown): string {
  let s: string
  try { s = args === undefined ? '' : typeof args === 'string' ? args : JSON.stringify(args) ?? String(args) } catch { s = String(args) }
  return s.length <= CALL_ARGS_MAX ? s : s.slice(0, CALL_ARGS_MAX - 1) + '…'
}
