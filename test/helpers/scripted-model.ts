/**
 * Test builder: a deterministic scripted model for the runner (client/chat.ts
 * Model). The script is a function of what the model can see — the context —
 * reduced to a few facts: how many assistant turns the context holds, how
 * many rewinds the injected memory reports, the last tool result. It keeps
 * every call's input for assertions.
 */
import type { ChatMessage, Model, ModelReply, ToolCall, ToolSpec } from '../../client/chat.js'
import { isMemoryMessage } from '../../client/memory.js'

/** What the script sees at one call. */
export interface ScriptState {
  messages: ChatMessage[]
  tools: ToolSpec[]
  /** assistant messages in the context (0 at the first call of a branch that starts from the task) */
  turn: number
  /** rewinds the injected memory reports (0: no memory message) */
  rewinds: number
  /** text of the memory message, or null */
  memory: string | null
  /** the last tool message's content, parsed when it is JSON; undefined when the last message is not a tool result */
  lastResult: unknown
  /** every tool result since the last assistant message, parsed */
  results: unknown[]
}

export type Script = (s: ScriptState) => ModelReply

export interface ScriptedModel {
  model: Model
  /** inputs of every call, in order */
  seen: ScriptState[]
}

function parse (s: string): unknown {
  try { return JSON.parse(s) } catch { return s }
}

/** A Model playing `script`; tool call ids are call_1, call_2, … in call order. */
export function scriptedModel (script: Script): ScriptedModel {
  const seen: ScriptState[] = []
  let ids = 0
  const model: Model = async (messages, tools) => {
    const mem = messages.find(isMemoryMessage)
    const memory = mem === undefined ? null : mem.content
    const rewinds = memory === null ? 0 : Number(/rewound (\d+) time/.exec(memory)?.[1] ?? 0)
    const lastAssistant = messages.map(m => m.role).lastIndexOf('assistant')
    const results = messages.slice(lastAssistant + 1).filter(m => m.role === 'tool').map(m => parse(m.content))
    const last = messages[messages.length - 1]
    const s: ScriptState = {
      messages: structuredClone(messages), tools, memory, rewinds, results,
      turn: messages.filter(m => m.role === 'assistant').length,
      lastResult: last?.role === 'tool' ? parse(last.content) : undefined,
    }
    seen.push(s)
    const reply = script(s)
    return reply.toolCalls === undefined ? reply : { ...reply, toolCalls: reply.toolCalls.map(c => ({ ...c, id: `call_${++ids}` })) }
  }
  return { model, seen }
}

/** A tool call for a script (its id is assigned by the model). */
export function use (name: string, args: Record<string, unknown> = {}): ToolCall {
  return { id: '', name, arguments: args }
}
