/**
 * `rewindfs rewind TOOL_USE_ID`: files and conversation back to just before
 * one tool call. The checkpoint is the one the PreToolUse hook marked for
 * that call (found through the hook socket); the conversation is the
 * harness's transcript cut at the same point, written as a new session
 * (Claude Code: hooks/transcript-claude.ts). Codex: files only (see README
 * "Agent harnesses": a rewritten Codex rollout is not known to resume).
 */
import type { RewindClient } from '../client/client.js'
import type { RestoreInfo } from '../proto/messages.js'
import { findToolCheckpoint, type HookEndpoint } from './socket-client.js'
import { planClaudeCut, writeClaudeCut, TranscriptError, type ClaudeCut } from './transcript-claude.js'
import { isHookMeta, type HookMeta } from '../proto/hook.js'

/** A rewind that cannot start (no checkpoint for the call); nothing changed. */
export class RewindError extends Error {
  constructor (message: string) { super(message); this.name = 'RewindError' }
}

/** What a rewind did. */
export interface RewindOutcome {
  /** the checkpoint restored */
  checkpoint: number
  /** the tool call the files went back to (the first of the parallel calls the transcript cut takes back) */
  toolUseId: string
  meta: HookMeta
  restore: RestoreInfo
  /** the new session written, or null (files only) */
  transcript: ClaudeCut | null
  /** why there is no transcript, or notes (parallel calls), for the user */
  notes: string[]
}

/**
 * Rewind to just before `toolUseId`. Plans the transcript cut first (a
 * transcript that cannot be cut leaves the rewind to files, with a note),
 * restores, then writes the new session. Throws RewindError when no
 * checkpoint was marked for the call.
 */
export async function rewindToolCall (o: { hook: HookEndpoint, client: RewindClient, toolUseId: string, filesOnly?: boolean }): Promise<RewindOutcome> {
  const found = await findToolCheckpoint(o.hook, o.toolUseId)
  if (!found) throw new RewindError(`no checkpoint was marked before tool call ${o.toolUseId}: was the rewindfs hook installed (rewindfs hooks install) and the workspace mounted when it ran? Nothing changed`)
  const notes: string[] = []
  let target = found
  let plan = null
  if (o.filesOnly) notes.push('--files-only: the conversation is left as it is')
  else if (found.meta.harness !== 'claude') notes.push(`${found.meta.harness}: files only; rewindfs does not rewrite this harness's transcript (README "Agent harnesses")`)
  else if (found.meta.transcript_path === null) notes.push('the hook payload named no transcript: files only')
  else {
    try {
      plan = planClaudeCut(found.meta.transcript_path, o.toolUseId)
      const first = plan.toolUseIds[0]
      if (first !== o.toolUseId) {
        const f = await findToolCheckpoint(o.hook, first)
        if (f === null) throw new RewindError(`tool call ${o.toolUseId} ran in parallel with ${first}, which has no checkpoint: the conversation cannot be cut without it. Nothing changed (rewind ${first}'s turn with --files-only to restore files alone)`)
        target = f
        notes.push(`tool call ${o.toolUseId} was made in the same turn as ${plan.toolUseIds.length - 1} earlier call${plan.toolUseIds.length === 2 ? '' : 's'} (${plan.toolUseIds.slice(0, -1).join(', ')}): files and conversation go back to before the first of them, ${first}`)
      }
    } catch (e) {
      if (!(e instanceof TranscriptError)) throw e
      notes.push(`${e.message}: files only`)
      plan = null
    }
  }
  const restore = await o.client.restore({ id: target.id })
  const transcript = plan ? writeClaudeCut(plan) : null
  return { checkpoint: target.id, toolUseId: target.meta.tool_use_id ?? o.toolUseId, meta: target.meta, restore, transcript, notes }
}

/** A tool call the hook marked a checkpoint before, as `rewindfs rewind` lists it. */
export interface HookCall { checkpoint: number, time: number, meta: HookMeta }

/**
 * The tool calls on the path the workspace came through (the daemon's
 * candidates: the current lineage), newest first, at most `limit` (the
 * protocol's candidates bound) checkpoints looked at: those a hook marked.
 */
export async function hookCalls (client: RewindClient, limit?: number): Promise<HookCall[]> {
  const out: HookCall[] = []
  for (const c of await client.candidates({ limit })) if (isHookMeta(c.meta)) out.push({ checkpoint: c.id, time: c.time, meta: c.meta })
  return out
}
