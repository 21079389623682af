/**
 * For agents: external effects through the daemon's ledger
 * (PROTOCOL.md "Effects"). `guardedCall` wraps an async function that acts
 * outside the workspace: begin (the gate may refuse: nothing is called),
 * sent, the call with a timeout, complete with the outcome and its
 * evidence. Errors are classified: a timeout, or an error after the request
 * may have reached the target, is `unknown` (fail closed); only an error
 * that proves nothing was sent (connection refused, name not resolved) is
 * `failed`. `gateMessage` turns a refusal into the short message a model
 * can act on; `effectView` and `notUndoneNote` are what the backtrack
 * tools show about effects a rewind cannot undo.
 */
import type { EffectBeginArgs } from '../proto/messages.js'
import type { EffectInfo, GateInfo } from '../proto/effects.js'
import type { RewindClient } from './client.js'
import { RewindError } from './errors.js'

/** Default time the wrapped call may take before its outcome is unknown, ms. */
export const DEFAULT_CALL_TIMEOUT_MS = 30000

/** Error codes a begin refused by the gate carries. */
export const GATE_REFUSALS = ['E_EFFECT_DONE', 'E_EFFECT_COMPENSATE_ONLY', 'E_EFFECT_IRREVERSIBLE', 'E_EFFECT_UNKNOWN'] as const

/** errno codes that prove the request never left this host: the effect certainly did not happen. */
export const NOT_SENT_CODES = ['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'ENETUNREACH', 'EHOSTUNREACH', 'ERR_INVALID_URL']

/** The gate refused the effect: nothing was called. `message` is the gate's advice for a model. */
export class EffectRefusedError extends Error {
  constructor (readonly code: string, readonly gate: GateInfo) {
    super(gate.message)
    this.name = 'EffectRefusedError'
  }
}

/** The wrapped call failed or timed out; `status` is what the ledger recorded (failed or unknown). */
export class EffectCallError extends Error {
  constructor (readonly occurrence: number, readonly status: 'failed' | 'unknown', message: string, options?: { cause?: unknown }) {
    super(message, options)
    this.name = 'EffectCallError'
  }
}

/** What guardedCall needs besides the begin arguments. */
export interface GuardedCall<T> extends EffectBeginArgs {
  /** compensate this occurrence instead of beginning a plain effect */
  compensates?: number
  /** the effect itself; gets the occurrence id (to send as an idempotency key) and a signal aborted at the timeout */
  call: (ctx: { occurrence: number, identity: string, signal: AbortSignal }) => Promise<T>
  /** the outcome of a result (default: confirmed, with no evidence) */
  outcome?: (result: T) => { status: 'confirmed' | 'failed', evidence?: unknown }
  /** an error's status: failed (proven not to have happened) or unknown; default: failed only for NOT_SENT_CODES */
  classify?: (err: unknown) => 'failed' | 'unknown'
  /** time the call may take, ms; default DEFAULT_CALL_TIMEOUT_MS; then its outcome is unknown */
  callTimeoutMs?: number
}

/** The default error classification (see module comment). */
export function classifyError (err: unknown): 'failed' | 'unknown' {
  const code = (err as { code?: unknown, cause?: { code?: unknown } })?.code ?? (err as { cause?: { code?: unknown } })?.cause?.code
  return typeof code === 'string' && NOT_SENT_CODES.includes(code) ? 'failed' : 'unknown'
}

/**
 * Run `g.call` as a guarded effect. Resolves to the result and the
 * occurrence once the outcome is recorded. Rejects with
 * EffectRefusedError (the gate said no: nothing was called),
 * EffectCallError (the call failed or timed out: recorded failed or
 * unknown), or the daemon's RewindError/ConnectionError (begin or complete
 * could not be recorded; when complete could not, the daemon makes the
 * occurrence unknown at its deadline or restart).
 */
export async function guardedCall<T> (client: Pick<RewindClient, 'effectBegin' | 'effectCompensate' | 'effectSent' | 'effectComplete'>, g: GuardedCall<T>): Promise<{ result: T, occurrence: number, status: 'confirmed' | 'failed', gate: GateInfo }> {
  const { call, outcome, classify, callTimeoutMs, compensates, ...begin } = g
  let b
  try {
    b = compensates === undefined ? await client.effectBegin(begin) : await client.effectCompensate({ ...begin, compensates })
  } catch (err) {
    if (err instanceof RewindError && (GATE_REFUSALS as readonly string[]).includes(err.code)) {
      const gate = (err.details as { gate?: GateInfo } | undefined)?.gate ?? { allowed: false, rule: 'unknown', occurrence: null, message: err.message }
      throw new EffectRefusedError(err.code, gate)
    }
    throw err
  }
  const occurrence = b.occurrence
  await client.effectSent({ occurrence })
  const ac = new AbortController()
  const ms = callTimeoutMs ?? DEFAULT_CALL_TIMEOUT_MS
  let timer: ReturnType<typeof setTimeout> | undefined
  const timedOut = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => { ac.abort(); reject(Object.assign(new Error(`no answer within ${ms} ms`), { code: 'ETIMEDOUT', timeout: true })) }, ms)
  })
  let result: T
  try {
    result = await Promise.race([call({ occurrence, identity: b.identity, signal: ac.signal }), timedOut])
  } catch (err) {
    const timeout = (err as { timeout?: boolean }).timeout === true
    const status = timeout ? 'unknown' : (classify ?? classifyError)(err)
    const e = err as { message?: string, code?: unknown }
    await client.effectComplete({ occurrence, status, evidence: { error: String(e?.message ?? err), code: typeof e?.code === 'string' ? e.code : null, timeout } })
    throw new EffectCallError(occurrence, status, `effect #${occurrence} ${status === 'unknown' ? 'has an unknown outcome' : 'failed'}: ${String(e?.message ?? err)}${status === 'unknown' ? ' (the gate refuses it again until it is reconciled)' : ''}`, { cause: err })
  } finally {
    clearTimeout(timer)
  }
  const out = outcome?.(result) ?? { status: 'confirmed' as const }
  await client.effectComplete({ occurrence, status: out.status, evidence: out.evidence ?? null })
  return { result, occurrence, status: out.status, gate: b.gate }
}

/** The gate's decision as one short message for a model, from a refusal (EffectRefusedError or the RewindError of a begin); null for other errors. */
export function gateMessage (err: unknown): string | null {
  if (err instanceof EffectRefusedError) return err.gate.message
  if (err instanceof RewindError && (GATE_REFUSALS as readonly string[]).includes(err.code)) return (err.details as { gate?: GateInfo } | undefined)?.gate?.message ?? err.message
  return null
}

/** One effect as the backtrack tools show it. */
export interface EffectView { occurrence: number, tool: string, target: string, class: string, status: string, verdict: string | null, after_checkpoint: number | null }

/** An effect as a model sees it: what, where, its status, and the checkpoint it happened after. */
export function effectView (e: EffectInfo): EffectView {
  return { occurrence: e.occurrence, tool: e.tool, target: e.target, class: e.class, status: e.status, verdict: e.reconcile?.verdict ?? null, after_checkpoint: e.actor.checkpoint }
}

/** The note a model gets after a rewind that abandoned effects: a rewind undoes none of them. Null when there are none. */
export function notUndoneNote (abandoned: readonly EffectInfo[]): string | null {
  if (abandoned.length === 0) return null
  const lines = abandoned.map(e => `- #${e.occurrence} ${e.tool} on ${e.target}: ${e.reconcile?.verdict ?? e.status}`)
  return `rewindfs: the rewind restored the workspace and your context, but not these external effects of the abandoned branch; they still happened (or may have). Do not repeat them blindly: the gate refuses a repeat that already happened or whose outcome is unknown.\n${lines.join('\n')}`
}
