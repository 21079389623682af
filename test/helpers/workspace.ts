/**
 * Test builder: a Workspace and its Generations over a real store and lower
 * directory, without FUSE, driven through the workspace's POSIX calls.
 */
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { StoreDb } from '../../store/db.js'
import { BlockStore } from '../../store/blocks.js'
import { Generations } from '../../fs/history/generations.js'
import { Workspace } from '../../fs/workspace.js'
import { type FrozenPath, LowerLayer, rootOfLower, decodeFrozen, relOfFrozenKey } from '../../fs/lower.js'
import { applyChanges, emptyTable, loadAll } from '../../fs/itable.js'
import { ROOT_INO } from '../../fs/inode.js'

/** The caller of every call: root. */
export const me = { uid: 0, gid: 0 }

/**
 * A temporary directory for one test (removed in its teardown) with an empty
 * lower directory `root/lower` in it; `prefix` names it in os.tmpdir().
 */
export function tempRoot (t: { teardown: (fn: () => void) => void }, prefix: string): { root: string, lowerDir: string } {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), prefix))
  t.teardown(() => fs.rmSync(root, { recursive: true, force: true }))
  const lowerDir = path.join(root, 'lower')
  fs.mkdirSync(lowerDir)
  return { root, lowerDir }
}

/** Opens (creating) the store in `root/store` with `lowerDir` as the lower layer; the live workspace resumes the head checkpoint. */
export async function open (root: string, lowerDir: string): Promise<{ ws: Workspace, gens: Generations, close: () => Promise<void>, db: StoreDb, blocks: BlockStore, store: string }> {
  const store = path.join(root, 'store')
  const db = await StoreDb.open(store)
  const blocks = await BlockStore.open(store, db)
  const gens = await Generations.open(db, blocks)
  // the frozen copies of lower paths earlier sessions left (as the daemon loads them)
  const frozen = new Map<string, FrozenPath[]>()
  for await (const e of db.iterate<FrozenPath[]>('lower')) frozen.set(relOfFrozenKey(e.key), decodeFrozen(e.value))
  const lower = new LowerLayer(lowerDir, gens.state.session, frozen)
  let ws: Workspace
  if (gens.state.head !== null) {
    const table = await gens.tableOf(gens.state.head)
    await loadAll(gens, table, gens.nodes, gens.records)
    ws = new Workspace({ blocks, lower, base: table, nextIno: gens.state.nextIno })
  } else {
    // the daemon's own fresh root (fs/lower.ts rootOfLower)
    ws = new Workspace({ blocks, lower, base: applyChanges(emptyTable(), new Map([[ROOT_INO, rootOfLower(lower)]])), nextIno: gens.state.nextIno })
    gens.inodes = 1
  }
  return { ws, gens, db, blocks, store, close: async () => { ws.close(); blocks.close(); await db.close() } }
}

/** Writes `data` at `pos` of workspace path `p`, creating the file. */
export function write (ws: Workspace, p: string, data: string | Buffer, pos = 0): void {
  let fh: number
  try { fh = ws.open(p, fs.constants.O_RDWR) } catch { fh = ws.create(p, 0o644, fs.constants.O_RDWR, me) }
  const b = Buffer.from(data)
  ws.write(fh, b, b.length, pos)
  ws.release(fh)
}

/** The content of workspace path `p` as a string. */
export function read (ws: Workspace, p: string): string {
  const fh = ws.open(p, fs.constants.O_RDONLY)
  const st = ws.fgetattr(fh)
  const b = Buffer.alloc(st.size)
  ws.read(fh, b, st.size, 0)
  ws.release(fh)
  return b.toString()
}

