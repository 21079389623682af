/**
 * Store format migrations (FORMAT.md "Versions"). `StoreDb.open` runs them:
 * a store written by an earlier rewindfs is brought to STORE_FORMAT before
 * anything else reads it, and keeps working.
 *
 * - 2 -> 3: adds the effect ledger (effects/chain.ts): `<store>/effects/`
 *   with `ledger.jsonl` holding a first `genesis` entry
 *   `{format: 3, migratedFrom: 2}` and `head.json`. Nothing else changes.
 *   Order: the ledger first (fsynced), then `meta.format` = 3 with sync, so
 *   a kill in between leaves a format-2 store whose migration runs again
 *   (creating the ledger is skipped when it exists).
 */
import { createLedgerSync } from '../../effects/chain.js'

/** Formats this build migrates from, each to the next. */
export const MIGRATIONS: Readonly<Record<number, { to: number, run: (storeDir: string) => Promise<void> }>> = {
  2: { to: 3, run: async (storeDir) => { createLedgerSync(storeDir, { format: 3, migratedFrom: 2 }) } },
}

/** What a new store gets besides its metadata database (before `meta.format` is written). */
export async function initNewStore (storeDir: string, format: number): Promise<void> {
  createLedgerSync(storeDir, { format })
}
