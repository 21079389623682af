/**
 * The localise tool (issue 16, "where did it go wrong"): backtrack_localise
 * runs a check over the candidates of backtrack_candidates and finds the
 * first one at which it fails, by binary search (bisect.ts), each probe in a
 * scratch export of a checkpoint, never in the live workspace. It answers
 * the first failing checkpoint, the last passing one, the probes, and the
 * files the failing segment changed (with the tool call that changed each
 * when the daemon attributed it), so the model can backtrack_commit to the
 * last passing checkpoint, or undo just that step.
 *
 * The runner (runner.ts) offers it with the option `localise` and answers
 * it itself. The check is a command the model chooses (argv, no shell),
 * run as the agent's process runs tools: offer it only where the agent may
 * run commands anyway.
 */
import type { ToolSpec } from './chat.js'
import type { RewindClient } from './client.js'
import type { CheckpointId } from '../proto/messages.js'
import { bisect, probeInExport } from './bisect.js'
import { BACKTRACK_LOCALISE, MAX_CANDIDATES, MAX_CANDIDATE_FILES, REASON_MAX, ToolArgumentError, candidateView, segmentFiles } from './tools.js'

/** Longest check command accepted, in arguments. */
export const MAX_CHECK_ARGS = 256
/** Default longest run of one probe, ms: a probe that runs longer is killed and counts as failing. */
export const DEFAULT_PROBE_TIMEOUT_MS = 120000

export const backtrackLocaliseSpec: ToolSpec = {
  name: BACKTRACK_LOCALISE,
  description: `Find the step where the work went wrong: run a check command (an argv array, no shell; exit status 0 means it passes) in a scratch copy of earlier checkpoints (never in your workspace) and binary-search the candidates of backtrack_candidates (at most ${MAX_CANDIDATES}, the current lineage) for the first one at which it fails. It passes at good (default: the oldest candidate) and fails at bad (default: the newest). Answers first_bad, last_good, every probe, and the files the failing step changed (with the tool call that changed each, when known). Then backtrack_commit to last_good, or fix just those files.`,
  parameters: {
    type: 'object',
    properties: {
      command: { type: 'array', items: { type: 'string' }, minItems: 1, maxItems: MAX_CHECK_ARGS, description: 'The check, e.g. ["npm", "test"] or ["node", "-e", "..."]; it runs with the checkpoint\'s copy as its working directory.' },
      good: { type: 'integer', minimum: 1, description: 'a candidate id where the check passes (default: the oldest candidate)' },
      bad: { type: 'integer', minimum: 1, description: 'a later candidate id where it fails (default: the newest candidate)' },
      reason: { type: 'string', maxLength: REASON_MAX, description: 'What the check tests and why you suspect an earlier step.' },
    },
    required: ['command', 'reason'],
    additionalProperties: false,
  },
}

/** Validated backtrack_localise arguments. */
export interface LocaliseArgs { command: string[]; good?: CheckpointId; bad?: CheckpointId; reason: string }

/** Validate backtrack_localise arguments; throws ToolArgumentError naming the field. */
export function parseLocaliseArgs (args: Record<string, unknown>): LocaliseArgs {
  for (const k of Object.keys(args)) if (!['command', 'good', 'bad', 'reason'].includes(k)) throw new ToolArgumentError(k, `unknown argument ${k}; the arguments are command, good, bad, reason`)
  const cmd = args.command
  if (!Array.isArray(cmd) || cmd.length === 0 || cmd.length > MAX_CHECK_ARGS || !cmd.every(x => typeof x === 'string') || cmd[0] === '') {
    throw new ToolArgumentError('command', `command must be an array of 1..${MAX_CHECK_ARGS} strings, the program first (e.g. ["npm", "test"])`)
  }
  if (typeof args.reason !== 'string' || args.reason.length > REASON_MAX) throw new ToolArgumentError('reason', `reason must be a string of at most ${REASON_MAX} characters`)
  const out: LocaliseArgs = { command: cmd as string[], reason: args.reason }
  for (const f of ['good', 'bad'] as const) {
    const v = args[f]
    if (v === undefined || v === null) continue
    if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 1) throw new ToolArgumentError(f, `${f} must be a checkpoint id (an integer ≥ 1) from backtrack_candidates`)
    out[f] = v
  }
  return out
}

/** What backtrack_localise answers. */
export interface LocaliseResult {
  first_bad: CheckpointId
  last_good: CheckpointId
  /** label and segment summary of first_bad (backtrack_candidates' eta) */
  label: string | null
  eta: string
  /** every probe in the order run: exit_status 0 passes */
  probes: Array<{ checkpoint: CheckpointId, fails: boolean, exit_status: number }>
  /** the files the segment ending at first_bad changed (backtrack_candidates' `files` lines), at most MAX_CANDIDATE_FILES */
  files: string[]
  files_more?: number
}

/**
 * Run backtrack_localise: validate, take the candidates (newest first) as
 * the lineage oldest first, cut it to [good, bad], bisect with a probe in
 * a scratch export of each checkpoint (`timeoutMs` each, default
 * DEFAULT_PROBE_TIMEOUT_MS: a probe that runs longer is killed and fails).
 * Probes: 2 + ceil(log2(checkpoints)) at most. Throws ToolArgumentError
 * when good or bad is not a candidate, good is not older than bad, the
 * check fails at good or passes at bad; RewindError from the daemon.
 */
export async function backtrackLocalise (client: Pick<RewindClient, 'candidates' | 'export' | 'diff'>, args: Record<string, unknown>, opts: { timeoutMs?: number } = {}): Promise<LocaliseResult> {
  const a = parseLocaliseArgs(args)
  const list = await client.candidates({ limit: MAX_CANDIDATES })
  const line = list.map(c => c.id).reverse()
  const at = (f: 'good' | 'bad', id: CheckpointId | undefined, dflt: number): number => {
    if (id === undefined) return dflt
    const i = line.indexOf(id)
    if (i < 0) throw new ToolArgumentError(f, `checkpoint ${id} is not among the candidates (call backtrack_candidates)`)
    return i
  }
  const lo = at('good', a.good, 0)
  const hi = at('bad', a.bad, line.length - 1)
  if (hi - lo < 1) throw new ToolArgumentError(a.bad !== undefined ? 'bad' : 'good', `good (${line[lo] ?? 'none'}) must be an older candidate than bad (${line[hi] ?? 'none'})`)
  let r
  try {
    r = await bisect(line.slice(lo, hi + 1), async id => await probeInExport(client, id, a.command, true, opts.timeoutMs ?? DEFAULT_PROBE_TIMEOUT_MS))
  } catch (e) {
    const msg = (e as Error).message
    if (/passes at the bad/.test(msg)) throw new ToolArgumentError('bad', msg)
    if (/fails at the good/.test(msg)) throw new ToolArgumentError('good', msg)
    if (/^cannot run /.test(msg)) throw new ToolArgumentError('command', msg)
    throw e
  }
  const i = list.findIndex(c => c.id === r.firstBad)
  const view = candidateView(list[i])
  const lines = await segmentFiles(client, list[i], list[i + 1]?.id ?? null) ?? []
  const out: LocaliseResult = {
    first_bad: r.firstBad,
    last_good: r.lastGood,
    label: view.label,
    eta: view.eta,
    probes: r.probes.map(p => ({ checkpoint: p.checkpoint, fails: p.fails, exit_status: p.exitStatus })),
    files: lines.slice(0, MAX_CANDIDATE_FILES)
  }
  if (lines.length > MAX_CANDIDATE_FILES) out.files_more = lines.length - MAX_CANDIDATE_FILES
  return out
}
