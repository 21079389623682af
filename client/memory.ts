/**
 * Rewind memory: what the agent learned before a backtrack, kept by the
 * daemon per run (memory_add / memory_get), so it survives a client crash.
 * Every committed backtrack adds one entry; the whole accumulated memory is
 * injected into the restored context as one message.
 *
 * A note is structured (Rollback-Induced Reflection): what was tried, why it
 * was abandoned, what to do instead, facts about the environment that stay
 * true, milestones already reached. It never claims current state — the
 * workspace was just restored, so anything "current" in it would be false —
 * and a note with a current-state field is refused.
 */
import type { CheckpointId, MemoryEntry } from '../proto/messages.js'
import type { RewindClient } from './client.js'
import type { JsonSchema, TextMessage, ChatMessage } from './chat.js'

/** The structured note the agent gives with backtrack_commit. */
export interface MemoryNote {
  /** what was tried on the abandoned branch */
  tried: string
  /** why it was abandoned */
  why_abandoned: string
  /** what to do instead */
  instead: string
  /** facts about the environment that stay true after the rewind */
  facts: string[]
  /** milestones already reached that stay reached */
  milestones: string[]
}

/** One stored entry: the note and where the backtrack went. */
export interface MemoryRecord extends MemoryNote {
  kind: 'rewindfs.memory/1'
  /** the reason given with backtrack_commit */
  reason: string
  /** head checkpoint when the backtrack was committed (the abandoned branch), or null */
  from: CheckpointId | null
  /** the checkpoint restored */
  to: CheckpointId
  /** ms since the Unix epoch */
  time: number
}

/** Longest text field of a note, UTF-16 code units. */
export const NOTE_TEXT_MAX = 4000
/** Most items in facts or milestones. */
export const NOTE_LIST_MAX = 50

/** The note fields, in order. */
export const NOTE_FIELDS = ['tried', 'why_abandoned', 'instead', 'facts', 'milestones'] as const

/** JSON Schema of a MemoryNote (the `memory` argument of backtrack_commit). */
export const MEMORY_NOTE_SCHEMA: JsonSchema = {
  type: 'object',
  description: 'What you learned, for your future self after the rewind. Never describe the current state of files or the task: the workspace is about to be restored, so it would be false.',
  properties: {
    tried: { type: 'string', maxLength: NOTE_TEXT_MAX, description: 'What was tried on the branch being abandoned.' },
    why_abandoned: { type: 'string', maxLength: NOTE_TEXT_MAX, description: 'Why it was abandoned (the evidence).' },
    instead: { type: 'string', maxLength: NOTE_TEXT_MAX, description: 'What to do instead after the rewind.' },
    facts: { type: 'array', maxItems: NOTE_LIST_MAX, items: { type: 'string', maxLength: NOTE_TEXT_MAX }, description: 'Facts about the environment that stay true after the rewind (tool behaviour, APIs, constraints).' },
    milestones: { type: 'array', maxItems: NOTE_LIST_MAX, items: { type: 'string', maxLength: NOTE_TEXT_MAX }, description: 'Milestones already reached that stay reached at the restored checkpoint.' },
  },
  required: [...NOTE_FIELDS],
  additionalProperties: false,
}

/** A note that was refused, with the field at fault. */
export class MemoryNoteError extends Error {
  readonly field: string
  constructor (field: string, message: string) {
    super(message)
    this.name = 'MemoryNoteError'
    this.field = field
  }
}

/** Field names that claim current state (refused with a specific message). */
const CURRENT_STATE = /current|state|status|now|present|progress|remaining|todo|workspace|files?$/i

/**
 * Check `v` against MEMORY_NOTE_SCHEMA and return it as a MemoryNote.
 * Throws MemoryNoteError naming the field: a missing or mistyped field, a
 * field that claims current state (`current_state`, `status`, `progress`, …)
 * or any other unknown field.
 */
export function validateMemoryNote (v: unknown): MemoryNote {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new MemoryNoteError('memory', 'memory must be an object {tried, why_abandoned, instead, facts, milestones}')
  const o = v as Record<string, unknown>
  for (const k of Object.keys(o)) {
    if ((NOTE_FIELDS as readonly string[]).includes(k)) continue
    if (CURRENT_STATE.test(k)) throw new MemoryNoteError(k, `memory.${k}: rewind memory never claims current state (the workspace is restored, so it would be false); keep what was tried, why it was abandoned, what to do instead, lasting facts and milestones`)
    throw new MemoryNoteError(k, `memory.${k}: unknown field; the fields are ${NOTE_FIELDS.join(', ')}`)
  }
  for (const k of ['tried', 'why_abandoned', 'instead'] as const) {
    if (typeof o[k] !== 'string') throw new MemoryNoteError(k, `memory.${k} must be a string`)
    if ((o[k] as string).length > NOTE_TEXT_MAX) throw new MemoryNoteError(k, `memory.${k} is longer than ${NOTE_TEXT_MAX} characters`)
  }
  for (const k of ['facts', 'milestones'] as const) {
    const a = o[k]
    if (!Array.isArray(a) || !a.every(x => typeof x === 'string')) throw new MemoryNoteError(k, `memory.${k} must be an array of strings`)
    if (a.length > NOTE_LIST_MAX) throw new MemoryNoteError(k, `memory.${k} has more than ${NOTE_LIST_MAX} items`)
    if (a.some(x => (x as string).length > NOTE_TEXT_MAX)) throw new MemoryNoteError(k, `memory.${k}: an item is longer than ${NOTE_TEXT_MAX} characters`)
  }
  return { tried: o.tried as string, why_abandoned: o.why_abandoned as string, instead: o.instead as string, facts: [...o.facts as string[]], milestones: [...o.milestones as string[]] }
}

/** The client calls the memory needs. */
export type MemoryClient = Pick<RewindClient, 'memoryAdd' | 'memoryGet'>

/** Add one entry to the rewind memory of `run` (durable in the daemon before it resolves); resolves to the entry count. */
export async function addMemory (client: Pick<RewindClient, 'memoryAdd'>, run: string, record: MemoryRecord): Promise<number> {
  return (await client.memoryAdd({ run, entry: record as unknown as MemoryEntry })).count
}

/** The rewind memory of `run`, oldest first (entries not written by this library are kept as they are). */
export async function getMemory (client: MemoryClient, run: string): Promise<MemoryEntry[]> {
  return (await client.memoryGet({ run })).entries
}

/** `name` of the message that carries the rewind memory. */
export const MEMORY_MESSAGE_NAME = 'rewind_memory'

/** True for the message renderMemory makes. */
export function isMemoryMessage (m: ChatMessage): boolean {
  return m.role === 'user' && m.name === MEMORY_MESSAGE_NAME
}

/**
 * The whole memory as text: one numbered section per entry, oldest first.
 * An entry not written by this library is shown as JSON.
 */
export function renderMemoryText (entries: readonly MemoryEntry[]): string {
  const out = [`Rewind memory: you have rewound ${entries.length} time${entries.length === 1 ? '' : 's'} in this run. The workspace and this conversation were restored to an earlier checkpoint; what you learned before is below. It holds lessons and lasting facts only, never the current state: check the workspace yourself.`]
  entries.forEach((e, i) => {
    const r = e as Partial<MemoryRecord>
    if (r.kind !== 'rewindfs.memory/1') { out.push('', `${i + 1}. ${JSON.stringify(e)}`); return }
    out.push('', `${i + 1}. Rewound to checkpoint ${r.to ?? '?'}${r.reason !== undefined && r.reason !== '' ? ` because: ${r.reason}` : ''}`)
    out.push(`   Tried: ${r.tried ?? ''}`, `   Abandoned because: ${r.why_abandoned ?? ''}`, `   Instead: ${r.instead ?? ''}`)
    for (const f of r.facts ?? []) out.push(`   Fact: ${f}`)
    for (const m of r.milestones ?? []) out.push(`   Milestone reached: ${m}`)
  })
  return out.join('\n')
}

/** The whole memory as one message to inject into a restored context. */
export function renderMemory (entries: readonly MemoryEntry[]): TextMessage {
  return { role: 'user', name: MEMORY_MESSAGE_NAME, content: renderMemoryText(entries) }
}

/**
 * `messages` with the memory injected: any earlier memory message removed
 * (a restored context may carry an older, shorter one) and the whole
 * memory appended at the end.
 */
export function injectMemory (messages: readonly ChatMessage[], entries: readonly MemoryEntry[]): ChatMessage[] {
  return [...messages.filter(m => !isMemoryMessage(m)), renderMemory(entries)]
}
