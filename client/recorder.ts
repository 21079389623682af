/**
 * SessionRecorder: records an agent loop and marks a checkpoint at every LLM
 * decision boundary, carrying the agent's context and the segment metadata
 * eta_t (segment.ts) of the segment that just ended: its tool calls and the
 * paths they created, modified and deleted, with byte counts.
 *
 * File changes come from the daemon (`diff` from the segment's starting
 * checkpoint to the live workspace, then `stat` of each changed path), so
 * they include changes made by any process, and a boundary costs
 * O(changes in the segment) requests, never a scan of the workspace.
 *
 * One boundary at a time; call it when no tool is running.
 */
import type { CheckpointId, CheckpointInfo, DiffEntry, StatInfo } from '../proto/messages.js'
import type { RewindClient } from './client.js'
import type { RunLog } from './runlog.js'
import { shortArgs, type SegmentFile, type SegmentMeta, type SegmentModifiedFile, type SegmentToolCall } from './segment.js'

/** The client calls the recorder needs. */
export type RecorderClient = Pick<RewindClient, 'mark' | 'diff' | 'stat' | 'status'>

/** Default longest list of paths per kind (created, modified, deleted) in eta_t; totals stay exact. */
export const DEFAULT_MAX_FILES = 200
/** Stat requests in flight at once while building eta_t. */
const STAT_CONCURRENCY = 32

export interface RecorderOptions {
  /** the run's name (also used by the memory and the log) */
  run: string
  /** where LLM calls, tool calls and checkpoints are logged as well; none by default */
  log?: RunLog
  /** longest list of paths per kind in eta_t; default DEFAULT_MAX_FILES */
  maxFiles?: number
}

/** A tool call as the agent loop saw it. */
export interface RecordedToolCall {
  name: string
  /** the arguments (any JSON); kept in full in the log, cut to SHORT_ARGS_MAX in eta_t */
  args: unknown
  /** the result (any JSON); logged, not put in eta_t */
  result?: unknown
  /** 0 success, anything else failure */
  exitStatus: number
}

/** What boundary() did. */
export interface Boundary {
  checkpoint: CheckpointInfo
  /** the segment metadata stored as the checkpoint's meta */
  meta: SegmentMeta
}

export class SessionRecorder {
  readonly run: string
  private readonly client: RecorderClient
  private readonly log: RunLog | undefined
  private readonly maxFiles: number
  /** checkpoint the current segment started from; undefined: not known yet (the head, read at the first boundary) */
  private from: CheckpointId | null | undefined = undefined
  private tools: SegmentToolCall[] = []
  private llmCalls = 0
  /** messages of the context already logged (an array input is logged from here on) */
  private loggedInput = 0

  constructor (client: RecorderClient, opts: RecorderOptions) {
    this.client = client
    this.run = opts.run
    this.log = opts.log
    this.maxFiles = opts.maxFiles ?? DEFAULT_MAX_FILES
  }

  /** Checkpoint the current segment started from (null: none; undefined: the head, not read yet). */
  get previous (): CheckpointId | null | undefined {
    return this.from
  }

  /**
   * Record one LLM call. An array `input` (the messages) is logged from the
   * first message not logged yet in the current log file; other inputs in full.
   */
  recordLlmCall (input: unknown, output: unknown): void {
    this.llmCalls++
    if (this.log === undefined) return
    if (Array.isArray(input)) {
      const start = Math.min(this.loggedInput, input.length)
      this.log.append({ type: 'llm_call', inputStart: start, inputLength: input.length, input: input.slice(start), output })
      this.loggedInput = input.length
    } else {
      this.log.append({ type: 'llm_call', inputStart: 0, inputLength: 1, input, output })
    }
  }

  /** Record one tool call of the current segment. */
  recordToolCall (call: RecordedToolCall): void {
    this.tools.push({ name: call.name, args: shortArgs(call.args), exitStatus: call.exitStatus })
    this.log?.append({ type: 'tool_call', name: call.name, args: call.args, result: call.result ?? null, exitStatus: call.exitStatus })
  }

  /**
   * The segment metadata of the current segment, as it stands now: the
   * recorded calls and the daemon's diff from the segment's start to the
   * live workspace, each changed path stat'ed (deleted ones at the start).
   * Cost: 1 diff + O(changed paths) stats.
   */
  async segmentMeta (): Promise<SegmentMeta> {
    if (this.from === undefined) this.from = (await this.client.status()).head
    const from = this.from
    const changes = from === null ? [] : await this.client.diff({ a: from })
    const created: SegmentFile[] = []
    const modified: SegmentModifiedFile[] = []
    const deleted: SegmentFile[] = []
    const totals = { created: 0, modified: 0, deleted: 0, bytesCreated: 0, bytesModifiedDelta: 0, bytesDeleted: 0 }
    const statAt = (id: CheckpointId | undefined, p: string): Promise<StatInfo | null> => this.client.stat(id === undefined ? { path: p } : { id, path: p })
    await mapLimit(changes, STAT_CONCURRENCY, async (entry: DiffEntry) => {
      // the daemon's diff paths start with '/'; eta_t uses the normalised workspace path
      const d = { change: entry.change, path: entry.path.replace(/^\/+/, '') }
      if (d.change === 'added') {
        const now = await statAt(undefined, d.path)
        const f = { path: d.path, type: now?.type ?? 'file', bytes: now?.size ?? 0 }
        totals.created++; totals.bytesCreated += f.bytes
        if (created.length < this.maxFiles) created.push(f)
      } else if (d.change === 'deleted') {
        const was = await statAt(from ?? undefined, d.path)
        const f = { path: d.path, type: was?.type ?? 'file', bytes: was?.size ?? 0 }
        totals.deleted++; totals.bytesDeleted += f.bytes
        if (deleted.length < this.maxFiles) deleted.push(f)
      } else {
        const [now, was] = await Promise.all([statAt(undefined, d.path), statAt(from ?? undefined, d.path)])
        // a directory whose entries changed shows as changed itself; its entries are listed on their own
        if (now?.type === 'dir' && was?.type === 'dir') return
        const f = { path: d.path, type: now?.type ?? 'file', bytes: now?.size ?? 0, bytesBefore: was?.size ?? 0, attrsOnly: d.change === 'meta' }
        totals.modified++; totals.bytesModifiedDelta += f.bytes - f.bytesBefore
        if (modified.length < this.maxFiles) modified.push(f)
      }
    })
    const byPath = (a: SegmentFile, b: SegmentFile): number => a.path < b.path ? -1 : a.path > b.path ? 1 : 0
    created.sort(byPath); modified.sort(byPath); deleted.sort(byPath)
    return { kind: 'rewindfs.segment/1', run: this.run, from, llmCalls: this.llmCalls, tools: [...this.tools], files: { created, modified, deleted }, totals }
  }

  /**
   * An LLM decision boundary: mark a checkpoint carrying `context` (the
   * agent's context: its messages, any JSON) and the segment metadata of
   * the segment that just ended; the next segment starts from it. When the
   * mark fails, the segment stays open (nothing recorded is lost).
   */
  async boundary (context: unknown, opts: { label?: string } = {}): Promise<Boundary> {
    const meta = await this.segmentMeta()
    const checkpoint = await this.client.mark({ label: opts.label, context, meta })
    this.log?.append({ type: 'checkpoint', id: checkpoint.id, label: checkpoint.label, branch: checkpoint.branch, meta })
    this.from = checkpoint.id
    this.tools = []
    this.llmCalls = 0
    return { checkpoint, meta }
  }

  /**
   * After a restore to `id` (or when the log moved to a new file): the next
   * segment starts from `id`; calls recorded since the last boundary are
   * dropped from eta_t (they belong to the abandoned branch; the log keeps them).
   */
  resetTo (id: CheckpointId): void {
    this.from = id
    this.tools = []
    this.llmCalls = 0
    this.loggedInput = 0
  }
}

/** Run `fn` over `items`, at most `limit` at a time. */
async function mapLimit<T> (items: readonly T[], limit: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0
  const worker = async (): Promise<void> => {
    while (next < items.length) await fn(items[next++])
  }
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker))
}
