/**
 * Cutting a Claude Code transcript before one tool call, as a new session
 * that `claude --resume` lists.
 *
 * Format (Claude Code 1.0.x to 2.1.x, ~/.claude/projects/<project>/<session
 * id>.jsonl): one JSON object per line. Conversation entries have `type`
 * "user" or "assistant", `uuid`, `parentUuid` (the chain), `sessionId`, and
 * `message` (the API message: an assistant message's content blocks are
 * written one line each, sharing `message.id`; a block
 * `{"type":"tool_use","id":"toolu_…"}` is the call, answered by a later user
 * line holding `{"type":"tool_result","tool_use_id":"toolu_…"}`). Other lines:
 * `summary` (with `leafUuid`), `file-history-snapshot` (with `messageId`),
 * `ai-title`, `system`. Based on transcripts published in public issue
 * threads and test fixtures of tools that read them; not on a specification
 * (Anthropic publishes none), so a later version may change it.
 *
 * The cut keeps every line before the first tool_use line of the assistant
 * message that made the call (the text the model wrote before it stays; a
 * call made in parallel with earlier ones in the same message goes back to
 * the first of them, since a kept tool_use needs its tool_result), drops
 * `summary` lines whose leaf is gone, and gives every line the new session
 * id. The original file is not changed.
 */
import fs from 'node:fs'
import path from 'node:path'
import { randomUUID } from 'node:crypto'

/** A transcript that cannot be cut at the given tool call. */
export class TranscriptError extends Error {
  constructor (readonly file: string, message: string) {
    super(`${file}: ${message}`)
    this.name = 'TranscriptError'
  }
}

/** Where a cut goes. */
export interface ClaudeCutPlan {
  source: string
  /** lines kept (raw text), before the cut */
  lines: string[]
  /** lines dropped from the cut on */
  dropped: number
  /** the tool calls the cut takes back, in order: the first one is where the files go back to */
  toolUseIds: string[]
}

interface Entry { type?: unknown, uuid?: unknown, leafUuid?: unknown, sessionId?: unknown, message?: { id?: unknown, content?: unknown } }

function parse (line: string): Entry | null {
  try { const v = JSON.parse(line); return typeof v === 'object' && v !== null ? v as Entry : null } catch { return null }
}

function toolUses (e: Entry | null): string[] {
  if (e?.type !== 'assistant' || !Array.isArray(e.message?.content)) return []
  return (e.message!.content as Array<{ type?: unknown, id?: unknown }>).filter(b => b?.type === 'tool_use' && typeof b.id === 'string').map(b => b.id as string)
}

/**
 * Plan the cut of transcript `file` before tool call `toolUseId`. Throws
 * TranscriptError when the file cannot be read or does not hold that call.
 */
export function planClaudeCut (file: string, toolUseId: string): ClaudeCutPlan {
  let text: string
  try { text = fs.readFileSync(file, 'utf8') } catch (e) { throw new TranscriptError(file, `cannot read the transcript: ${(e as Error).message}`) }
  const lines = text.split('\n')
  if (lines.at(-1) === '') lines.pop()
  const entries = lines.map(parse)
  const at = entries.findIndex(e => toolUses(e).includes(toolUseId))
  if (at < 0) throw new TranscriptError(file, `no tool call ${toolUseId} in this transcript (is it the session that made the call?)`)
  // the assistant message's lines around it, and the first tool_use among them
  const msg = entries[at]!.message!.id
  let first = at
  for (let i = at - 1; i >= 0; i--) {
    const e = entries[i]
    if (e?.type !== 'assistant' || msg === undefined || e.message?.id !== msg) break
    if (toolUses(e).length > 0) first = i
  }
  const ids: string[] = []
  for (let i = first; i <= at; i++) for (const id of toolUses(entries[i])) { ids.push(id); if (id === toolUseId) break }
  const kept = new Set(entries.slice(0, first).map(e => e?.uuid).filter(u => typeof u === 'string'))
  const out = lines.slice(0, first).filter((_l, i) => !(entries[i]?.type === 'summary' && typeof entries[i]?.leafUuid === 'string' && !kept.has(entries[i]!.leafUuid as string)))
  return { source: file, lines: out, dropped: lines.length - first, toolUseIds: ids }
}

/** A written cut. */
export interface ClaudeCut { file: string, sessionId: string, kept: number, dropped: number }

/**
 * Write the planned cut as a new session file beside the original, named
 * `<new session id>.jsonl`, every entry's `sessionId` set to it (lines that
 * are not JSON are kept as they are). The file is created exclusively, with
 * the original's mode.
 */
export function writeClaudeCut (plan: ClaudeCutPlan, sessionId: string = randomUUID()): ClaudeCut {
  const file = path.join(path.dirname(plan.source), `${sessionId}.jsonl`)
  const body = plan.lines.map(l => {
    const e = parse(l) as Record<string, unknown> | null
    if (e === null || !('sessionId' in e)) return l
    e.sessionId = sessionId
    return JSON.stringify(e)
  }).join('\n') + (plan.lines.length > 0 ? '\n' : '')
  fs.writeFileSync(file, body, { flag: 'wx', mode: fs.statSync(plan.source).mode & 0o777 })
  return { file, sessionId, kept: plan.lines.length, dropped: plan.dropped }
}
