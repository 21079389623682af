/**
 * The persisted records of history (store/FORMAT.md "Generation records"):
 * checkpoints, branches and the store's mutable state, and the wire form of
 * a checkpoint. Shapes only, with no logic but the fresh state and the wire
 * conversion; every module of fs/history reads and writes these.
 */
import type { CheckpointId, GenerationId } from '../../base/types.js'
import type { CheckpointInfo, SegmentAttribution } from '../../proto/messages.js'

/** Persisted checkpoint (kind `checkpoint`, key = id). */
export interface CheckpointRecord {
  id: CheckpointId
  generation: GenerationId
  /** id of the inode table root */
  root: number
  label: string | null
  /** ms since the epoch */
  time: number
  branch: string
  parent: CheckpointId | null
  inodes: number
  dirtyBytes: number
  ms: number
  /** sha256 (hex) of the msgpack-encoded context in kind `context`, or null */
  context: string | null
  /** segment metadata given with the mark */
  meta: unknown
  /**
   * the daemon's attribution of the segment's changes to tool calls
   * (attribution.ts); absent when no tool call was open in the segment.
   * An optional field: builds before it ignore it (no format change).
   */
  calls?: SegmentAttribution
  /** garbage collection never removes a pinned checkpoint (absent: false) */
  pinned?: boolean
  /**
   * the parent the per-path history index of this checkpoint was computed
   * against (format 5, path-index.ts); absent: not indexed (written before
   * format 5 and not backfilled yet). The index covers the checkpoint only
   * while this equals `parent`.
   */
  hist?: CheckpointId | null
}

/** Persisted branch (kind `branch`, key = name). */
export interface BranchRecord {
  name: string
  /** checkpoint the branch started from (null for the first) */
  base: CheckpointId | null
  /** newest checkpoint on the branch */
  head: CheckpointId | null
  /** ms since the epoch */
  created: number
}

/** The store's mutable state (kind `meta`, key `state`). */
export interface StoreState {
  nextId: number
  nextCheckpoint: number
  nextGeneration: number
  nextBranch: number
  nextIno: number
  branch: string
  head: CheckpointId | null
  generation: GenerationId
  /** current mount session (incremented by each unmount that writes the workspace back) */
  session: number
  /** true while mounted; a mount that finds it true knows the daemon died */
  mounted: boolean
  /** inodes in the live generation's base table */
  inodes: number
  /**
   * the live state made durable by fsync since the last checkpoint: its
   * table root and generation; a resume after a crash starts from it
   */
  live?: { root: number, generation: GenerationId } | null
  /**
   * when the current session's mount started (ms since the epoch): a
   * resume compares the directory's ctimes with it (lower.ts
   * changedOutside); absent in stores written before it existed
   */
  sessionStarted?: number
}

/** The state of a store that has never been opened: branch main, no checkpoint, generation 1, ino 2 next (1 is the root). */
export function freshState (): StoreState {
  return {
    nextId: 1, nextCheckpoint: 1, nextGeneration: 2, nextBranch: 1, nextIno: 2,
    branch: 'main', head: null, generation: 1, session: 1, mounted: false, inodes: 0
  }
}

/** Wire form of a checkpoint record (proto CheckpointInfo). */
export function checkpointInfo (cp: CheckpointRecord): CheckpointInfo {
  return { id: cp.id, label: cp.label, time: cp.time, generation: cp.generation, branch: cp.branch, parent: cp.parent, inodes: cp.inodes, dirtyBytes: cp.dirtyBytes, ms: cp.ms, pinned: cp.pinned === true }
}
