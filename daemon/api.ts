/**
 * The operations the daemon serves, as the websocket server dispatches them.
 * The server (daemon/server.ts) validates every request with proto/ and calls
 * these; the workspace implements them. Shapes here are the wire shapes.
 */
import type { CheckpointId } from './types.js'

/** One checkpoint as listed by `log` and returned by `mark`. */
export interface CheckpointInfo {
  id: CheckpointId
  /** label given at mark time, or null */
  label: string | null
  /** wall-clock time of the mark, ms since the Unix epoch */
  time: number
  /** generation sealed by this checkpoint */
  generation: number
  /** branch the checkpoint belongs to */
  branch: string
  /** the checkpoint this one follows on its branch, or null for the first */
  parent: CheckpointId | null
  /** number of inodes in the workspace at this checkpoint */
  inodes: number
  /** bytes of file data written since the previous checkpoint */
  dirtyBytes: number
  /** time the mark took inside the daemon, ms */
  ms: number
}

/** Result of a restore. */
export interface RestoreInfo {
  /** the checkpoint now restored */
  checkpoint: CheckpointId
  /** the new branch the workspace continues on */
  branch: string
  /** number of inodes that differed and were swapped */
  changed: number
  /** time the restore took inside the daemon, including kernel cache invalidation, ms */
  ms: number
}

/** One difference between two states, by path. */
export interface DiffEntry {
  path: string
  /** added | deleted | modified (content) | meta (mode, owner, times, xattrs only) | type (kind changed) */
  change: 'added' | 'deleted' | 'modified' | 'meta' | 'type'
}

/** A stat at a checkpoint. Times are ns since the epoch, as decimal strings (exceed 2^53). */
export interface StatInfo {
  path: string
  type: 'file' | 'dir' | 'symlink' | 'fifo' | 'socket' | 'chardev' | 'blockdev'
  mode: number
  uid: number
  gid: number
  size: number
  nlink: number
  ino: number
  mtimeNs: string
  atimeNs: string
  ctimeNs: string
  /** symlink target, when type is symlink */
  target?: string
}

export interface StatusInfo {
  /** absolute path of the mounted workspace */
  workspace: string
  store: string
  branch: string
  /** checkpoint the current generation started from, or null before the first mark */
  head: CheckpointId | null
  generation: number
  checkpoints: number
  inodes: number
  /** bytes written since the last checkpoint */
  dirtyBytes: number
  /** daemon process id */
  pid: number
  /** protocol version spoken */
  protocol: number
}

/** The daemon's operations. Every method throws an ApiError (proto/errors) with a stable code on bad input. */
export interface RewindApi {
  status(): Promise<StatusInfo>
  /** Seal the current generation as a checkpoint. context: any JSON value stored with it; meta: segment metadata. */
  mark(req: { label?: string; context?: unknown; meta?: unknown }): Promise<CheckpointInfo>
  /** Restore checkpoint `id` exactly; unknown id → E_UNKNOWN_CHECKPOINT and nothing changes. */
  restore(req: { id: CheckpointId }): Promise<RestoreInfo>
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
  /** Write checkpoint `id` as plain files into `dir` (must not exist or be empty, outside the workspace). */
  export(req: { id: CheckpointId; dir: string }): Promise<{ files: number; bytes: number }>
  /** Unmount; the workspace directory keeps the final state, or its original content with discard. */
  unmount(req: { discard?: boolean }): Promise<{ discarded: boolean }>
}
