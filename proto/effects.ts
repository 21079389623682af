/**
 * Shapes of the external effect ledger on the wire (issue 15; DESIGN.md
 * "External effects"). An **effect** is something a tool does outside the
 * workspace (an HTTP request that creates a record, a message, a git push, a
 * package published): a restore does not undo it. The daemon records each
 * one in the store's effect ledger (effects/ledger.ts) before it happens and
 * decides with the recovery gate (effects/gate.ts) whether the same effect
 * may happen again. No Node-only types (see STYLE.md "Shape").
 */

/**
 * The class of an effect, declared when its tool is registered, never
 * guessed afterwards:
 * - `replayable`: repeating it changes nothing outside (a read); the gate always admits it
 * - `idempotent`: the target applies one request identity once (an idempotency key)
 * - `compensable`: a later effect can undo it (delete the record it created)
 * - `irreversible`: nothing undoes it (a payment, a message, a published package)
 * - `unknown`: not known; treated like irreversible
 */
export const EFFECT_CLASSES = ['replayable', 'idempotent', 'compensable', 'irreversible', 'unknown'] as const
/** An effect class (see EFFECT_CLASSES). */
export type EffectClass = typeof EFFECT_CLASSES[number]

/** True when `x` names an effect class. */
export function isEffectClass (x: unknown): x is EffectClass {
  return typeof x === 'string' && (EFFECT_CLASSES as readonly string[]).includes(x)
}

/**
 * Status of an occurrence: `intent` (recorded before the call, with its
 * occurrence id) -> `pending` (the call was sent) -> `confirmed` (it took
 * effect) | `failed` (it did not) | `unknown` (no one can tell: a timeout, a
 * lost response, a process killed in between). Every transition carries its
 * evidence. `unknown` is persisted and fails closed.
 */
export const EFFECT_STATUSES = ['intent', 'pending', 'confirmed', 'failed', 'unknown'] as const
/** An occurrence's status (see EFFECT_STATUSES). */
export type EffectStatus = typeof EFFECT_STATUSES[number]

/** True when `x` names a status. */
export function isEffectStatus (x: unknown): x is EffectStatus {
  return typeof x === 'string' && (EFFECT_STATUSES as readonly string[]).includes(x)
}

/**
 * What an authoritative re-read of the target showed (`reconcile`):
 * `absent` (the effect did not happen), `present` (it happened as intended),
 * `wrong` (something happened, but not what was intended).
 */
export const RECONCILE_VERDICTS = ['absent', 'present', 'wrong'] as const
/** A reconcile verdict (see RECONCILE_VERDICTS). */
export type ReconcileVerdict = typeof RECONCILE_VERDICTS[number]

/** True when `x` names a reconcile verdict. */
export function isReconcileVerdict (x: unknown): x is ReconcileVerdict {
  return typeof x === 'string' && (RECONCILE_VERDICTS as readonly string[]).includes(x)
}

/** Why the recovery gate decided as it did (effects/gate.ts has the table). */
export const GATE_RULES = ['new', 'replayable', 'absent', 'compensated', 'overridden', 'present', 'compensate-only', 'irreversible', 'in-flight', 'unknown', 'not-compensable', 'nothing-to-compensate'] as const
/** A gate rule (see GATE_RULES). */
export type GateRule = typeof GATE_RULES[number]

/** The recovery gate's decision, as a begin's result or a refusal's `details` carry it. */
export interface GateInfo {
  allowed: boolean
  rule: GateRule
  /** the earlier occurrence the decision is about, or null */
  occurrence: number | null
  /** one or two sentences a model can act on */
  message: string
}

/** Where and when an effect happened: the run and attempt (given by the client) and the daemon's state at begin. */
export interface EffectActor {
  /** run name given at begin, or null */
  run: string | null
  /** attempt number given at begin (e.g. 1 + rewinds so far), or null */
  attempt: number | null
  /** the checkpoint the live generation started from (status.head), or null */
  checkpoint: number | null
  /** the live generation */
  generation: number
  /** the branch */
  branch: string
}

/** One status transition with its evidence. */
export interface EffectTransition { status: EffectStatus, time: number, evidence: unknown }

/** One occurrence of an effect, as `effect_list` lists it. */
export interface EffectInfo {
  /** the occurrence id, assigned by begin before the call */
  occurrence: number
  tool: string
  class: EffectClass
  /** free-form: URL and resource id, remote name, package name */
  target: string
  /** the request identity (idempotency key) */
  identity: string
  /** 'derived' (from method, target and body) or 'given' by the caller */
  identitySource: 'derived' | 'given'
  actor: EffectActor
  /** snapshot of the target's authoritative state before the call, or null */
  preState: unknown
  /** the occurrence this one compensates, or null */
  compensates: number | null
  /** compensations begun for this occurrence */
  compensations: number[]
  /** begin time, ms since the epoch */
  time: number
  status: EffectStatus
  /** every transition, oldest first (the first is intent) */
  history: EffectTransition[]
  /** the latest reconcile, or null */
  reconcile: { verdict: ReconcileVerdict, evidence: unknown, time: number } | null
  /** a person's override of the gate, or null */
  override: { reason: string, user: string, time: number } | null
}

/** A tool's registration: its effect class and the body fields left out of derived identities. */
export interface EffectRegistration {
  tool: string
  class: EffectClass
  /** RFC 6901 JSON Pointers into the request body */
  exclude: string[]
  description: string
  /** registration time, ms since the epoch */
  time: number
}

/** Result of effect_begin and effect_compensate: the occurrence admitted and why. */
export interface EffectBeginInfo {
  occurrence: number
  identity: string
  gate: GateInfo
}

/**
 * What a restore says about recovery: three separate facts, never one
 * "recovered". `trajectory`: 'restored' when the checkpoint carries a
 * context to rebuild the agent's trajectory from, 'no context' otherwise.
 * `workspace`: 'restored'. `effects`: 'none' (the abandoned suffix did
 * nothing outside), 'reconciled' (each of its effects has a settled
 * outcome: confirmed, failed or a reconcile verdict) or 'unreconciled'
 * (some are in flight or unknown). `abandoned`: every effect of the
 * abandoned suffix with its status; a rewind undoes none of them.
 */
export interface RecoveryInfo {
  trajectory: 'restored' | 'no context'
  workspace: 'restored'
  effects: 'none' | 'reconciled' | 'unreconciled'
  abandoned: EffectInfo[]
}
