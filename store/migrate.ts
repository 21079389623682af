/**
 * Store format migrations (FORMAT.md "Versions"): a chain of steps, each
 * from one format to the next. `StoreDb.open` runs them in order, so a
 * store written by any earlier supported rewindfs is brought to
 * STORE_FORMAT before anything else reads it, and keeps working. To add a
 * format N+1: raise STORE_FORMAT (store/db.ts), add the step `N: { to:
 * N+1, run }` here, and, if a new store needs more than its database, say
 * so in initNewStore.
 *
 * Each step is idempotent: `meta.format` is raised (synced) only after the
 * step's work is durable, so a kill in between leaves the older format and
 * the step runs again at the next open.
 *
 * - 2 -> 3 (block lists with runs of holes): nothing to rewrite (a format-2
 *   block list is a valid format-3 one); the version is raised so that an
 *   older rewindfs refuses the store instead of misreading a run of holes.
 * - 3 -> 4 (the effect ledger, store/effect-chain.ts): creates
 *   `<store>/effects/ledger.jsonl` with a first `genesis` entry
 *   `{format: 4, migratedFrom: 3}` and `effects/head.json`, fsynced;
 *   skipped when the ledger exists (an interrupted migration).
 * - 4 -> 5 (the per-path history index, kind `hist`): nothing to rewrite
 *   here; the version is raised so that an older rewindfs, which would
 *   not keep the index, refuses the store. The backfill (the index keys
 *   of every format-4 checkpoint) needs the inode tables, which store/
 *   does not read (fs/ imports store/, not the reverse): it runs when
 *   fs/history opens the store (Generations.open → path-index.ts
 *   backfillIndex), one batch per checkpoint. A checkpoint not backfilled
 *   yet is one the index does not cover, and every history query examines
 *   it, so history stays exact before, during and after the backfill.
 */
import { createLedgerSync } from './effect-chain.js'

/** One migration step: the format it produces and the work (on the store directory; the caller raises `meta.format`). */
export interface MigrationStep { to: number, run: (storeDir: string) => Promise<void> }

/** The steps this build runs, keyed by the format they start from. */
export const MIGRATIONS: Readonly<Record<number, MigrationStep>> = {
  2: { to: 3, run: async () => {} },
  3: { to: 4, run: async (storeDir) => { createLedgerSync(storeDir, { format: 4, migratedFrom: 3 }) } },
  4: { to: 5, run: async () => {} }
}

/**
 * What a new store gets besides its metadata database, before its
 * `meta.format` is written: the effect ledger with a genesis entry
 * `{format}`. Throws the fs error (ENOSPC, EACCES) when it cannot be written.
 */
export async function initNewStore (storeDir: string, format: number): Promise<void> {
  createLedgerSync(storeDir, { format })
}

/**
 * The formats from `format` up to `target` as steps, in order, or null when
 * the chain does not reach `target` from `format` (an unknown or newer format).
 */
export function migrationPath (format: number, target: number): MigrationStep[] | null {
  const steps: MigrationStep[] = []
  for (let f = format; f !== target;) {
    const s = MIGRATIONS[f]
    if (s === undefined || s.to <= f || s.to > target) return null
    steps.push(s)
    f = s.to
  }
  return steps
}
