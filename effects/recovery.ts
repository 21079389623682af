/**
 * What a restore abandons (issue 15 item 3): the generations of the old
 * lineage — the head the workspace came from and its ancestors, plus the
 * live generation it was writing — that are not on the new lineage (the
 * restored checkpoint and its ancestors). The effects begun in those
 * generations are the abandoned suffix: a restore undoes none of them.
 *
 * Checkpoints are looked up in the ledger's own checkpoint entries first
 * (so a checkpoint gc removed still links its generation), then in the
 * store's checkpoint records.
 */
import type { EffectInfo, RecoveryInfo } from '../proto/effects.js'

/** A checkpoint's generation and parent, or null when neither the ledger nor the store knows it. */
export type CheckpointLookup = (id: number) => { generation: number, parent: number | null } | null

/** Generations sealed by `head` and its ancestors (walks parent links; stops at an unknown id or a cycle). Cost: O(lineage). */
export function lineageGenerations (head: number | null, lookup: CheckpointLookup): Set<number> {
  const out = new Set<number>()
  const seen = new Set<number>()
  for (let id = head; id !== null && !seen.has(id);) {
    seen.add(id)
    const c = lookup(id)
    if (c === null) break
    out.add(c.generation)
    id = c.parent
  }
  return out
}

/** Generations abandoned by a restore from (`fromHead`, live `fromGeneration`) to checkpoint `to`. */
export function abandonedGenerations (fromHead: number | null, fromGeneration: number, to: number, lookup: CheckpointLookup): Set<number> {
  const kept = lineageGenerations(to, lookup)
  const old = lineageGenerations(fromHead, lookup)
  old.add(fromGeneration)
  for (const g of kept) old.delete(g)
  return old
}

/**
 * The three facts of a restore: trajectory (the checkpoint has a context to
 * rebuild from), workspace (restored), external effects: none, reconciled
 * (every abandoned effect has a settled outcome: confirmed, failed, or a
 * reconcile verdict) or unreconciled (some are in flight or unknown).
 */
export function recoveryOf (hasContext: boolean, abandoned: EffectInfo[]): RecoveryInfo {
  const settled = (e: EffectInfo): boolean => e.reconcile !== null || e.status === 'confirmed' || e.status === 'failed'
  return {
    trajectory: hasContext ? 'restored' : 'no context',
    workspace: 'restored',
    effects: abandoned.length === 0 ? 'none' : abandoned.every(settled) ? 'reconciled' : 'unreconciled',
    abandoned,
  }
}
