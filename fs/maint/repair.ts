/**
 * `rewindfs verify --repair`: rebuilds what can be rebuilt, then verifies
 * again and says what could not be rebuilt.
 *
 * What it rebuilds:
 * - a LevelDB that cannot be opened (corrupt log, table or manifest): with
 *   LevelDB's own repair (ClassicLevel.repair), which keeps every record it
 *   can still read;
 * - block index records that are malformed (deleted, then treated as
 *   missing);
 * - the block index from the packs: every block verify finds unreadable,
 *   of the wrong length, failing its hash, or missing from the index while a
 *   record uses it, is looked up among the valid records of all packs (each
 *   record carries its BlockId and hash, FORMAT.md "Packs"): the newest
 *   record with its id whose bytes match the hash the index expects, else
 *   any record with those bytes' hash; `meta.nextBlockId` is raised above
 *   every id found in the packs.
 * - a pack header that was overwritten (the records after it are checked
 *   like any others).
 * What it cannot rebuild, and says so: a block whose bytes are in no pack
 * (with the files and checkpoints that use it), inode table nodes and
 * records, contexts, checkpoint records (they live only in LevelDB). A lost
 * block whose bytes are gone (missing or truncated pack) has its index
 * record removed, so the store mounts again: reading the files that use it
 * fails with EIO, everything else works. A block whose bytes are there but
 * fail their hash keeps its record (it still fails every read).
 * Nothing else that was readable is deleted.
 *
 * Before anything is changed, the metadata directory is copied to
 * `meta.before-repair-<time>` beside it (kept when the repair changed
 * something, and named in the report; removed when nothing was repaired),
 * so a repair never loses records that were there: LevelDB's repair moves
 * files it cannot use into meta/lost/. And it does not start on a disk
 * without room for that copy, LevelDB's rewritten tables and the reserve:
 * on a full disk LevelDB's repair itself fails half way.
 *
 * Lost history is reported, never passed off as clean (fs/maint/losses.ts):
 * checkpoints whose records LevelDB's repair could not bring back (ids
 * below the highest the store remembers, not removed by gc), a lost state
 * record, and the content the packs still hold that no checkpoint reaches
 * (count and bytes), with the warning that `rewindfs gc` would delete it.
 * Those are problems of the report after the repair, so the CLI exits 1.
 * `meta.nextBlockId` is always raised above every id in the packs, so new
 * blocks never reuse the id of one the packs hold.
 */
import path from 'node:path'
import fs from 'node:fs'
import { ClassicLevel } from 'classic-level'
import { StoreDb, META_DIR, parseIntKey } from '../../store/db.js'
import { BlockStore, META_NEXT_BLOCK_ID, type BlockRecord, type ScannedBlock } from '../../store/blocks.js'
import { StoreError, isNoSpace } from '../../store/errors.js'
import { DEFAULT_RESERVE, freeBytes } from '../../store/space.js'
import { saysNoSpace } from '../../store/diskfull.js'
import { BLOCK_SIZE, type BlockId } from '../../base/types.js'
import { verifyOpened, type VerifyReport } from './verify.js'
import { PACK_HEADER_SIZE, PACK_MAGIC } from '../../store/pack.js'

export interface RepairReport {
  store: string
  /** what was rebuilt, in plain words */
  actions: string[]
  /** verify before the repair; null when the store could not be opened before LevelDB's repair */
  before: VerifyReport | null
  /** verify after the repair: what could not be rebuilt */
  after: VerifyReport
}

/** Why repair could not run (no store, held by a daemon, LevelDB beyond repair). */
export class RepairError extends Error {
  constructor (message: string, readonly code: 'E_NO_STORE' | 'E_LOCKED' | 'E_OPEN' | 'E_NO_SPACE') { super(message) }
}

type PackScan = Awaited<ReturnType<BlockStore['scanPacks']>>

const BLOCK_PROBLEMS = new Set(['E_BLOCK_UNREADABLE', 'E_BLOCK_LENGTH', 'E_BLOCK_HASH', 'E_MISSING_BLOCK'])

/** Options of repairStore. */
export interface RepairOptions {
  /** bytes to keep free on the store's filesystem besides what the repair needs (default DEFAULT_RESERVE, 64 MiB) */
  reserve?: number
  /** the time in the backup's name (tests); default now */
  now?: Date
}

/**
 * Free bytes the repair of a store needs: the backup copy of meta/ and
 * LevelDB's rewritten tables (each up to the size of meta/), plus `reserve`.
 */
export function repairNeeds (metaBytes: number, reserve: number): number {
  return 2 * metaBytes + reserve
}

/**
 * Repairs the stopped store in `storeDir` (see the module comment).
 * Throws RepairError when it cannot start: no store (E_NO_STORE), held by a
 * daemon (E_LOCKED), too little free space on its filesystem (E_NO_SPACE,
 * says how much is needed), LevelDB beyond repair (E_OPEN). Any error after
 * the backup was made names the backup.
 */
export async function repairStore (storeDir: string, opts: RepairOptions = {}): Promise<RepairReport> {
  const store = path.resolve(storeDir)
  const location = path.join(store, META_DIR)
  if (!fs.existsSync(location)) throw new RepairError(`there is no rewindfs store at ${store} (no ${META_DIR}/ directory)`, 'E_NO_STORE')
  const metaBytes = treeBytes(location)
  const needs = repairNeeds(metaBytes, opts.reserve ?? DEFAULT_RESERVE)
  const free = freeBytes(store)
  if (free !== null && free < needs) {
    throw new RepairError(`the store's filesystem (${store}) has ${free} bytes free; a repair needs at least ${needs} (a backup copy of ${META_DIR}/, ${metaBytes} bytes, room for LevelDB to rewrite it, and the ${opts.reserve ?? DEFAULT_RESERVE}-byte reserve): ` +
      'free space there first, then run rewindfs verify --repair again. Nothing was changed; a store that could not be opened for lack of space is probably not damaged at all: try mounting it once space is freed', 'E_NO_SPACE')
  }
  const backup = backupMeta(location, opts.now ?? new Date())
  let report: RepairReport
  try {
    report = await repairWith(store, location)
  } catch (e) {
    if (e instanceof RepairError && e.code === 'E_LOCKED') { fs.rmSync(backup, { recursive: true, force: true }); throw e }
    const msg = `${(e as Error).message}; the metadata database as it was before the repair is kept in ${backup}`
    if (e instanceof RepairError) throw new RepairError(msg, e.code)
    if (isNoSpace(e) || saysNoSpace((e as Error)?.message ?? '')) throw new RepairError(msg, 'E_NO_SPACE')
    throw new RepairError(`the repair stopped: ${msg}`, 'E_OPEN')
  }
  if (report.actions.length === 0) fs.rmSync(backup, { recursive: true, force: true })
  else report.actions.push(`the metadata database as it was before the repair is kept in ${backup} (nothing it held is lost; delete it once the repaired store mounts and verifies clean)`)
  return report
}

/** Copies the metadata directory to `meta.before-repair-<time>` beside it; returns its path. */
function backupMeta (location: string, now: Date): string {
  const stamp = now.toISOString().replace(/[-:]/g, '').replace(/\.\d+Z$/, 'Z')
  let backup = `${location}.before-repair-${stamp}`
  for (let i = 2; fs.existsSync(backup); i++) backup = `${location}.before-repair-${stamp}-${i}`
  try {
    fs.cpSync(location, backup, { recursive: true, filter: src => path.basename(src) !== 'LOCK' })
  } catch (e) {
    fs.rmSync(backup, { recursive: true, force: true })
    throw new RepairError(`cannot copy the metadata database ${location} to ${backup} before repairing it (${(e as Error).message}); nothing was changed`, isNoSpace(e) ? 'E_NO_SPACE' : 'E_OPEN')
  }
  return backup
}

/** Bytes of the files under `dir`. */
function treeBytes (dir: string): number {
  let n = 0
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name)
    if (e.isDirectory()) n += treeBytes(p)
    else { try { n += fs.statSync(p).size } catch {} }
  }
  return n
}

async function repairWith (store: string, location: string): Promise<RepairReport> {
  const actions: string[] = []
  let db: StoreDb
  let opened = true
  try {
    db = await StoreDb.open(store)
  } catch (e) {
    if (e instanceof StoreError && e.code === 'E_LOCKED') throw new RepairError(`the store ${store} is held by a running daemon: rewindfs unmount first, then rewindfs verify --repair`, 'E_LOCKED')
    if (e instanceof StoreError && e.code === 'E_FORMAT') throw new RepairError(e.message, 'E_OPEN')
    if (isNoSpace(e)) throw new RepairError(`${(e as Error).message.split(';')[0]}; nothing was repaired: free space there, then try to mount it again`, 'E_NO_SPACE')
    opened = false
    await ClassicLevel.repair(location)
    actions.push(`the metadata database could not be opened (${(e as Error).message.split(';')[0]}); LevelDB's repair rebuilt it from the records it could still read`)
    try { db = await StoreDb.open(store) } catch (e2) {
      throw new RepairError(`the metadata database ${location} cannot be opened even after LevelDB's repair (${(e2 as Error).message}); restore the store directory from a backup`, 'E_OPEN')
    }
  }
  try {
    await dropMalformedBlockRecords(db, actions)
    let blocks = await BlockStore.open(store, db, { checkPacks: false })
    try { rewriteHeaders(blocks, actions) } catch (e) { blocks.close(); throw e }
    let before: VerifyReport | null
    let scanned: Map<BlockId, number>
    try {
      const scan = await blocks.scanPacks()
      for (const u of scan.unreadable) actions.push(`skipped a pack that cannot be scanned: ${u}`)
      scanned = new Map([...scan.byId].map(([id, b]) => [id, b.location.length]))
      before = await verifyOpened(store, db, blocks, { scanned })
      const ids = new Set<BlockId>()
      for (const p of before.problems) if (BLOCK_PROBLEMS.has(p.code) && p.blockId !== undefined) ids.add(p.blockId)
      if (ids.size > 0) await rebuildBlocks(db, blocks, scan, ids, actions)
      await raiseNextBlockId(db, scan, actions)
    } finally {
      blocks.close()
    }
    blocks = await BlockStore.open(store, db, { checkPacks: false })
    try {
      const after = await verifyOpened(store, db, blocks, { scanned, repaired: true })
      return { store, actions, before: opened ? before : null, after }
    } finally {
      blocks.close()
    }
  } finally {
    await db.close()
  }
}

/** Deletes `block` records that do not decode or are not {pack, offset, length, hash}; their ids then count as missing. */
async function dropMalformedBlockRecords (db: StoreDb, actions: string[]): Promise<void> {
  const bad: string[] = []
  for await (const key of db.keys('block')) {
    let ok = false
    try {
      const id = parseIntKey(key)
      const v = await db.get<BlockRecord>('block', key)
      ok = id >= 1 && typeof v === 'object' && v !== null && Number.isSafeInteger(v.pack) && v.pack >= 1 &&
        Number.isSafeInteger(v.offset) && v.offset >= 0 && Number.isSafeInteger(v.length) && v.length >= 1 &&
        v.length <= BLOCK_SIZE && typeof v.hash === 'string' && /^[0-9a-f]{16}$/.test(v.hash)
    } catch {}
    if (!ok) bad.push(key)
  }
  if (bad.length === 0) return
  const batch = db.batch()
  for (const k of bad) batch.del('block', k)
  await batch.write({ sync: true })
  actions.push(`deleted ${bad.length} malformed block index record${bad.length === 1 ? '' : 's'} (${bad.slice(0, 5).join(', ')}${bad.length > 5 ? ', ...' : ''}); their blocks are looked for in the packs`)
}

/** Writes the pack header again over a pack whose header was overwritten (its records are verified afterwards). */
function rewriteHeaders (blocks: BlockStore, actions: string[]): void {
  const packs = blocks.packFiles
  for (const [pack, size] of packs.listPacks()) {
    if (size < PACK_HEADER_SIZE) continue
    const file = packs.packPath(pack)
    const fd = fs.openSync(file, 'r+')
    try {
      const head = Buffer.alloc(PACK_HEADER_SIZE)
      fs.readSync(fd, head, 0, PACK_HEADER_SIZE, 0)
      if (head.subarray(0, PACK_MAGIC.length).equals(PACK_MAGIC)) continue
      const fresh = Buffer.alloc(PACK_HEADER_SIZE)
      PACK_MAGIC.copy(fresh, 0)
      fs.writeSync(fd, fresh, 0, PACK_HEADER_SIZE, 0)
      fs.fsyncSync(fd)
      actions.push(`pack ${file} had no ${PACK_MAGIC.toString('ascii')} header; it was written again (its blocks are checked by their hashes)`)
    } finally { fs.closeSync(fd) }
  }
}

/**
 * Points the index of `ids` at valid copies found in the packs; raises
 * nextBlockId above every id in the packs; removes the index records of
 * blocks whose bytes are gone with no copy (so the store mounts).
 */
async function rebuildBlocks (db: StoreDb, blocks: BlockStore, scan: PackScan, ids: Set<BlockId>, actions: string[]): Promise<void> {
  const batch = db.batch()
  const gone: BlockId[] = []
  let fixed = 0
  for (const id of [...ids].sort((a, b) => a - b)) {
    const want = blocks.indexHash(id)
    let found: ScannedBlock | undefined = scan.byId.get(id)
    if (found && want !== undefined && found.hash !== want) found = undefined
    if (!found && want !== undefined) found = scan.byHash.get(want)
    if (!found) {
      if (blocks.has(id) && !readable(blocks, id)) {
        batch.del('block', id)
        gone.push(id)
      }
      continue
    }
    const rec: BlockRecord = { pack: found.location.pack, offset: found.location.offset, length: found.location.length, hash: found.hash }
    batch.put('block', id, rec)
    fixed++
    const was = blocks.has(id) ? `was at pack ${blocks.location(id).pack} offset ${blocks.location(id).offset} and could not be read back intact` : 'was missing from the index'
    actions.push(`block ${id} ${was}; now points at ${found.id === id ? 'its' : `an identical block's (id ${found.id})`} record in pack ${rec.pack} at offset ${rec.offset}`)
  }
  if (batch.length > 0) await batch.write({ sync: true })
  if (fixed < ids.size) actions.push(`${ids.size - fixed} of ${ids.size} damaged or missing blocks have no intact copy in any pack (${scan.records} records scanned): see the problems below`)
  if (gone.length > 0) {
    actions.push(`the index records of ${gone.length} block${gone.length === 1 ? '' : 's'} whose bytes are gone (${gone.slice(0, 10).join(', ')}${gone.length > 10 ? ', ...' : ''}) were removed, so the store mounts again: ` +
      'reading the files below that use them fails with EIO; restore a checkpoint without them, or delete those files')
  }
}

/**
 * Raises `meta.nextBlockId` above every id found in the packs, so that new
 * blocks never take the id of a block the packs hold (whether the index
 * still knows it or lost it).
 */
async function raiseNextBlockId (db: StoreDb, scan: PackScan, actions: string[]): Promise<void> {
  let maxId = 0
  for (const id of scan.byId.keys()) maxId = Math.max(maxId, id)
  const next = await db.get<number>('meta', META_NEXT_BLOCK_ID) ?? 1
  if (maxId + 1 <= next) return
  await db.batch().put('meta', META_NEXT_BLOCK_ID, maxId + 1).write({ sync: true })
  actions.push(`nextBlockId raised from ${next} to ${maxId + 1} (ids found in the packs)`)
}

/** True when the bytes of block `id` can be read (its pack is there and long enough), whatever their hash. */
function readable (blocks: BlockStore, id: BlockId): boolean {
  try {
    const loc = blocks.location(id)
    return blocks.packFiles.checkPack(loc.pack, loc.offset + loc.length) === undefined
  } catch { return false }
}
