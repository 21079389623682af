/**
 * Segment metadata eta_t: what happened in one segment of an agent run, from
 * the previous checkpoint to the checkpoint that carries it (the recorder
 * gives it as the `meta` of the mark that ends the segment). Plain JSON.
 */

/** Longest `args` kept for a tool call in segment metadata, UTF-16 code units. */
export const SHORT_ARGS_MAX = 200

/** One tool call of the segment. */
export interface SegmentToolCall {
  name: string
  /** the arguments as JSON, cut to SHORT_ARGS_MAX code units (ending in "…" when cut) */
  args: string
  /** the tool's exit status: 0 success, anything else failure (a process exit code, or 1 for a thrown error) */
  exitStatus: number
}

/** One path the segment created or deleted. */
export interface SegmentFile {
  /** workspace path (normalised, no leading '/') */
  path: string
  /** file | dir | symlink | fifo | socket | chardev | blockdev */
  type: string
  /** size in bytes: now for a created path, at the previous checkpoint for a deleted one */
  bytes: number
}

/** One path the segment modified. */
export interface SegmentModifiedFile extends SegmentFile {
  /** size at the previous checkpoint, bytes (`bytes` is the size now) */
  bytesBefore: number
  /** true when only attributes changed (mode, owner, times, xattrs), not the content or kind */
  attrsOnly: boolean
}

/** Segment metadata eta_t, stored as the `meta` of the checkpoint that ends the segment. */
export interface SegmentMeta {
  /** marks this object as rewindfs segment metadata, version 1 */
  kind: 'rewindfs.segment/1'
  /** the run the segment belongs to */
  run: string
  /** checkpoint the segment started from (its changes are relative to it), or null for none */
  from: number | null
  /** LLM calls recorded in the segment */
  llmCalls: number
  /** the tool calls, in order */
  tools: SegmentToolCall[]
  /** paths created, modified and deleted from `from` to the end of the segment; each list at most maxFiles long (see totals) */
  files: { created: SegmentFile[]; modified: SegmentModifiedFile[]; deleted: SegmentFile[] }
  /** exact counts and byte sums over all changed paths, including those left out of the lists */
  totals: {
    created: number; modified: number; deleted: number
    /** bytes of the created paths */
    bytesCreated: number
    /** sum over modified paths of (size now − size before), bytes; negative when they shrank */
    bytesModifiedDelta: number
    /** bytes of the deleted paths (their size at `from`) */
    bytesDeleted: number
  }
}

/** True when `v` looks like segment metadata written by the recorder. */
export function isSegmentMeta (v: unknown): v is SegmentMeta {
  return typeof v === 'object' && v !== null && (v as { kind?: unknown }).kind === 'rewindfs.segment/1'
}

/** `args` as JSON, cut to `max` code units (the last one "…" when cut). */
export function shortArgs (args: unknown, max = SHORT_ARGS_MAX): string {
  let s: string
  try { s = typeof args === 'string' ? args : JSON.stringify(args) ?? String(args) } catch { s = String(args) }
  return s.length <= max ? s : s.slice(0, max - 1) + '…'
}

/** Bytes as a short human string: 0 B, 512 B, 1.5 KiB, 3.0 MiB. */
export function formatBytes (n: number): string {
  const a = Math.abs(n)
  const sign = n < 0 ? '-' : ''
  if (a < 1024) return `${sign}${a} B`
  if (a < 1024 * 1024) return `${sign}${(a / 1024).toFixed(1)} KiB`
  return `${sign}${(a / 1024 / 1024).toFixed(1)} MiB`
}

/**
 * One line for a candidate list (the eta_t summary of backtrack_candidates):
 * e.g. `2 tool calls: write_file (0), run_tests (1); files +1 ~1 -0 (+12 B, ~+3 B, -0 B)`.
 * Metadata that is not the recorder's is shown as JSON, cut to SHORT_ARGS_MAX.
 */
export function summarizeSegment (meta: unknown): string {
  if (meta === null || meta === undefined) return 'no segment metadata'
  if (!isSegmentMeta(meta)) return shortArgs(meta)
  const t = meta.totals
  const tools = meta.tools.length === 0
    ? 'no tool calls'
    : `${meta.tools.length} tool call${meta.tools.length === 1 ? '' : 's'}: ${meta.tools.slice(0, 8).map(c => `${c.name} (${c.exitStatus})`).join(', ')}${meta.tools.length > 8 ? ', …' : ''}`
  const delta = t.bytesModifiedDelta >= 0 ? `+${formatBytes(t.bytesModifiedDelta)}` : formatBytes(t.bytesModifiedDelta)
  return `${tools}; files +${t.created} ~${t.modified} -${t.deleted} (+${formatBytes(t.bytesCreated)}, ~${delta}, -${formatBytes(t.bytesDeleted)})`
}
