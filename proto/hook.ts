/**
 * The hook socket's vocabulary (proto/PROTOCOL.md §7): what a harness's
 * PreToolUse hook sends (JSON on the hook's stdin) and the checkpoint the
 * daemon marks for it: label = the tool's name, meta = the hook metadata
 * below. Field names as Claude Code (hooks reference, v1.0 and
 * v2.x) and Codex (codex-rs/hooks/schema/generated/
 * pre-tool-use.command.input.schema.json; Codex adds `turn_id`) send them.
 */

/** Name of the hook socket in the store directory (`<store>/hook.sock`, mode 0600). */
export const HOOK_SOCKET = 'hook.sock'

/** The PreToolUse payload fields rewindfs reads; others are ignored. */
export interface HookPayload {
  session_id?: string
  transcript_path?: string | null
  cwd?: string
  hook_event_name?: string
  tool_name?: string
  tool_input?: unknown
  tool_use_id?: string
  /** Codex only */
  turn_id?: string
}

/** The harnesses whose hooks rewindfs installs. */
export type Harness = 'claude' | 'codex'

/** The segment metadata of a checkpoint marked by a hook. */
export interface HookMeta {
  kind: 'rewindfs.hook/1'
  harness: Harness
  tool_name: string
  tool_use_id: string | null
  session_id: string | null
  transcript_path: string | null
  cwd: string | null
  turn_id: string | null
  /** a short summary of tool_input (SUMMARY_MAX characters at most) */
  input: string
}

/** Longest input summary, UTF-16 code units. */
export const SUMMARY_MAX = 200

/** Longest label (the protocol's bound on mark's label). */
const LABEL_MAX = 1024

function str (v: unknown): string | null {
  return typeof v === 'string' ? v : null
}

function cut (s: string, max = SUMMARY_MAX): string {
  const one = s.replace(/\s+/g, ' ').trim()
  return one.length <= max ? one : one.slice(0, max - 1) + '…'
}

/**
 * A short summary of a tool's input: the command of a shell tool, the path
 * of a file tool (with the pattern of a search), else the input as JSON;
 * one line, at most SUMMARY_MAX characters.
 */
export function summarizeInput (input: unknown): string {
  if (typeof input === 'string') return cut(input)
  if (typeof input !== 'object' || input === null) return cut(JSON.stringify(input) ?? '')
  const o = input as Record<string, unknown>
  if (typeof o.command === 'string') return cut(o.command)
  if (Array.isArray(o.command)) return cut(o.command.map(String).join(' '))
  const file = str(o.file_path) ?? str(o.notebook_path) ?? str(o.path)
  const pattern = str(o.pattern)
  if (file !== null || pattern !== null) return cut([pattern, file].filter(x => x !== null).join(' in '))
  if (typeof o.url === 'string') return cut(o.url)
  return cut(JSON.stringify(o) ?? '')
}

/**
 * The label and meta of the checkpoint for one hook payload. Throws
 * TypeError when `payload` is not an object (the daemon answers it with an
 * error line; the hook lets the call through).
 */
export function hookMark (harness: Harness, payload: unknown): { label: string, meta: HookMeta } {
  if (typeof payload !== 'object' || payload === null || Array.isArray(payload)) throw new TypeError('the hook payload is not a JSON object')
  const p = payload as HookPayload
  const tool = str(p.tool_name) ?? 'tool'
  return {
    label: tool.slice(0, LABEL_MAX),
    meta: {
      kind: 'rewindfs.hook/1',
      harness,
      tool_name: tool,
      tool_use_id: str(p.tool_use_id),
      session_id: str(p.session_id),
      transcript_path: str(p.transcript_path),
      cwd: str(p.cwd),
      turn_id: str(p.turn_id),
      input: summarizeInput(p.tool_input),
    },
  }
}

/** True when `v` is the meta of a checkpoint marked by a hook. */
export function isHookMeta (v: unknown): v is HookMeta {
  return typeof v === 'object' && v !== null && (v as { kind?: unknown }).kind === 'rewindfs.hook/1'
}

/** The shell command of a payload's tool input (Bash, Codex shell), or null for other tools. */
export function commandOf (payload: unknown): string | null {
  const input = (payload as HookPayload | null)?.tool_input
  if (typeof input !== 'object' || input === null) return null
  const c = (input as { command?: unknown }).command
  if (typeof c === 'string') return c
  if (Array.isArray(c)) return c.map(String).join(' ')
  return null
}
