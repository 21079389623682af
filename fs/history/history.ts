/**
 * What the history algorithms (checkpoint.ts, restore.ts, journal.ts,
 * diff.ts, selective.ts, undo.ts, path-history.ts, path-index.ts) use of
 * one store's generations: the records in memory, table loading, the
 * one-at-a-time order and the state writes. Generations (generations.ts)
 * implements it; the algorithms take this interface, so none of them
 * imports the class that imports them (no import cycle inside fs/history).
 */
import type { CheckpointId } from '../../base/types.js'
import type { InodeRecord } from '../inode.js'
import type { TableNode, TableSink, TableSource } from '../itable.js'
import type { RecordReader } from '../tree.js'
import type { Workspace } from '../workspace.js'
import type { StoreDb, StoreBatch } from '../../store/db.js'
import type { BranchRecord, CheckpointRecord, StoreState } from './records.js'
import type { Announcement } from './announce.js'
import type { CallLog } from './call-log.js'

/** One store's generations, checkpoints and branches, as the algorithms see them (members documented on Generations). */
export interface History extends TableSource, RecordReader {
  /** table nodes loaded so far, by persisted id */
  readonly nodes: Map<number, TableNode>
  /** inode records loaded so far, by persisted id */
  readonly records: Map<number, InodeRecord>
  readonly checkpoints: Map<CheckpointId, CheckpointRecord>
  readonly branches: Map<string, BranchRecord>
  readonly db: StoreDb
  /** the block store: made durable before a checkpoint's record, its index committed with it */
  readonly blocks: { sync(): Promise<void>, commitTo(b: StoreBatch): void }
  /** the persisted state record (branch, head, generation, counters) */
  state: StoreState
  /** inode count of the live generation */
  inodes: number
  /** table root id of the head checkpoint (0 before the first) */
  headRoot: number
  /** a restore's intent is in the store and its commit is not known to be written */
  intentOpen: boolean
  /** tells watchers of a restore (announce.ts); null: nobody is told */
  announce: ((a: Announcement) => Promise<void>) | null
  /** the live generation's changes by tool call (attribution.ts); each mark takes them */
  readonly calls: CallLog
  /** the inode table of checkpoint `id` (unknown → E_UNKNOWN_CHECKPOINT) */
  tableOf(id: CheckpointId): Promise<TableNode>
  /** runs `fn` while no mark, fsync or restore runs */
  exclusive<T>(fn: () => Promise<T>): Promise<T>
  /** keeps a checkpoint's table in memory */
  remember(id: CheckpointId, t: TableNode): void
  /** a checkpoint record; unknown id → ApiError E_UNKNOWN_CHECKPOINT */
  checkpoint(id: CheckpointId): CheckpointRecord
  /** where a persisted table's new nodes and records go: into `batch` */
  sink(batch: StoreBatch): TableSink
  /** puts the state record into `batch` (and deletes an open restore intent with it) */
  writeState(batch: StoreBatch, ws: Workspace): void
  /** true when the live base table is the head checkpoint's table */
  baseIsHead(ws: Workspace): boolean
  /** inodes in the live state */
  liveInodes(ws: Workspace): number
  /** true when the live state has changes a restore must checkpoint first */
  unsaved(ws: Workspace): boolean
  /** in memory: a new branch starting at `cp`, head `cp`, a new generation */
  switchToBranchFrom(cp: CheckpointRecord): void
}
