/**
 * The daemon's state OPENING (lifecycle.ts), before anything is mounted:
 * the checks on the workspace directory and its mount point, and opening
 * the store (metadata database, blocks, history, the effect ledger).
 * Every failure here leaves the directory and the store as they were.
 */
import fs from 'node:fs'
import path from 'node:path'
import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import { Ledger } from '../effects/ledger.js'
import { writeDefaultPatterns } from '../effects/patterns.js'
import { StoreDb } from '../store/db.js'
import { BlockStore } from '../store/blocks.js'
import { DEFAULT_RESERVE } from '../store/space.js'
import { Generations } from '../fs/history/generations.js'
import { mountState } from './mounts.js'

const run = promisify(execFile)

/**
 * Checks that `dir` can be mounted over with its store at `store`: clears
 * a dead mount a daemon that died left there (stat of it fails with
 * ENOTCONN until then), and throws an Error that says what to do when
 * `dir` is mounted already, is missing or not a directory, or holds the
 * store. Creates `store` (mode 0700) when absent.
 */
export async function checkMountPoint (dir: string, store: string, log: (m: string) => void): Promise<void> {
  const ms = mountState(dir)
  if (ms === 'mounted') throw new Error(`${dir} is already a mount point (mount point busy): unmount it first (rewindfs unmount ${dir}, or fusermount -u ${dir})`)
  if (ms === 'stale') {
    log(`rewindfs: clearing a stale mount left on ${dir} by a daemon that died`)
    await run('fusermount', ['-uz', dir]).catch(async () => await run('umount', ['-l', dir]))
  }
  const st = fs.statSync(dir, { throwIfNoEntry: false })
  if (!st) throw new Error(`${dir} does not exist: create it first (mkdir -p ${dir})`)
  if (!st.isDirectory()) throw new Error(`${dir} is not a directory: rewindfs mounts a directory`)
  if (path.resolve(store).startsWith(path.resolve(dir) + path.sep)) throw new Error(`the store ${store} must not be inside the workspace ${dir}`)
  fs.mkdirSync(store, { recursive: true, mode: 0o700 })
}

/** An open store: what the daemon closes, in reverse order, when it stops. */
export interface OpenStore {
  db: StoreDb
  blocks: BlockStore
  gens: Generations
  ledger: Ledger
}

/**
 * Opens the store at `store`: its database (throws when another process
 * holds it, or it is damaged), its blocks with `reserve` bytes kept free
 * (a store's filesystem already below the reserve is logged: every write
 * will get ENOSPC), its history and its effect ledger.
 */
export async function openStore (store: string, reserve: number | undefined, log: (m: string) => void): Promise<OpenStore> {
  const db = await StoreDb.open(store)
  let blocks: BlockStore
  try {
    blocks = await BlockStore.open(store, db, { reserve })
  } catch (e) {
    await db.close().catch(() => {})
    throw e
  }
  const above = blocks.spaceAboveReserve()
  if (above < 0) {
    const r = reserve ?? DEFAULT_RESERVE
    log(`rewindfs: warning: the store's filesystem (${store}) has ${Math.max(0, Math.floor((above + r) / 1048576))} MiB free, less than the ${Math.floor(r / 1048576)} MiB rewindfs keeps free for checkpoints: every write will fail with ENOSPC until space is freed there (or mount with a smaller --reserve, or put the store elsewhere with --store)`)
  }
  const gens = await Generations.open(db, blocks)
  const ledger = await openLedger(store, gens, log)
  return { db, blocks, gens, ledger }
}

/**
 * The store's effect ledger for a daemon: occurrences left intent or pending
 * by the previous daemon become unknown (fail closed), the actor of a begin
 * is the current head, generation and branch; the external-command pattern
 * file is written with the defaults when absent. A damaged ledger is
 * logged: every begin is then refused until it is fixed.
 */
async function openLedger (store: string, gens: Generations, log: (line: string) => void): Promise<Ledger> {
  const ledger = await Ledger.open(store, { recoverOpen: true, actor: () => ({ checkpoint: gens.state.head, generation: gens.state.generation, branch: gens.state.branch }) })
  if (ledger.damaged.length > 0) log(`rewindfs: warning: ${ledger.damaged[0].message}; every external effect will be refused (E_LEDGER_CORRUPT) until the ledger is fixed: rewindfs verify lists the problems`)
  try { writeDefaultPatterns(store) } catch (e: any) { log(`rewindfs: warning: could not write the external-command patterns (${e.message}); the defaults apply`) }
  return ledger
}
