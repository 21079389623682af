/**
 * `rewindfs log` and `rewindfs pin` on a stopped store: the checkpoint
 * records read (and a pin written) straight from the store's database, the
 * way gc and verify work on a stopped store. Only while no process holds
 * the store: opening it takes LevelDB's lock, so a running daemon (or one
 * starting, a gc, a verify) makes this fail with E_LOCKED instead of
 * reading a database another process writes.
 */
import fs from 'node:fs'
import path from 'node:path'
import { StoreDb, META_DIR } from '../store/db.js'
import { StoreError } from '../store/errors.js'
import { Generations } from '../fs/history/generations.js'
import type { CheckpointInfo } from './api.js'

/** Why the stopped store could not be read: E_NO_STORE (no store there) or E_LOCKED (another process holds it). */
export class OfflineError extends Error {
  constructor (message: string, readonly code: 'E_NO_STORE' | 'E_LOCKED') { super(message) }
}

/**
 * Opens the stopped store in `store`, runs `fn` with its generations (no
 * block store: nothing here reads or writes blocks), closes it. Throws
 * OfflineError when there is no store or another process holds it; errors
 * of `fn` (ApiError E_UNKNOWN_CHECKPOINT, ...) as they come.
 */
export async function withStoppedStore<T> (store: string, fn: (g: Generations) => Promise<T>): Promise<T> {
  if (!fs.existsSync(path.join(store, META_DIR))) throw new OfflineError(`there is no rewindfs store at ${store} (no ${META_DIR}/ directory)`, 'E_NO_STORE')
  let db: StoreDb
  try {
    db = await StoreDb.open(store)
  } catch (e) {
    if (e instanceof StoreError && e.code === 'E_LOCKED') {
      throw new OfflineError(`the store ${store} is held by another process (a daemon starting or stopping, a gc or a verify): try again in a moment, or run rewindfs status`, 'E_LOCKED')
    }
    throw e
  }
  try {
    const gens = await Generations.open(db, { sync: async () => {}, commitTo: () => {} })
    return await fn(gens)
  } finally {
    await db.close()
  }
}

/** Checkpoints of a stopped store, newest first (as the protocol's `log`), how many there are in all, and the head and branch the next mount goes on from. */
export async function logStopped (store: string, req: { branch?: string, limit?: number }): Promise<{ list: CheckpointInfo[], total: number, head: number | null, branch: string }> {
  return await withStoppedStore(store, async g => ({ list: g.log(req), total: g.checkpoints.size, head: g.state.head, branch: g.state.branch }))
}

/** Pins (or unpins) checkpoint `id` of a stopped store, durably. Unknown id → ApiError E_UNKNOWN_CHECKPOINT. */
export async function pinStopped (store: string, id: number, pinned: boolean): Promise<CheckpointInfo> {
  return await withStoppedStore(store, async g => await g.pin(id, pinned))
}
