/**
 * The restore journal (DECISIONS.md "The restore journal"): a restore
 * writes its intent (`meta.restore`) with sync before anything changes; the
 * record of the swap deletes it. A start that finds an intent completes the
 * restore (the target checkpoint is durable, so completion is always
 * possible); a daemon killed before the intent was durable restarts from the
 * state before the restore, whose unsaved changes were checkpointed first.
 */
import type { CheckpointId } from '../../base/types.js'
import type { History } from './history.js'

/** Key (kind `meta`) of the restore journal: the intent of a restore not yet committed. */
export const RESTORE_INTENT = 'restore'

/** The restore journal's record (`meta.restore`): written with sync before a restore changes anything, deleted by its commit. */
export interface RestoreIntent {
  /** the checkpoint being restored */
  to: CheckpointId
  /** the head before the restore (after its "before restore" checkpoint) */
  from: CheckpointId | null
  /** ms since the epoch */
  time: number
}

/** Writes the intent to restore checkpoint `to`, durably (sync), before the restore changes anything. */
export async function writeRestoreIntent (g: History, to: CheckpointId): Promise<void> {
  const intent: RestoreIntent = { to, from: g.state.head, time: Date.now() }
  await g.db.batch().put('meta', RESTORE_INTENT, intent).write({ sync: true })
}

/**
 * Crash recovery of a restore, at start-up before the resume table is read:
 * completes a restore the previous daemon journaled but did not commit (it
 * died in between). Returns the intent that was completed, or null when
 * there was none. The intent of a checkpoint that does not exist (any more)
 * is dropped.
 */
export async function completeInterruptedRestore (g: History): Promise<RestoreIntent | null> {
  const intent = await g.db.get<RestoreIntent>('meta', RESTORE_INTENT)
  if (!intent) return null
  const cp = g.checkpoints.get(intent.to)
  const batch = g.db.batch()
  if (cp) {
    g.switchToBranchFrom(cp)
    g.inodes = cp.inodes
    batch.put('branch', g.state.branch, g.branches.get(g.state.branch)!)
  }
  batch.del('meta', RESTORE_INTENT)
  g.state.inodes = g.inodes
  batch.put('meta', 'state', g.state)
  await batch.write({ sync: true })
  return cp ? intent : null
}
