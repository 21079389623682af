/**
 * The provider-neutral shapes the runner speaks with a model adapter: chat
 * messages, tool calls, the model's reply, neutral tool definitions. An
 * adapter maps them to one provider's API (toOpenAiTool / toAnthropicTool in
 * tools.ts convert the tool definitions).
 */

/** A tool call the model asked for; `arguments` is the parsed JSON object. */
export interface ToolCall {
  /** chosen by the model (or its adapter); echoed in the tool message */
  id: string
  name: string
  arguments: Record<string, unknown>
}

/** System or user text. `name: 'rewind_memory'` marks the injected rewind memory (memory.ts). */
export interface TextMessage { role: 'system' | 'user'; content: string; name?: string }
/** What the model said, with the tool calls it asked for (absent: none). */
export interface AssistantMessage { role: 'assistant'; content: string; toolCalls?: ToolCall[] }
/** The result of one tool call, as text (JSON for the backtrack tools). */
export interface ToolMessage { role: 'tool'; toolCallId: string; name: string; content: string }

/** One message of the agent's context. Plain JSON: it is stored with each checkpoint. */
export type ChatMessage = TextMessage | AssistantMessage | ToolMessage

/** A model's answer to one call: text and the tool calls it asks for (none: the run is finished). */
export interface ModelReply {
  content?: string
  toolCalls?: ToolCall[]
}

/** A JSON Schema (draft 2020-12 subset the tool-calling APIs accept), as a plain object. */
export type JsonSchema = Record<string, unknown>

/** A tool definition without a provider's wrapping: name, description, JSON Schema of its arguments object. */
export interface ToolSpec {
  name: string
  description: string
  parameters: JsonSchema
}

/**
 * The adapter interface: one model call. Gets the whole context and the
 * tools on offer, answers with a reply. Anything that maps these to a
 * provider (or plays a script) is a model.
 */
export type Model = (messages: ChatMessage[], tools: ToolSpec[]) => Promise<ModelReply>
