/**
 * The recovery gate (issue 15 item 3): before an effect on the same target
 * and request identity may happen again, decide from evidence — the
 * reconcile verdicts and the recorded outcomes — never from which
 * checkpoint the agent is on. Pure logic: effects/ledger.ts gives it the
 * earlier occurrence as the ledger knows it.
 *
 * | evidence about the earlier occurrence            | decision |
 * |---|---|
 * | none (no earlier occurrence)                      | allowed: `new` |
 * | the tool is `replayable`                           | allowed: `replayable` (repeating it changes nothing outside) |
 * | proven absent (verdict absent, or outcome failed)  | allowed as a new occurrence: `absent` |
 * | compensated (a compensation of it confirmed)       | allowed as a new occurrence: `compensated` |
 * | a person overrode it (`rewindfs effects override`) | allowed as a new occurrence: `overridden` |
 * | present as intended (verdict present, or confirmed), irreversible or unknown class | refused: `irreversible`, continue from the fact |
 * | present as intended, other classes                 | refused: `present`, accept the fact |
 * | present but wrong, compensable                     | refused: `compensate-only`; only its compensation is allowed |
 * | present but wrong, not compensable                 | refused: `irreversible`, continue from the fact |
 * | still in flight (intent or pending)                | refused: `in-flight` (fail closed) |
 * | unknown (timeout, lost response, kill)             | refused: `unknown` until reconciled or overridden (fail closed) |
 *
 * A compensation (an effect linked to the one it undoes) is allowed only
 * when the compensated occurrence is compensable and present (as intended
 * or wrong), and no earlier compensation of it is present, in flight or
 * unknown.
 */
import type { EffectClass, EffectStatus, GateRule, ReconcileVerdict } from '../proto/effects.js'

export type { GateRule } from '../proto/effects.js'

/** Error code of each refusal (proto/errors.ts, PROTOCOL.md "Effects"). */
export const REFUSAL_CODES = {
  present: 'E_EFFECT_DONE',
  'compensate-only': 'E_EFFECT_COMPENSATE_ONLY',
  irreversible: 'E_EFFECT_IRREVERSIBLE',
  'in-flight': 'E_EFFECT_UNKNOWN',
  unknown: 'E_EFFECT_UNKNOWN',
  'not-compensable': 'E_EFFECT_IRREVERSIBLE',
  'nothing-to-compensate': 'E_EFFECT_DONE',
} as const

/** What the gate knows about an earlier occurrence. */
export interface PriorOccurrence {
  occurrence: number
  class: EffectClass
  status: EffectStatus
  /** the latest reconcile verdict, or null */
  verdict: ReconcileVerdict | null
  /** a person overrode the gate for it */
  overridden: boolean
  /** a compensation of it was confirmed (or reconciled present) */
  compensated: boolean
  /** the target, for messages */
  target: string
}

/** The gate's decision. */
export interface GateDecision {
  allowed: boolean
  rule: GateRule
  /** the earlier occurrence decided on, or null */
  occurrence: number | null
  /** for a refusal: its error code */
  code: typeof REFUSAL_CODES[keyof typeof REFUSAL_CODES] | null
  /** one or two sentences a model can act on */
  message: string
}

/** Where the evidence about `p` points: absent, present, wrong, in flight or unknown. */
export function evidenceOf (p: PriorOccurrence): 'absent' | 'present' | 'wrong' | 'in-flight' | 'unknown' {
  if (p.verdict !== null) return p.verdict
  switch (p.status) {
    case 'failed': return 'absent'
    case 'confirmed': return 'present'
    case 'intent': case 'pending': return 'in-flight'
    case 'unknown': return 'unknown'
  }
}

function allow (rule: GateRule, p: PriorOccurrence | null, message: string): GateDecision {
  return { allowed: true, rule, occurrence: p?.occurrence ?? null, code: null, message }
}

function refuse (rule: keyof typeof REFUSAL_CODES, p: PriorOccurrence, message: string): GateDecision {
  return { allowed: false, rule, occurrence: p.occurrence, code: REFUSAL_CODES[rule], message }
}

/**
 * Decide whether a new occurrence of an effect of class `cls` may begin,
 * given the latest earlier occurrence with the same target and identity
 * (null when none). See the table in the module comment.
 */
export function decide (cls: EffectClass, prior: PriorOccurrence | null): GateDecision {
  if (prior === null) return allow('new', null, 'No earlier occurrence of this effect: go ahead.')
  const n = `#${prior.occurrence}`
  if (cls === 'replayable') return allow('replayable', prior, 'The tool is replayable: repeating it changes nothing outside; go ahead.')
  if (prior.overridden) return allow('overridden', prior, `A person overrode the gate for occurrence ${n}: go ahead, as a new occurrence.`)
  if (prior.compensated) return allow('compensated', prior, `Occurrence ${n} was compensated (undone): go ahead, as a new occurrence.`)
  switch (evidenceOf(prior)) {
    case 'absent': return allow('absent', prior, `Occurrence ${n} is proven absent on ${prior.target}: go ahead, as a new occurrence.`)
    case 'present':
      if (prior.class === 'irreversible' || prior.class === 'unknown') return refuse('irreversible', prior, `Refused: occurrence ${n} already happened on ${prior.target} and cannot be undone. Do not repeat it; continue from that fact.`)
      return refuse('present', prior, `Refused: occurrence ${n} already happened on ${prior.target} as intended. Do not repeat it; accept that it exists and continue from there.`)
    case 'wrong':
      if (prior.class === 'compensable') return refuse('compensate-only', prior, `Refused: occurrence ${n} happened on ${prior.target} but not as intended. Only its compensation is allowed (compensate occurrence ${n}); then it may be done again.`)
      return refuse('irreversible', prior, `Refused: occurrence ${n} happened on ${prior.target} but not as intended, and it cannot be compensated. Do not repeat it; continue from that fact.`)
    case 'in-flight': return refuse('in-flight', prior, `Refused: occurrence ${n} on ${prior.target} is still in flight (no outcome recorded). Wait for it, or reconcile it by re-reading ${prior.target}.`)
    case 'unknown': return refuse('unknown', prior, `Refused: the outcome of occurrence ${n} on ${prior.target} is unknown. Reconcile it first (re-read ${prior.target} and record absent, present or wrong); a person can override with a reason.`)
  }
}

/**
 * Decide whether a compensation of `target` may begin, given the latest
 * earlier compensation of it (null when none).
 */
export function decideCompensation (target: PriorOccurrence, earlier: PriorOccurrence | null): GateDecision {
  const n = `#${target.occurrence}`
  if (target.class !== 'compensable') return refuse('not-compensable', target, `Refused: occurrence ${n} is ${target.class}, not compensable. Continue from the fact.`)
  const ev = evidenceOf(target)
  if (ev === 'in-flight' || ev === 'unknown') return refuse(ev, target, `Refused: the outcome of occurrence ${n} is ${ev === 'unknown' ? 'unknown' : 'not recorded yet'}. Reconcile it first (re-read ${target.target}).`)
  if (ev === 'absent' || target.compensated) return refuse('nothing-to-compensate', target, `Refused: occurrence ${n} is ${target.compensated ? 'already compensated' : 'absent'}; there is nothing to compensate.`)
  if (earlier !== null) {
    const e = evidenceOf(earlier)
    if (e === 'in-flight' || e === 'unknown') return refuse(e, earlier, `Refused: compensation #${earlier.occurrence} of ${n} is ${e === 'unknown' ? 'of unknown outcome' : 'still in flight'}. Reconcile it first.`)
    if (e === 'present' || e === 'wrong') return refuse('nothing-to-compensate', earlier, `Refused: occurrence ${n} was already compensated by #${earlier.occurrence}.`)
  }
  return allow('new', target, `Compensation of occurrence ${n} allowed: it is tracked as its own effect.`)
}
