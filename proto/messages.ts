/**
 * One definition per wire message, used by the server (daemon/server.ts) and
 * the client (client/client.ts). Argument and result shapes are those of
 * daemon/api.ts. Spec for other languages: proto/PROTOCOL.md.
 * No Node-only types: bytes are Uint8Array.
 */
import type { EffectBeginInfo, EffectClass, EffectInfo, EffectRegistration, EffectStatus, GateInfo, ReconcileVerdict, RecoveryInfo } from './effects.js'
import type { WireError } from './errors.js'

/**
 * An integer (a JSON number without fraction, an msgpack int). Only a name
 * for the JSON Schema (proto/schema/, `asType`); in TypeScript a number.
 * @asType integer
 */
export type Integer = number

/**
 * Identifier of a checkpoint: a positive safe integer, increasing in creation order.
 * @asType integer
 * @minimum 1
 */
export type CheckpointId = number

/**
 * A request id chosen by the client and echoed in the reply: a non-negative
 * safe integer, or a string of 1..128 characters. Replies to a request whose
 * id could not be read carry `id: null`.
 */
export type RequestId = number | string

// ---------------------------------------------------------------- results

/** One checkpoint as listed by `log` and returned by `mark`. */
export interface CheckpointInfo {
  id: CheckpointId
  /** label given at mark time, or null */
  label: string | null
  /** wall-clock time of the mark, ms since the Unix epoch */
  time: Integer
  /** generation sealed by this checkpoint */
  generation: Integer
  /** branch the checkpoint belongs to */
  branch: string
  /** the checkpoint this one follows on its branch, or null for the first */
  parent: CheckpointId | null
  /** number of inodes in the workspace at this checkpoint */
  inodes: Integer
  /** bytes of file data written since the previous checkpoint */
  dirtyBytes: Integer
  /** time the mark took inside the daemon, ms */
  ms: number
  /** pinned checkpoints are never removed by garbage collection (`pin`) */
  pinned: boolean
}

/** Result of a restore. */
export interface RestoreInfo {
  /** the checkpoint now restored */
  checkpoint: CheckpointId
  /** the new branch the workspace continues on (a full restore of the head with nothing unsaved and no effect begun since does nothing: the current branch) */
  branch: string
  /** number of paths that differ between the state before the restore and the checkpoint (as diff lists them) */
  changed: Integer
  /** time the restore took inside the daemon, including kernel cache invalidation, ms */
  ms: number
  /** the checkpoint ("before restore to N") that keeps the unsaved changes the restore replaced (the newest of savedAll), or null when there were none */
  saved: CheckpointId | null
  /**
   * every "before restore to N" checkpoint this restore recorded, oldest
   * first: writes that complete while the restore waits on its store writes
   * are sealed as one more on top of the last (each holds all before it).
   * Empty when nothing was unsaved. Absent from daemons before this field.
   */
  savedAll?: CheckpointId[]
  /** a full restore only (not with `paths` or `dryRun`): three separate facts (trajectory, workspace, external effects) and every effect of the abandoned suffix; a rewind undoes none of them (proto/effects.ts) */
  recovery?: RecoveryInfo
  /** restore with `paths` only: the paths restored (normalised; one below another restored path is left out, the ancestor covers it) */
  paths?: string[]
  /** restore with `paths` only: true when nothing was changed (`dryRun` asked) */
  dryRun?: boolean
  /**
   * What the restore changed (or, with `dryRun`, would change), from the
   * workspace before to the checkpoint, as diff lists it: every added,
   * deleted, modified (content), meta (attributes) and type-changed path,
   * sorted by path. With `paths`: only at those paths. A full restore lists
   * it too (absent from daemons before issue 17, and when the diff failed);
   * the same paths are announced to inotify watchers (PROTOCOL.md "Restore").
   */
  changes?: DiffEntry[]
  /** restore with `paths` only: the new checkpoint on the current branch holding the result, or null (dry run, or nothing differed) */
  result?: CheckpointId | null
  /**
   * Files the restore changed (content or type) or removed while the kernel
   * still held them from before: open, mapped, or cached. Each keeps its
   * content from before the restore under its old kernel identity until
   * the kernel forgets it (PROTOCOL.md "Open files across a restore");
   * `handles` is how many open file handles (open file descriptions) are
   * on them. The libfuse 3 low-level layer only: absent on the libfuse 2.9
   * layer, from daemons before issue 13, and when nothing was changed.
   */
  oldIncarnations?: { files: Integer, handles: Integer }
}

/** Kinds of change in a diff. */
export const DIFF_CHANGES = ['added', 'deleted', 'modified', 'meta', 'type'] as const

/** One difference between two states, by path. */
export interface DiffEntry {
  path: string
  /** added | deleted | modified (content) | meta (mode, owner, times, xattrs only) | type (kind changed) */
  change: typeof DIFF_CHANGES[number]
}

/** One conflict of an `undo`: a path the undone segment changed that a later change also touched. */
export interface UndoConflict {
  /** the path the undone segment changed ('/a/b') */
  path: string
  /** how the undone segment changed it */
  change: DiffEntry['change']
  /** the later checkpoint whose segment touched it, or null for the unsaved changes */
  by: CheckpointId | null
  /** the path that later change was at (the same path, one below it, or a directory above it) */
  laterPath: string
  laterChange: DiffEntry['change']
}

/** Result of `undo`. */
export interface UndoInfo {
  /** the checkpoint whose segment is undone */
  checkpoint: CheckpointId
  /** its parent: the paths go back as they were there */
  from: CheckpointId
  /** what the segment changed (diff from `from` to `checkpoint`) */
  segment: DiffEntry[]
  /** paths a later change also touched; when there is any, nothing was applied */
  conflicts: UndoConflict[]
  /** directories whose attributes the segment changed and a later segment changed again: left as they are */
  skipped: string[]
  /** true when the undo was applied (a new checkpoint, `restore.result`) */
  applied: boolean
  dryRun: boolean
  /** the selective restore that applies (or, with dryRun, would apply) it; null when there were conflicts or nothing to revert */
  restore: RestoreInfo | null
}

/** One change of a path at a checkpoint, as `history` lists them. */
export interface PathHistoryEntry {
  /** the checkpoint that ends the segment that made the change */
  checkpoint: CheckpointId
  /** the checkpoint it is compared with (its parent), or null for the first */
  parent: CheckpointId | null
  branch: string
  /** time of the checkpoint, ms since the Unix epoch */
  time: Integer
  label: string | null
  /** added | deleted | modified (content; for a directory: something below it) | meta (attributes only) | type */
  change: DiffEntry['change']
  /** kind at the checkpoint, null when deleted */
  type: typeof FILE_TYPES[number] | null
  /** size at the checkpoint in bytes (0 for directories), null when deleted */
  size: Integer | null
  /** size at the parent in bytes, null when absent there */
  sizeBefore: Integer | null
  /** added by a rename: the inode's path at the parent ('a/b') */
  from?: string
  /** deleted by a rename: the inode's path at the checkpoint */
  to?: string
  /** a directory: how many inodes below it differ */
  below?: Integer
  /** the segment metadata given with the checkpoint's mark (null when none); only when the request asked (`meta`) */
  meta?: unknown
  /** what each tool call of the segment changed, as the daemon attributed it (null when no tool call was open in the segment); only when the request asked (`meta`) */
  calls?: SegmentAttribution | null
}

/** One path a tool call changed, as a segment's attribution lists it. */
export interface CallFile {
  /** workspace path, no leading '/' ('src/a.js') */
  path: string
  type: typeof FILE_TYPES[number]
  /** size in bytes: at the checkpoint for created and modified paths, at the parent for deleted ones */
  bytes: Integer
  /** modified paths only: the size at the parent, bytes */
  bytesBefore?: Integer
  /** modified paths only: true when only attributes changed (mode, owner, times, xattrs) */
  attrsOnly?: boolean
}

/**
 * What one tool call changed in the segment that ends at a checkpoint
 * (PROTOCOL.md "Attribution"). A path two calls changed is listed under
 * both; each list holds at most 200 paths, `totals` counts them all.
 */
export interface CallChanges {
  /** the call's id (call_begin), or null for the changes made by no tool call (other processes, the daemon's own restores) */
  call: Integer | null
  /** the tool's name as call_begin gave it (null for the changes of no call) */
  tool: string | null
  /** the call's arguments as JSON, cut to 200 characters (null for the changes of no call) */
  args: string | null
  /** how the call ended (call_end); null while it runs, or when it ended without one */
  exitStatus: Integer | null
  /** true when the call had not ended at the mark (its later changes go to the next segment) */
  open: boolean
  /** how processes were matched to the call: cgroup (a cgroup v2 leaf per call; every process the tool starts is in it) or pid (process ancestry; a process that left the tree, a daemonised one, is missed) */
  mechanism: 'cgroup' | 'pid' | null
  created: CallFile[]
  modified: CallFile[]
  deleted: CallFile[]
  totals: { created: Integer; modified: Integer; deleted: Integer; bytesCreated: Integer; bytesModifiedDelta: Integer; bytesDeleted: Integer }
}

/** The daemon's attribution of a segment's changes to tool calls (stored with the checkpoint that ends the segment). */
export interface SegmentAttribution {
  /** the calls of the segment in the order they began, then (call null) what no call changed, when anything */
  calls: CallChanges[]
  /** set when the daemon could not compute the attribution (then `calls` is empty); the checkpoint itself is whole */
  error?: string
}

/** Result of `call_begin` and `call_end`: one tool call as the daemon keeps it. */
export interface CallInfo {
  /** the call's id: every change its processes make is attributed to it */
  call: Integer
  tool: string
  /** how its processes are matched: cgroup or pid (the fallback: no cgroup v2, or one could not be made; `reason` says why) */
  mechanism: 'cgroup' | 'pid'
  /** the cgroup v2 path of the call (relative to the cgroup mount), null with pid */
  cgroup: string | null
  /** with mechanism pid: why no cgroup was used */
  reason?: string
  /** call_end only: the exit status given */
  exitStatus?: Integer | null
}

/** Kinds of inode. */
export const FILE_TYPES = ['file', 'dir', 'symlink', 'fifo', 'socket', 'chardev', 'blockdev'] as const

/** A stat at a checkpoint. Times are ns since the epoch, as decimal strings (exceed 2^53). */
export interface StatInfo {
  path: string
  type: typeof FILE_TYPES[number]
  mode: Integer
  uid: Integer
  gid: Integer
  size: Integer
  nlink: Integer
  ino: Integer
  mtimeNs: string
  atimeNs: string
  ctimeNs: string
  /** symlink target, when type is symlink */
  target?: string
}

/** Result of `status`. */
export interface StatusInfo {
  /** absolute path of the mounted workspace */
  workspace: string
  store: string
  branch: string
  /** checkpoint the current generation started from, or null before the first mark */
  head: CheckpointId | null
  generation: Integer
  checkpoints: Integer
  inodes: Integer
  /** bytes written since the last checkpoint */
  dirtyBytes: Integer
  /** inodes created, changed or removed since the last checkpoint */
  dirtyInodes: Integer
  /** daemon process id */
  pid: Integer
  /** protocol version spoken */
  protocol: Integer
  /**
   * FUSE requests the daemon's mount has served since the daemon started, by
   * operation name (`{ getattr: 1234, write: 56, ... }`; an operation with no
   * request is absent). Counted in the native binding per request, before
   * JS. A contract the FUSE layer keeps across rewrites (PROTOCOL.md); the
   * names are the binding's operations, so a low-level binding reports its
   * own (lookup, forget, ...). Absent from servers older than issue 10.
   */
  requests?: Record<string, Integer>
  /**
   * The kernel's node ids as the low-level FUSE layer counts them: held
   * (looked up, not yet forgotten), their lookup counts summed, forgets of
   * node ids not held and requests naming one (both 0 when the accounting
   * is exact). Absent on the libfuse 2.9 layer and from older servers.
   * Old incarnations (issue 13; absent from older servers): `old` node ids
   * of files a restore changed that the kernel still holds (they answer
   * with the content from before the restore), `renewed` old incarnations
   * made so far, `oldForgotten` of those the kernel has forgotten since,
   * `oldWrittenDropped` of those that had been written through (their
   * private copies dropped), `oldBytesDropped` the bytes so written and
   * dropped, `oldPrivateBytes` bytes of private copies held now.
   */
  kernelNodes?: {
    nodes: Integer, lookups: Integer, forgetUnknown: Integer, afterForget: Integer,
    old?: Integer, renewed?: Integer, oldForgotten?: Integer, oldWrittenDropped?: Integer, oldBytesDropped?: Integer, oldPrivateBytes?: Integer
  }
}

/** Result of `hello`: what the server speaks. */
export interface HelloInfo {
  /** protocol version the server will use on this connection (the request's v) */
  protocol: Integer
  /** every version the server speaks */
  versions: Integer[]
  /** server name and version, e.g. "rewindfs/0.1.0" */
  server: string
  /** operations this server accepts */
  ops: Op[]
  /** events a connection can subscribe to */
  events: EventName[]
  /** frame encodings accepted */
  encodings: Encoding[]
  /** largest incoming message accepted, bytes */
  maxPayload: Integer
  /** largest `length` accepted by `read`, bytes */
  maxRead: Integer
}

/**
 * One checkpoint on the current lineage, as listed by `candidates`: the
 * checkpoints reached by following `parent` links from the head checkpoint,
 * across branches (the path the workspace actually came through).
 */
export interface CandidateInfo {
  id: CheckpointId
  /** position on the lineage: 0 for the oldest, +1 per checkpoint */
  step: Integer
  /** label given at mark time, or null */
  label: string | null
  /** wall-clock time of the mark, ms since the Unix epoch */
  time: Integer
  /** branch the checkpoint belongs to */
  branch: string
  /** the segment metadata given at mark time (any value), or null */
  meta: unknown
  /** what each tool call of the segment changed, as the daemon attributed it; absent when no tool call was open in the segment */
  calls?: SegmentAttribution
}

/** A rewind memory entry: any JSON object (a map with string keys). */
export type MemoryEntry = Record<string, unknown>

/** Result of `memory_add`: number of entries the run's rewind memory now holds. */
export interface MemoryAddInfo { count: Integer }
/** Result of `memory_get`: every entry of the run's rewind memory, in insertion order. */
export interface MemoryGetInfo { entries: MemoryEntry[] }

/** Retention policy of `gc` (fs/maint/gc.ts); every field has a default. */
export interface GcPolicy {
  /** the newest N checkpoints (by id) are kept; default 50 */
  keepLast: Integer
  /** a branch with no checkpoint newer than this (ms) is abandoned: its checkpoints go unless another rule keeps them; default 7 days; the current branch is never abandoned */
  abandonedAfterMs: Integer
  /** a run that has marked nothing for this long (ms) counts as ended, as does one ended by `run_end`; default 1 day */
  runIdleMs: Integer
  /** say what would be removed, remove nothing; default false */
  dryRun: boolean
}

/** Result of `gc`: what was removed and the space returned (bytes). */
export interface GcReport {
  dryRun: boolean
  policy: { keepLast: Integer; abandonedAfterMs: Integer; runIdleMs: Integer }
  checkpoints: { before: Integer; kept: Integer; removed: CheckpointId[] }
  branches: { removed: string[] }
  /** inode table nodes and inode records deleted */
  nodes: Integer
  /** contexts deleted (no kept checkpoint carries them) */
  contexts: Integer
  /** frozen copies of lower paths deleted (they answered only sessions no kept checkpoint refers to) */
  frozen: Integer
  /** blocks deleted and their bytes */
  blocks: { removed: Integer; bytes: Integer }
  /** packs deleted whole (no live block), compacted (live blocks copied, then deleted), and those left with why */
  packs: { deleted: Integer; compacted: Integer; notCompacted: Array<{ pack: Integer; reason: string }> }
  /** pack files and metadata database before and after (they also move with writes made meanwhile); returned = the bytes of the packs gc deleted less the copies it wrote, plus what the metadata database shrank (with dryRun: the dead blocks' bytes) */
  bytes: { packsBefore: Integer; packsAfter: Integer; metaBefore: Integer; metaAfter: Integer; returned: Integer }
  /** time gc took, ms */
  ms: number
}

/** Result of `run_end`. */
export interface RunEndInfo { run: string; ended: Integer }

/** Result of `export`. */
export interface ExportInfo { files: Integer; bytes: Integer }
/** Result of `unmount`. */
export interface UnmountInfo { discarded: boolean }
/** Result of `subscribe`: the events this connection now receives. */
export interface SubscribeInfo { events: EventName[] }

// ---------------------------------------------------------------- arguments

/**
 * Arguments of each operation on the wire (the fields of a request besides
 * v, id, op). The TypeScript api's arguments are derived from them
 * (api-args.ts ApiArgs): the same, except that a checkpoint argument is
 * named `id` there and `checkpoint` on the wire, because `id` is the
 * request id (restore, stat, readdir, read, context, export, pin, undo).
 */
export interface OpArgs {
  hello: { client?: string }
  status: Record<never, never>
  mark: { label?: string; context?: unknown; meta?: unknown }
  restore: { checkpoint: CheckpointId; paths?: string[]; dryRun?: boolean }
  log: { branch?: string; limit?: Integer }
  diff: { a: CheckpointId; b?: CheckpointId }
  stat: { checkpoint?: CheckpointId; path: string }
  readdir: { checkpoint?: CheckpointId; path: string }
  read: { checkpoint?: CheckpointId; path: string; offset?: Integer; length?: Integer }
  context: { checkpoint: CheckpointId }
  candidates: { limit?: Integer }
  memory_add: { run: string; entry: MemoryEntry }
  memory_get: { run: string }
  export: { checkpoint: CheckpointId; dir: string }
  unmount: { discard?: boolean }
  subscribe: { events?: EventName[] }
  pin: { checkpoint: CheckpointId; pinned?: boolean }
  run_end: { run: string }
  gc: { keepLast?: Integer; abandonedAfterMs?: Integer; runIdleMs?: Integer; dryRun?: boolean }
  undo: { checkpoint: CheckpointId; dryRun?: boolean }
  history: { path: string; all?: boolean; limit?: Integer; meta?: boolean }
  call_begin: { tool: string; args?: unknown; pid: Integer }
  call_end: { call: Integer; exitStatus?: Integer }
  effect_register: { tool: string; class: EffectClass; exclude?: string[]; description?: string }
  effect_begin: EffectBeginArgs
  effect_compensate: EffectBeginArgs & { compensates: number }
  effect_gate: { tool: string; target: string; request?: EffectRequestArg; identity?: string }
  effect_sent: { occurrence: number; evidence?: unknown }
  effect_complete: { occurrence: number; status: 'confirmed' | 'failed' | 'unknown'; evidence?: unknown }
  effect_reconcile: { occurrence: number; verdict: ReconcileVerdict; evidence?: unknown }
  effect_list: { run?: string; branch?: string; status?: EffectStatus; target?: string; limit?: number }
}

/** Result of each operation (the `ok` of a successful reply). */
export interface OpResults {
  hello: HelloInfo
  status: StatusInfo
  mark: CheckpointInfo
  restore: RestoreInfo
  log: CheckpointInfo[]
  diff: DiffEntry[]
  stat: StatInfo | null
  readdir: StatInfo[]
  /** raw bytes; in JSON frames a base64 string, see Reply.encoding */
  read: Uint8Array
  context: unknown
  candidates: CandidateInfo[]
  memory_add: MemoryAddInfo
  memory_get: MemoryGetInfo
  export: ExportInfo
  unmount: UnmountInfo
  subscribe: SubscribeInfo
  pin: CheckpointInfo
  run_end: RunEndInfo
  gc: GcReport
  undo: UndoInfo
  history: PathHistoryEntry[]
  call_begin: CallInfo
  call_end: CallInfo
  effect_register: EffectRegistration
  effect_begin: EffectBeginInfo
  effect_compensate: EffectBeginInfo
  effect_gate: GateInfo
  effect_sent: EffectInfo
  effect_complete: EffectInfo
  effect_reconcile: EffectInfo
  effect_list: EffectInfo[]
}

/** Every operation, in the order PROTOCOL.md lists them. */
export const OPS = ['hello', 'status', 'mark', 'restore', 'log', 'diff', 'stat', 'readdir', 'read', 'context', 'candidates', 'memory_add', 'memory_get', 'export', 'unmount', 'subscribe', 'pin', 'run_end', 'gc', 'undo', 'history', 'call_begin', 'call_end', 'effect_register', 'effect_begin', 'effect_compensate', 'effect_gate', 'effect_sent', 'effect_complete', 'effect_reconcile', 'effect_list'] as const

/** An operation name. */
export type Op = typeof OPS[number]

/** True when `x` names an operation. */
export function isOp (x: unknown): x is Op {
  return typeof x === 'string' && (OPS as readonly string[]).includes(x)
}

// ---------------------------------------------------------------- envelopes

/** The two frame encodings: binary frames carry msgpack, text frames JSON. */
export type Encoding = 'msgpack' | 'json'

/** A request for operation O: `{v, id, op, ...args}`. */
export type Request<O extends Op = Op> = O extends Op
  ? { v: number; id: RequestId; op: O } & OpArgs[O]
  : never

/** A successful reply: `{id, ok}`. In JSON frames a bytes result is base64 with `encoding: 'base64'`. */
export interface OkReply<T = unknown> {
  id: RequestId
  ok: T
  /** present only in JSON frames whose `ok` is base64-encoded bytes */
  encoding?: 'base64'
}

/** A failed reply: `{id, error}`; `id` is null when the request's id could not be read. */
export interface ErrorReply {
  id: RequestId | null
  error: WireError
}

/** A reply to a request. */
export type Reply<T = unknown> = OkReply<T> | ErrorReply

/** True when `x` has the shape of a successful reply. */
export function isOkReply (x: unknown): x is OkReply {
  return isObject(x) && 'ok' in x && isRequestIdValue(x.id)
}

/** True when `x` has the shape of an error reply. */
export function isErrorReply (x: unknown): x is ErrorReply {
  if (!isObject(x) || !('error' in x) || !isObject(x.error)) return false
  return (x.id === null || isRequestIdValue(x.id)) && typeof x.error.code === 'string' && typeof x.error.message === 'string'
}

// ---------------------------------------------------------------- events

/** Names of server events. */
export const EVENTS = ['checkpoint', 'restore'] as const
/** A server event name. */
export type EventName = typeof EVENTS[number]

/** True when `x` names an event. */
export function isEventName (x: unknown): x is EventName {
  return typeof x === 'string' && (EVENTS as readonly string[]).includes(x)
}

/** Pushed to subscribers after a mark succeeded. */
export interface CheckpointEvent { event: 'checkpoint'; checkpoint: CheckpointInfo }
/** Pushed to subscribers after a restore succeeded. */
export interface RestoreEvent { event: 'restore'; restore: RestoreInfo }
/** A server event: `{event, ...}`. Events carry no `id`. */
export type Event = CheckpointEvent | RestoreEvent

/** True when `x` has the shape of a server event. */
export function isEvent (x: unknown): x is Event {
  if (!isObject(x) || !isEventName(x.event)) return false
  return x.event === 'checkpoint' ? isObject(x.checkpoint) : isObject(x.restore)
}

// ---------------------------------------------------------------- connection file

/** Name of the connection file (ConnectionInfo) inside the store directory: the one spelling of 'daemon.json'. */
export const CONNECTION_FILE = 'daemon.json'
/** Name of the token file inside the store directory (64 hex digits and a newline, mode 0600). */
export const TOKEN_FILE = 'token'

/**
 * The connection file `<storeDir>/daemon.json` (CONNECTION_FILE), written by
 * the daemon when it listens: where to connect. The token is in
 * `<storeDir>/token` (TOKEN_FILE, mode 0600).
 */
export interface ConnectionInfo {
  /** loopback TCP port, or null when listening only on a unix socket */
  port: Integer | null
  /** absolute path of the unix socket, or null */
  socket: string | null
  /** daemon process id */
  pid: Integer
  /** absolute path of the mounted workspace */
  workspace: string
}

/** True when `x` has the shape of a connection file. */
export function isConnectionInfo (x: unknown): x is ConnectionInfo {
  if (!isObject(x)) return false
  const portOk = x.port === null || (Number.isInteger(x.port) && (x.port as number) > 0 && (x.port as number) < 65536)
  const sockOk = x.socket === null || typeof x.socket === 'string'
  return portOk && sockOk && Number.isInteger(x.pid) && typeof x.workspace === 'string' && (x.port !== null || x.socket !== null)
}

// ---------------------------------------------------------------- helpers

/** A plain object (not null, not an array, not bytes). */
export function isObject (x: unknown): x is Record<string, unknown> {
  return typeof x === 'object' && x !== null && !Array.isArray(x) && !(x instanceof Uint8Array)
}

/** True when `x` is a valid request id value (see RequestId). */
export function isRequestIdValue (x: unknown): x is RequestId {
  if (typeof x === 'number') return Number.isSafeInteger(x) && x >= 0
  return typeof x === 'string' && x.length >= 1 && x.length <= 128
}

// ---------------------------------------------------------------- effects

/** The request an effect's identity is derived from: its method and body (any value; bytes are hashed as bytes). */
export interface EffectRequestArg { method?: string; body?: unknown }

/** Arguments of effect_begin (and, with `compensates`, effect_compensate). Give `request` or `identity`, not both. */
export interface EffectBeginArgs {
  tool: string
  target: string
  request?: EffectRequestArg
  identity?: string
  run?: string
  attempt?: number
  preState?: unknown
  timeoutMs?: number
}
