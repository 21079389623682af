/**
 * The two backtrack tools, as JSON-schema function definitions in the
 * shapes the tool-calling APIs accept, and what they do:
 *
 * - backtrack_candidates(reason, files?) → up to 80 earlier checkpoints of the
 *   current lineage, newest first: {id, step, label, time (ms since the
 *   epoch), branch, eta (one-line summary of the segment that ended there)},
 *   and with `files` the files each segment changed (segmentFiles).
 * - backtrack_commit(checkpoint_id, memory, reason) → adds the memory note
 *   to the run's rewind memory, then restores that checkpoint. The runner
 *   (runner.ts) then rebuilds the context from the checkpoint.
 *
 * OpenAI-style: {type: 'function', function: {name, description, parameters}}.
 * Anthropic-style: {name, description, input_schema}.
 */
import type { CandidateInfo, CheckpointId, DiffEntry, RestoreInfo } from '../proto/messages.js'
import type { RewindClient } from './client.js'
import type { ToolSpec } from './chat.js'
import { addMemory, MEMORY_NOTE_SCHEMA, validateMemoryNote, type MemoryNote, type MemoryRecord } from './memory.js'
import { isSegmentMeta, summarizeSegment } from './segment.js'
import { effectView, type EffectView } from './effects.js'
import { MAX_CANDIDATES } from '../proto/validate.js'

export const BACKTRACK_CANDIDATES = 'backtrack_candidates'
export const BACKTRACK_COMMIT = 'backtrack_commit'
/** Most files listed per candidate by backtrack_candidates with `files` (the rest are counted in files_more). */
export const MAX_CANDIDATE_FILES = 30
/** Most candidates listed: the protocol's bound (proto/validate.ts). */
export { MAX_CANDIDATES }
/** Longest `reason`, UTF-16 code units. */
export const REASON_MAX = 2000

/**
 * How far a backtrack goes (issue 16): `both` restores the files and
 * rebuilds the context; `context` (depth 0) rebuilds only the context and
 * keeps the files as they are; `workspace` restores only the files and
 * keeps the conversation.
 */
export const REWIND_DEPTHS = ['both', 'context', 'workspace'] as const
/** One of REWIND_DEPTHS. */
export type RewindDepth = typeof REWIND_DEPTHS[number]

/** OpenAI-style tool definition (chat completions `tools[]`). */
export interface OpenAiTool { type: 'function'; function: { name: string; description: string; parameters: Record<string, unknown> } }
/** Anthropic-style tool definition (messages API `tools[]`). */
export interface AnthropicTool { name: string; description: string; input_schema: Record<string, unknown> }

export function toOpenAiTool (t: ToolSpec): OpenAiTool {
  return { type: 'function', function: { name: t.name, description: t.description, parameters: t.parameters } }
}

export function toAnthropicTool (t: ToolSpec): AnthropicTool {
  return { name: t.name, description: t.description, input_schema: t.parameters }
}

export const backtrackCandidatesSpec: ToolSpec = {
  name: BACKTRACK_CANDIDATES,
  description: `List up to ${MAX_CANDIDATES} earlier checkpoints you can go back to, newest first. Each checkpoint is a decision boundary where both the workspace and your context were saved: id, step (0 = the oldest), label, time (ms since the Unix epoch), branch, and eta: a summary of the segment that ended there (tool calls with exit status, files created ~modified and deleted with byte counts). Call it when the work has gone wrong in a way that is cheaper to undo than to repair.`,
  parameters: {
    type: 'object',
    properties: {
      reason: { type: 'string', maxLength: REASON_MAX, description: 'Why you are considering a rewind.' },
      files: { type: 'boolean', description: `Also list, per candidate, the files its segment changed ("A path" added, "M path" modified, "D path" deleted, "m path" attributes only; with the tool call that changed each when it is known), at most ${MAX_CANDIDATE_FILES} per candidate. Use it to find the step that touched a file that is now wrong.` },
    },
    required: ['reason'],
    additionalProperties: false,
  },
}

export const backtrackCommitSpec: ToolSpec = {
  name: BACKTRACK_COMMIT,
  description: 'Go back to checkpoint checkpoint_id (from backtrack_candidates): the workspace is restored exactly and your context is restored to what it was there, with the accumulated rewind memory added. Everything after that checkpoint is abandoned and will not be re-executed. The memory note is all that carries over: what was tried, why it was abandoned, what to do instead, lasting facts, milestones reached; never the current state.',
  parameters: {
    type: 'object',
    properties: {
      checkpoint_id: { type: 'integer', minimum: 1, description: 'id of a checkpoint listed by backtrack_candidates' },
      memory: MEMORY_NOTE_SCHEMA,
      reason: { type: 'string', maxLength: REASON_MAX, description: 'Why this checkpoint.' },
      depth: { type: 'string', enum: [...REWIND_DEPTHS], description: 'What goes back (default: the runner\'s choice, usually both). both: the files and your context. context: only your context (with the memory); the files stay as they are now — when the files are right but your reasoning went wrong. workspace: only the files; you keep this conversation — when the files went wrong but what you learned here is worth keeping.' },
    },
    required: ['checkpoint_id', 'memory', 'reason'],
    additionalProperties: false,
  },
}

/** Both tools, provider-neutral. */
export const backtrackTools: readonly ToolSpec[] = [backtrackCandidatesSpec, backtrackCommitSpec]
/** Both tools, OpenAI-style. */
export const backtrackToolsOpenAi: readonly OpenAiTool[] = backtrackTools.map(toOpenAiTool)
/** Both tools, Anthropic-style. */
export const backtrackToolsAnthropic: readonly AnthropicTool[] = backtrackTools.map(toAnthropicTool)

/** Name of the localise tool (client/localise.ts), offered by the runner with `localise`. */
export const BACKTRACK_LOCALISE = 'backtrack_localise'

/** True when `name` is one of the backtrack tools (candidates, commit, localise). */
export function isBacktrackTool (name: string): boolean {
  return name === BACKTRACK_CANDIDATES || name === BACKTRACK_COMMIT || name === BACKTRACK_LOCALISE
}

/** Tool arguments that do not fit the schema; `field` names the argument. */
export class ToolArgumentError extends Error {
  readonly field: string
  constructor (field: string, message: string) {
    super(message)
    this.name = 'ToolArgumentError'
    this.field = field
  }
}

/** Validated arguments of backtrack_commit; `depth` absent: the caller's default. */
export interface CommitArgs { checkpoint_id: CheckpointId; memory: MemoryNote; reason: string; depth?: RewindDepth }

function checkReason (v: unknown): string {
  if (typeof v !== 'string') throw new ToolArgumentError('reason', 'reason must be a string')
  if (v.length > REASON_MAX) throw new ToolArgumentError('reason', `reason is longer than ${REASON_MAX} characters`)
  return v
}

function onlyFields (o: Record<string, unknown>, fields: readonly string[]): void {
  for (const k of Object.keys(o)) if (!fields.includes(k)) throw new ToolArgumentError(k, `unknown argument ${k}; the arguments are ${fields.join(', ')}`)
}

/** Validate backtrack_candidates arguments: the reason, and `files` (default false). */
export function parseCandidatesArgs (args: Record<string, unknown>): { reason: string, files: boolean } {
  onlyFields(args, ['reason', 'files'])
  if (args.files !== undefined && args.files !== null && typeof args.files !== 'boolean') throw new ToolArgumentError('files', 'files must be true or false')
  return { reason: checkReason(args.reason), files: args.files === true }
}

/** Validate backtrack_commit arguments (memory with validateMemoryNote; its errors become ToolArgumentError on `memory.<field>`). */
export function parseCommitArgs (args: Record<string, unknown>): CommitArgs {
  onlyFields(args, ['checkpoint_id', 'memory', 'reason', 'depth'])
  const id = args.checkpoint_id
  if (typeof id !== 'number' || !Number.isSafeInteger(id) || id < 1) throw new ToolArgumentError('checkpoint_id', 'checkpoint_id must be an integer ≥ 1')
  let memory: MemoryNote
  try { memory = validateMemoryNote(args.memory) } catch (err) {
    const field = (err as { field?: string }).field
    throw new ToolArgumentError(field === undefined || field === 'memory' ? 'memory' : `memory.${field}`, (err as Error).message)
  }
  const out: CommitArgs = { checkpoint_id: id, memory, reason: checkReason(args.reason) }
  if (args.depth !== undefined && args.depth !== null) {
    if (typeof args.depth !== 'string' || !(REWIND_DEPTHS as readonly string[]).includes(args.depth)) throw new ToolArgumentError('depth', `depth must be one of ${REWIND_DEPTHS.join(', ')}`)
    out.depth = args.depth as RewindDepth
  }
  return out
}

/**
 * One candidate as backtrack_candidates answers it. With `files`: the
 * files its segment changed, one line each ("A path", "M path", "D path",
 * "m path" for attributes only, "T path" for a change of kind; " (call N:
 * tool)" added when the daemon attributed it), at most MAX_CANDIDATE_FILES,
 * `files_more` counting the rest; absent when not known (the oldest listed
 * candidate without segment metadata: its parent is not listed).
 */
export interface CandidateView { id: CheckpointId; step: number; label: string | null; time: number; branch: string; eta: string; files?: string[]; files_more?: number }

/** The candidate as the tool shows it: the segment metadata summarised to one line. */
export function candidateView (c: CandidateInfo): CandidateView {
  return { id: c.id, step: c.step, label: c.label, time: c.time, branch: c.branch, eta: summarizeSegment(c.meta) }
}

/**
 * Run backtrack_candidates: up to `limit` (≤ 80) checkpoints of the current
 * lineage, newest first, and `external_effects`: the effects recorded on the
 * current branch (newest 20), which a rewind does not undo (each with the
 * checkpoint it happened after). A client without effect_list lists none.
 */
export async function backtrackCandidates (client: Pick<RewindClient, 'candidates'> & Partial<Pick<RewindClient, 'effectList' | 'status' | 'diff'>>, args: Record<string, unknown>, limit = MAX_CANDIDATES): Promise<{ candidates: CandidateView[], external_effects: EffectView[] }> {
  const a = parseCandidatesArgs(args)
  const list = await client.candidates({ limit: Math.min(Math.max(1, limit), MAX_CANDIDATES) })
  const views = list.map(candidateView)
  if (a.files) {
    for (let i = 0; i < list.length; i++) {
      const lines = await segmentFiles(client, list[i], list[i + 1]?.id ?? null)
      if (lines === null) continue
      views[i].files = lines.slice(0, MAX_CANDIDATE_FILES)
      if (lines.length > MAX_CANDIDATE_FILES) views[i].files_more = lines.length - MAX_CANDIDATE_FILES
    }
  }
  let effects: EffectView[] = []
  if (client.effectList !== undefined && client.status !== undefined) {
    const branch = (await client.status()).branch
    effects = (await client.effectList({ branch, limit: 20 })).map(effectView)
  }
  return { candidates: views, external_effects: effects }
}

const LETTER: Record<DiffEntry['change'], string> = { added: 'A', deleted: 'D', modified: 'M', meta: 'm', type: 'T' }

/**
 * The files the segment ending at candidate `c` changed, one line each
 * (CandidateView.files), from the first that knows: the daemon's
 * attribution (`calls`: each line names its call), the recorder's segment
 * metadata (its lists, cut at 200 per kind), or the diff from `parent`
 * (the next older candidate) to `c`; null when none does.
 */
export async function segmentFiles (client: Partial<Pick<RewindClient, 'diff'>>, c: CandidateInfo, parent: CheckpointId | null): Promise<string[] | null> {
  if (c.calls !== undefined) {
    const out: string[] = []
    for (const k of c.calls.calls) {
      const by = k.call === null ? '' : ` (call ${k.call}: ${k.tool})`
      for (const f of k.created) out.push(`A ${f.path}${by}`)
      for (const f of k.modified) out.push(`${f.attrsOnly === true ? 'm' : 'M'} ${f.path}${by}`)
      for (const f of k.deleted) out.push(`D ${f.path}${by}`)
    }
    return out
  }
  if (isSegmentMeta(c.meta)) {
    const f = c.meta.files
    return [...f.created.map(x => `A ${x.path}`), ...f.modified.map(x => `${x.attrsOnly ? 'm' : 'M'} ${x.path}`), ...f.deleted.map(x => `D ${x.path}`)]
  }
  if (parent === null || client.diff === undefined) return null
  const d = await client.diff({ a: parent, b: c.id })
  return d.filter(e => e.path !== '/').map(e => `${LETTER[e.change]} ${e.path.replace(/^\/+/, '')}`)
}

/** What a committed backtrack did. */
export interface Committed {
  /** the checkpoint restored */
  checkpoint: CheckpointId
  /** head checkpoint before the restore (the branch abandoned), or null */
  from: CheckpointId | null
  /** what went back */
  depth: RewindDepth
  /** the restore of the files; null at depth `context` (the files were kept) */
  restore: RestoreInfo | null
  /** the memory entry added */
  record: MemoryRecord
  /** entries the run's memory holds now */
  memoryCount: number
  /** the effects of the abandoned branch, which the rewind did not undo (restore.recovery.abandoned) */
  notUndone: EffectView[]
}

/**
 * Run backtrack_commit for `run`: validate, check that the checkpoint is one
 * of the candidates (the current lineage, newest 80), add the memory entry
 * (durable first, so a crash after it keeps what was learned), restore.
 * `target` overrides the checkpoint restored (restart from the beginning);
 * the memory records the one actually restored. `depth` (the default when
 * the arguments give none; default `both`): at `context` the files are not
 * restored (restore: null). Throws ToolArgumentError
 * for arguments the agent can fix; RewindError from the daemon otherwise.
 */
export async function backtrackCommit (
  client: Pick<RewindClient, 'candidates' | 'status' | 'memoryAdd' | 'restore'>,
  run: string,
  args: Record<string, unknown>,
  opts: { target?: CheckpointId, verify?: (id: CheckpointId, depth: RewindDepth) => Promise<void>, depth?: RewindDepth } = {},
): Promise<Committed> {
  const a = parseCommitArgs(args)
  const list = await client.candidates({ limit: MAX_CANDIDATES })
  if (!list.some(c => c.id === a.checkpoint_id)) throw new ToolArgumentError('checkpoint_id', `checkpoint ${a.checkpoint_id} is not among the candidates (call ${BACKTRACK_CANDIDATES})`)
  const to = opts.target ?? a.checkpoint_id
  // refuse before anything changes (memory, workspace) when the caller cannot continue from `to`
  const depth = a.depth ?? opts.depth ?? 'both'
  if (opts.verify) await opts.verify(to, depth)
  const from = (await client.status()).head
  const record: MemoryRecord = { kind: 'rewindfs.memory/1', ...a.memory, reason: a.reason, from, to, time: Date.now() }
  const memoryCount = (await addMemory(client, run, record))
  const restore = depth === 'context' ? null : await client.restore({ id: to })
  return { checkpoint: to, from, depth, restore, record, memoryCount, notUndone: (restore?.recovery?.abandoned ?? []).map(effectView) }
}
