/**
 * Runner: drives any model (chat.ts Model: messages and tools → reply)
 * through an agent loop with the backtrack tools on offer.
 *
 * Before each model call it marks a decision boundary (recorder.ts): a
 * checkpoint carrying the context `{kind: 'rewindfs.context/1', run,
 * messages}` and the segment metadata of the segment that just ended. The
 * model's tool calls run in order through `executeTool`, except the two
 * backtrack tools, which the runner answers itself. When the model commits a
 * backtrack, the current turn stops there (later tool calls of the same
 * reply are not run), the memory note is added to the run's rewind memory,
 * the checkpoint is restored, the context is rebuilt from the one stored
 * with the checkpoint (`context`) with the whole memory injected, and the
 * loop continues from there: the kept prefix (everything up to that
 * checkpoint) is never re-executed.
 *
 * With `localise` the runner also offers backtrack_localise (localise.ts)
 * and answers it; `attributeCalls` (default on) runs each of the agent's
 * tools inside a tool call of the daemon (call_begin/call_end), so the
 * next checkpoint lists what each call changed.
 *
 * Options of the same runner: `rewindBudget` (commits allowed; later ones
 * are answered with an error and the turn goes on),
 * `restartFromBeginning` (every commit rewinds to the run's first
 * checkpoint instead of the one named, keeping the memory) and
 * `rewindDepth` (issue 16; what goes back when the commit names no
 * `depth`): `both` (default: files restored, context rebuilt), `context`
 * (depth 0: the context is rebuilt from the checkpoint with the memory, the
 * files stay as they are and the branch goes on), `workspace` (the files
 * are restored, the conversation goes on with the commit answered; the
 * other calls of that reply are answered "not run"). The run log's
 * `rewind` record names the depth; a rewind that rebuilds the context
 * starts a new log file (fork), a workspace-only one does not.
 */
import type { CheckpointId } from '../proto/messages.js'
import type { RewindClient } from './client.js'
import type { AssistantMessage, ChatMessage, Model, ToolCall, ToolSpec } from './chat.js'
import { getMemory, injectMemory } from './memory.js'
import { SessionRecorder } from './recorder.js'
import type { RunLog } from './runlog.js'
import { notUndoneNote } from './effects.js'
import { BACKTRACK_CANDIDATES, BACKTRACK_COMMIT, BACKTRACK_LOCALISE, backtrackCandidates, backtrackCommit, backtrackTools, ToolArgumentError, type RewindDepth } from './tools.js'
import { backtrackLocalise, backtrackLocaliseSpec } from './localise.js'

/** What a tool did: its result (any JSON; sent to the model as JSON text) and exit status (0 success). */
export interface ToolOutcome { result: unknown; exitStatus: number }
/** Runs one of the agent's own tools. A throw becomes `{result: {error}, exitStatus: 1}`. */
export type ExecuteTool = (call: ToolCall) => Promise<ToolOutcome>

/** The context stored with each checkpoint the runner marks. */
export interface StoredContext { kind: 'rewindfs.context/1'; run: string; messages: ChatMessage[] }

/** One committed backtrack, as the runner reports it. */
export interface RewindEvent {
  /** the checkpoint the model named */
  requested: CheckpointId
  /** the checkpoint restored (the run's first one with restartFromBeginning) */
  checkpoint: CheckpointId
  /** head checkpoint of the abandoned branch */
  from: CheckpointId | null
  reason: string
  /** entries the run's memory holds now */
  memoryCount: number
  /** the rebuilt context the run continues from (stored context + memory message) */
  messages: ChatMessage[]
  restart: boolean
  /** what went back: both, context (files kept) or workspace (conversation kept) */
  depth: RewindDepth
}

export interface RunnerOptions {
  client: RewindClient
  model: Model
  /** runs the agent's own tools (never called for the backtrack tools) */
  executeTool: ExecuteTool
  /** the run's name: rewind memory and log are kept under it */
  run: string
  /** the agent's own tools, offered before the two backtrack tools */
  tools?: readonly ToolSpec[]
  /** commits allowed in the run (count); default unlimited */
  rewindBudget?: number
  /** every commit rewinds to the run's first checkpoint instead of the one named; default false */
  restartFromBeginning?: boolean
  /** what goes back when backtrack_commit names no depth: both (default), context (depth 0: files kept) or workspace (conversation kept) */
  rewindDepth?: RewindDepth
  /** the run log (runlog.ts); none by default */
  log?: RunLog
  /** model calls allowed in the run, across branches; default 200 */
  maxTurns?: number
  /** called after each rewind, once the workspace is restored and the context rebuilt */
  onRewind?: (e: RewindEvent) => void | Promise<void>
  /**
   * attribute each of the agent's tool calls (call_begin/call_end around
   * executeTool, with this process's pid): the daemon then lists in the
   * next checkpoint what each call changed, and `rewindfs blame` names it.
   * The process moves into a cgroup of the call while it runs, so run one
   * tool at a time in it. Default true; a daemon without call_begin is
   * used without (once).
   */
  attributeCalls?: boolean
  /**
   * offer backtrack_localise (localise.ts) with the backtrack tools and
   * answer it: the model's check command runs in scratch exports of
   * candidates; `timeoutMs` bounds each probe (default 120 s). Default off:
   * offer it where the agent may run commands anyway.
   */
  localise?: boolean | { timeoutMs?: number }
}

export interface RunResult {
  /** the final context */
  messages: ChatMessage[]
  /** the last reply's text */
  final: string
  /** 'finished': the model answered without tool calls; 'max_turns': maxTurns was reached */
  stopped: 'finished' | 'max_turns'
  /** model calls made, across branches */
  turns: number
  /** every checkpoint marked, in order */
  checkpoints: CheckpointId[]
  rewinds: RewindEvent[]
}

/** The messages of a context stored by the runner; throws when `v` is not one. */
export function storedMessages (v: unknown, id: CheckpointId): ChatMessage[] {
  const c = v as Partial<StoredContext> | null
  if (c === null || typeof c !== 'object' || c.kind !== 'rewindfs.context/1' || !Array.isArray(c.messages)) {
    throw new Error(`checkpoint ${id} carries no runner context (kind rewindfs.context/1)`)
  }
  return c.messages
}

export class Runner {
  private readonly o: RunnerOptions
  readonly recorder: SessionRecorder
  private commits = 0
  /** false once the daemon refused call_begin: the run goes on unattributed */
  private attributing = true

  constructor (opts: RunnerOptions) {
    this.o = opts
    this.recorder = new SessionRecorder(opts.client, { run: opts.run, log: opts.log })
  }

  /** Commits made so far. */
  get rewinds (): number {
    return this.commits
  }

  /** Run from `initial` (e.g. system + task messages) until the model answers without tool calls, or maxTurns. */
  async run (initial: readonly ChatMessage[]): Promise<RunResult> {
    const { client, model, run } = this.o
    const maxTurns = this.o.maxTurns ?? 200
    const budget = this.o.rewindBudget ?? Infinity
    const tools = [...(this.o.tools ?? []), ...backtrackTools, ...(this.o.localise ? [backtrackLocaliseSpec] : [])]
    let messages: ChatMessage[] = [...initial]
    let first: CheckpointId | undefined
    const checkpoints: CheckpointId[] = []
    const rewinds: RewindEvent[] = []
    let turns = 0
    let final = ''

    while (turns < maxTurns) {
      const context: StoredContext = { kind: 'rewindfs.context/1', run, messages }
      const { checkpoint } = await this.recorder.boundary(context, { label: `before model call ${turns + 1}` })
      first ??= checkpoint.id
      checkpoints.push(checkpoint.id)

      const reply = await model(messages, tools)
      turns++
      this.recorder.recordLlmCall(messages, reply)
      const calls = reply.toolCalls ?? []
      final = reply.content ?? ''
      const said: AssistantMessage = calls.length === 0 ? { role: 'assistant', content: final } : { role: 'assistant', content: final, toolCalls: calls }
      messages = [...messages, said]
      if (calls.length === 0) {
        await client.runEnd({ run })
        return { messages, final, stopped: 'finished', turns, checkpoints, rewinds }
      }

      for (const call of calls) {
        if (call.name === BACKTRACK_COMMIT && this.commits < budget) {
          let done
          try {
            done = await backtrackCommit(client, run, call.arguments, {
              target: this.o.restartFromBeginning === true ? first : undefined,
              depth: this.o.rewindDepth,
              verify: async (id, depth) => {
                if (depth === 'workspace') return // the conversation goes on: no stored context needed
                try { storedMessages(await client.context({ id }), id) } catch {
                  throw new ToolArgumentError('checkpoint_id', `checkpoint ${id} was not marked by this run's runner (it carries no stored context to continue from); choose a checkpoint labelled "before model call N"`)
                }
              }
            })
          } catch (err) {
            if (!(err instanceof ToolArgumentError)) throw err
            messages = this.answer(messages, call, { result: { error: err.message, field: err.field }, exitStatus: 1 })
            continue
          }
          // the turn stops here: the rest of this reply belongs to the abandoned branch
          this.commits++
          const restart = this.o.restartFromBeginning === true
          const result = { restored: done.checkpoint, depth: done.depth }
          const logRewind = (): void => { this.o.log?.append({ type: 'rewind', from: done.from, to: done.checkpoint, reason: done.record.reason, memory: done.record, memoryCount: done.memoryCount, restart, depth: done.depth }) }
          if (done.depth === 'workspace') {
            // the files went back, the conversation goes on: answer this call, and the rest of the reply as not run
            messages = this.answer(messages, call, { result: { ...result, changed: done.restore?.changed ?? 0 }, exitStatus: 0 })
            logRewind()
            for (const rest of calls.slice(calls.indexOf(call) + 1)) {
              messages = [...messages, { role: 'tool', toolCallId: rest.id, name: rest.name, content: JSON.stringify({ error: `not run: ${BACKTRACK_COMMIT} ended the turn (the files were restored to checkpoint ${done.checkpoint})` }) }]
            }
            this.recorder.resetTo(done.checkpoint)
          } else {
            this.recorder.recordToolCall({ name: call.name, args: call.arguments, result, exitStatus: 0 })
            logRewind()
            this.o.log?.fork(done.checkpoint)
            const stored = storedMessages(await client.context({ id: done.checkpoint }), done.checkpoint)
            messages = injectMemory(stored, await getMemory(client, run))
            const note = notUndoneNote(done.restore?.recovery?.abandoned ?? [])
            if (note !== null) messages = [...messages, { role: 'user', content: note }]
            // at depth context the files were kept: the segment goes on from the head, not from the checkpoint
            if (done.depth === 'both') this.recorder.resetTo(done.checkpoint)
          }
          const e: RewindEvent = { requested: call.arguments.checkpoint_id as CheckpointId, checkpoint: done.checkpoint, from: done.from, reason: done.record.reason, memoryCount: done.memoryCount, messages, restart, depth: done.depth }
          rewinds.push(e)
          await this.o.onRewind?.(e)
          break
        }
        messages = this.answer(messages, call, await this.execute(call, budget))
      }
    }
    await client.runEnd({ run })
    return { messages, final, stopped: 'max_turns', turns, checkpoints, rewinds }
  }

  /** Run one non-committing call: a backtrack_candidates, a refused commit, or the agent's own tool. */
  private async execute (call: ToolCall, budget: number): Promise<{ result: unknown; exitStatus: number }> {
    try {
      if (call.name === BACKTRACK_CANDIDATES) return { result: await backtrackCandidates(this.o.client, call.arguments), exitStatus: 0 }
      if (call.name === BACKTRACK_LOCALISE && this.o.localise) {
        const timeoutMs = typeof this.o.localise === 'object' ? this.o.localise.timeoutMs : undefined
        return { result: await backtrackLocalise(this.o.client, call.arguments, { timeoutMs }), exitStatus: 0 }
      }
      if (call.name === BACKTRACK_COMMIT) return { result: { error: `rewind budget exhausted: ${this.commits} of ${budget} rewinds used; continue from here` }, exitStatus: 1 }
      return await this.attributed(call)
    } catch (err) {
      if (err instanceof ToolArgumentError) return { result: { error: err.message, field: err.field }, exitStatus: 1 }
      if (call.name === BACKTRACK_CANDIDATES) throw err
      return { result: { error: (err as Error).message ?? String(err) }, exitStatus: 1 }
    }
  }

  /**
   * Runs the agent's own tool inside a tool call of the daemon (attribution,
   * `attributeCalls`): every change this process and the processes it
   * starts make meanwhile is the call's. The call ends with the tool's exit
   * status (1 when it threw).
   */
  private async attributed (call: ToolCall): Promise<ToolOutcome> {
    const client = this.o.client
    let id: number | null = null
    if (this.o.attributeCalls !== false && this.attributing) {
      try { id = (await client.callBegin({ tool: call.name, args: call.arguments, pid: process.pid })).call } catch { this.attributing = false }
    }
    let out: ToolOutcome | undefined
    try {
      out = await this.o.executeTool(call)
      return out
    } finally {
      if (id !== null) await client.callEnd({ call: id, exitStatus: out?.exitStatus ?? 1 }).catch(() => {})
    }
  }

  /** Record the outcome and append the tool message. */
  private answer (messages: ChatMessage[], call: ToolCall, out: ToolOutcome): ChatMessage[] {
    this.recorder.recordToolCall({ name: call.name, args: call.arguments, result: out.result, exitStatus: out.exitStatus })
    const content = typeof out.result === 'string' ? out.result : JSON.stringify(out.result ?? null)
    return [...messages, { role: 'tool', toolCallId: call.id, name: call.name, content }]
  }
}
