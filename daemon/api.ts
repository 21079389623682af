/**
 * The operations the daemon serves, as the websocket server dispatches them.
 * The server (daemon/server.ts) validates every request with proto/ and calls
 * these; the workspace implements them. The result shapes are the wire
 * shapes, defined once in proto/messages.ts.
 */
import type { CheckpointId } from '../base/types.js'
import type { CandidateInfo, CheckpointInfo, RestoreInfo, DiffEntry, MemoryEntry, StatInfo, StatusInfo, GcPolicy, GcReport, RunEndInfo, UndoInfo, PathHistoryEntry } from '../proto/messages.js'

export type { CandidateInfo, CheckpointInfo, RestoreInfo, DiffEntry, MemoryEntry, StatInfo, StatusInfo, GcPolicy, GcReport, RunEndInfo, UndoInfo, PathHistoryEntry } from '../proto/messages.js'

/** The daemon's operations. Every method throws an ApiError (proto/errors) with a stable code on bad input. */
export interface RewindApi {
  status(): Promise<StatusInfo>
  /** Seal the current generation as a checkpoint. context: any JSON value stored with it; meta: segment metadata. */
  mark(req: { label?: string; context?: unknown; meta?: unknown }): Promise<CheckpointInfo>
  /**
   * Restore checkpoint `id` exactly; unknown id → E_UNKNOWN_CHECKPOINT and nothing changes.
   * With `paths`: only those files or subtrees, on the current branch, as a new checkpoint
   * (fs/history/selective.ts). `dryRun`: say what would change (RestoreInfo.changes), change nothing.
   */
  restore(req: { id: CheckpointId; paths?: string[]; dryRun?: boolean }): Promise<RestoreInfo>
  /** Checkpoints newest first; all branches unless `branch` is given; at most `limit` (default 100). */
  log(req: { branch?: string; limit?: number }): Promise<CheckpointInfo[]>
  /** Differences from checkpoint `a` to checkpoint `b` (or to the live workspace when b is absent). */
  diff(req: { a: CheckpointId; b?: CheckpointId }): Promise<DiffEntry[]>
  /** stat of `path` (workspace-relative, '/'-separated, no '..') at checkpoint `id` (live when absent); absent → null. */
  stat(req: { id?: CheckpointId; path: string }): Promise<StatInfo | null>
  readdir(req: { id?: CheckpointId; path: string }): Promise<StatInfo[]>
  /** Read bytes of a file at a checkpoint; offset and length in bytes (length capped at 16 MiB). */
  read(req: { id?: CheckpointId; path: string; offset?: number; length?: number }): Promise<Uint8Array>
  /** Context stored with checkpoint `id` (null when none). */
  context(req: { id: CheckpointId }): Promise<unknown>
  /**
   * The checkpoints on the current lineage (parent links from the head
   * checkpoint, across branches), newest first, at most `limit` (default 80);
   * step 0 is the oldest on the lineage. [] before the first checkpoint.
   */
  candidates(req: { limit?: number }): Promise<CandidateInfo[]>
  /** Append `entry` (a JSON object) to the rewind memory of `run`, durably; resolves to the number of entries now. */
  memoryAdd(req: { run: string; entry: MemoryEntry }): Promise<{ count: number }>
  /** The rewind memory of `run`, in insertion order ([] for an unknown run). */
  memoryGet(req: { run: string }): Promise<{ entries: MemoryEntry[] }>
  /** Write checkpoint `id` as plain files into `dir` (must not exist or be empty, outside the workspace). */
  export(req: { id: CheckpointId; dir: string }): Promise<{ files: number; bytes: number }>
  /** Unmount; the workspace directory keeps the final state, or its original content with discard. */
  unmount(req: { discard?: boolean }): Promise<{ discarded: boolean }>
  /** Pin (pinned true) or unpin checkpoint `id`: gc never removes a pinned checkpoint. Unknown id → E_UNKNOWN_CHECKPOINT. */
  pin(req: { id: CheckpointId; pinned: boolean }): Promise<CheckpointInfo>
  /** Record that run `run` has ended: gc no longer keeps checkpoints for it (fs/maint/gc.ts). */
  runEnd(req: { run: string }): Promise<RunEndInfo>
  /** Garbage collection with a retention policy (missing fields: defaults), while the workspace stays in use. */
  gc(req: Partial<GcPolicy>): Promise<GcReport>
  /**
   * Revert what the segment ending at checkpoint `id` changed, where no later change touched the same
   * paths (fs/history/undo.ts); with conflicts nothing is applied. `dryRun`: change nothing.
   */
  undo(req: { id: CheckpointId; dryRun?: boolean }): Promise<UndoInfo>
  /**
   * The checkpoints at which `path` changed, newest first (fs/history/path-history.ts): the current
   * lineage, or every checkpoint with `all`; at most `limit` (default 100); `meta`: with each checkpoint's segment metadata.
   */
  history(req: { path: string; all?: boolean; limit?: number; meta?: boolean }): Promise<PathHistoryEntry[]>
}
