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
