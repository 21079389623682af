/**
 * The operations the daemon serves, as the websocket server dispatches them.
 * The server (daemon/server.ts) validates every request with proto/ and calls
 * these; the workspace implements them. Argument and result shapes are the
 * wire shapes, defined once in proto/messages.ts: arguments are
 * ApiArgs<op> (proto/api-args.ts: OpArgs with `checkpoint` named `id`).
 */
import type { OpArgs, EffectBeginArgs } from '../proto/messages.js'
import type { ApiArgs } from '../proto/api-args.js'
import type { EffectBeginInfo, EffectInfo, EffectRegistration, GateInfo } from '../proto/effects.js'
import type { CandidateInfo, CheckpointInfo, RestoreInfo, DiffEntry, MemoryEntry, StatInfo, StatusInfo, GcReport, RunEndInfo, UndoInfo, PathHistoryEntry, CallInfo } from '../proto/messages.js'

export type { CandidateInfo, CheckpointInfo, RestoreInfo, DiffEntry, MemoryEntry, StatInfo, StatusInfo, GcPolicy, GcReport, RunEndInfo, UndoInfo, PathHistoryEntry } from '../proto/messages.js'

/**
 * The effect ledger's operations (effects/ledger.ts implements them; wire
 * shapes in proto/effects.ts). Errors are EffectError with a stable code.
 */
export interface EffectsApi {
  register(req: OpArgs['effect_register']): Promise<EffectRegistration>
  begin(req: EffectBeginArgs): Promise<EffectBeginInfo>
  compensate(req: EffectBeginArgs & { compensates: number }): Promise<EffectBeginInfo>
  gate(req: OpArgs['effect_gate']): Promise<GateInfo>
  sent(req: OpArgs['effect_sent']): Promise<EffectInfo>
  complete(req: OpArgs['effect_complete']): Promise<EffectInfo>
  reconcile(req: OpArgs['effect_reconcile']): Promise<EffectInfo>
  list(req: OpArgs['effect_list']): Promise<EffectInfo[]>
}

/**
 * Tool calls (daemon/calls.ts implements them; DECISIONS.md "Attribution of
 * changes to tool calls"): call_begin and call_end.
 */
export interface CallsApi {
  /** begins a call whose processes are `pid` and every process it starts */
  begin(req: ApiArgs<'call_begin'>): CallInfo
  /** ends an open call (E_BAD_REQUEST for one that is not open) */
  end(req: ApiArgs<'call_end'>): CallInfo
}

/** The daemon's operations. Every method throws an ApiError (proto/errors) with a stable code on bad input. */
export interface RewindApi {
  status(): Promise<StatusInfo>
  /** Seal the current generation as a checkpoint. context: any JSON value stored with it; meta: segment metadata. */
  mark(req: ApiArgs<'mark'>): Promise<CheckpointInfo>
  /**
   * Restore checkpoint `id` exactly; unknown id → E_UNKNOWN_CHECKPOINT and nothing changes.
   * With `paths`: only those files or subtrees, on the current branch, as a new checkpoint
   * (fs/history/selective.ts). `dryRun`: say what would change (RestoreInfo.changes), change nothing.
   */
  restore(req: ApiArgs<'restore'>): Promise<RestoreInfo>
  /** Checkpoints newest first; all branches unless `branch` is given; at most `limit` (default 100). */
  log(req: ApiArgs<'log'>): Promise<CheckpointInfo[]>
  /** Differences from checkpoint `a` to checkpoint `b` (or to the live workspace when b is absent). */
  diff(req: ApiArgs<'diff'>): Promise<DiffEntry[]>
  /** stat of `path` (workspace-relative, '/'-separated, no '..') at checkpoint `id` (live when absent); absent → null. */
  stat(req: ApiArgs<'stat'>): Promise<StatInfo | null>
  readdir(req: ApiArgs<'readdir'>): Promise<StatInfo[]>
  /** Read bytes of a file at a checkpoint; offset and length in bytes (length capped at 16 MiB). */
  read(req: ApiArgs<'read'>): Promise<Uint8Array>
  /** Context stored with checkpoint `id` (null when none). */
  context(req: ApiArgs<'context'>): Promise<unknown>
  /**
   * The checkpoints on the current lineage (parent links from the head
   * checkpoint, across branches), newest first, at most `limit` (default 80);
   * step 0 is the oldest on the lineage. [] before the first checkpoint.
   */
  candidates(req: ApiArgs<'candidates'>): Promise<CandidateInfo[]>
  /** Append `entry` (a JSON object) to the rewind memory of `run`, durably; resolves to the number of entries now. */
  memoryAdd(req: ApiArgs<'memory_add'>): Promise<{ count: number }>
  /** The rewind memory of `run`, in insertion order ([] for an unknown run). */
  memoryGet(req: ApiArgs<'memory_get'>): Promise<{ entries: MemoryEntry[] }>
  /** Write checkpoint `id` as plain files into `dir` (must not exist or be empty, outside the workspace). */
  export(req: ApiArgs<'export'>): Promise<{ files: number; bytes: number }>
  /** Unmount; the workspace directory keeps the final state, or its original content with discard. */
  unmount(req: ApiArgs<'unmount'>): Promise<{ discarded: boolean }>
  /** Pin (pinned true) or unpin checkpoint `id` (the server fills `pinned`, default true): gc never removes a pinned checkpoint. Unknown id → E_UNKNOWN_CHECKPOINT. */
  pin(req: ApiArgs<'pin'> & { pinned: boolean }): Promise<CheckpointInfo>
  /** Record that run `run` has ended: gc no longer keeps checkpoints for it (fs/maint/gc.ts). */
  runEnd(req: ApiArgs<'run_end'>): Promise<RunEndInfo>
  /** Garbage collection with a retention policy (missing fields: defaults), while the workspace stays in use. */
  gc(req: ApiArgs<'gc'>): Promise<GcReport>
  /** the effect ledger, when the daemon keeps one (E_INTERNAL from the server otherwise) */
  readonly effects?: EffectsApi
  /** tool calls for attribution, when the daemon keeps them (E_INTERNAL from the server otherwise) */
  readonly toolCalls?: CallsApi
  /**
   * Revert what the segment ending at checkpoint `id` changed, where no later change touched the same
   * paths (fs/history/undo.ts); with conflicts nothing is applied. `dryRun`: change nothing.
   */
  undo(req: ApiArgs<'undo'>): Promise<UndoInfo>
  /**
   * The checkpoints at which `path` changed, newest first (fs/history/path-history.ts): the current
   * lineage, or every checkpoint with `all`; at most `limit` (default 100); `meta`: with each checkpoint's segment metadata.
   */
  history(req: ApiArgs<'history'>): Promise<PathHistoryEntry[]>
}
