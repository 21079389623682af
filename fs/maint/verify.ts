/**
 * `rewindfs verify` (issue 4 item 5), without --repair: reads a store whose
 * daemon is stopped and reports, in plain words, everything in it that
 * contradicts itself. Nothing is written (LevelDB's own open bookkeeping
 * aside); the CLI refuses to run while a daemon holds the store.
 *
 * What is checked:
 * - every checkpoint's inode table and the live table fsync made durable
 *   (`state.live`): each table node and inode record exists; the root
 *   (ino 1) exists; each record sits under its own ino; directory entries
 *   name inodes present in the same table; each link [parent, name] is
 *   matched by the parent's entry; each block id of a file is in the block
 *   index and no longer than the file leaves room for (block k of a file of
 *   size S holds ≤ min(BLOCK_SIZE, S - k·BLOCK_SIZE) bytes);
 * - each checkpoint's context exists, its parent and every branch's base
 *   and head are known checkpoints;
 * - the blocks of frozen lower paths (kind `lower`) exist;
 * - every indexed block re-reads with the right length and hash
 *   (BlockStore.verifyAll);
 * - nothing was lost (fs/maint/losses.ts): every checkpoint id below the
 *   highest the store remembers exists or was removed by gc, the state
 *   record exists when the store holds data; when either fails, the packs
 *   are scanned for the content no checkpoint reaches any more;
 * - the effect ledger (store/effect-chain.ts): every entry's hash, their order
 *   and links, and the head kept outside the file (a changed, removed,
 *   reordered or truncated entry is named).
 *
 * Cost: O(store) reads — every node, record and block once — plus an
 * in-memory walk of each table (O(checkpoints × inodes)); verify is one of
 * the operations allowed to scan.
 */
import fs from 'node:fs'
import path from 'node:path'
import type { BlockId, Ino } from '../../base/types.js'
import { BLOCK_SIZE } from '../../base/types.js'
import { StoreDb, META_DIR } from '../../store/db.js'
import { BlockStore, BLOCK_REPAIR_HINT, BLOCK_LOST_HINT, type BlockRecord } from '../../store/blocks.js'
import { StoreError } from '../../store/errors.js'
import { type InodeRecord, decodeRecord, ROOT_INO } from '../inode.js'
import type { BranchRecord, CheckpointRecord, StoreState } from '../history/generations.js'
import { type FrozenPath, decodeFrozen, encodeFrozen, frozenKey, relOfFrozenKey } from '../lower.js'
import { PACK_HEADER_SIZE } from '../../store/pack.js'
import { verifyLedger, type ChainProblemCode } from '../../store/effect-chain.js'
import { META_GC_REMOVED, asRanges, countRanges, describeLosses, fmtRanges, lastUnmountCheckpoint, missingIds, mib, unreachable, type Losses } from './losses.js'

/** Codes of the problems verify reports. */
export type VerifyProblemCode =
  | 'E_BLOCK_UNREADABLE' | 'E_BLOCK_LENGTH' | 'E_BLOCK_HASH' // the block's bytes (BlockStore.verifyAll)
  | 'E_MISSING_NODE' | 'E_MISSING_RECORD' | 'E_BAD_RECORD' | 'E_NO_ROOT'
  | 'E_MISSING_BLOCK' | 'E_BLOCK_TOO_LONG'
  | 'E_DANGLING_ENTRY' | 'E_UNMATCHED_LINK'
  | 'E_MISSING_CONTEXT' | 'E_UNKNOWN_CHECKPOINT'
  | 'E_PACK_DAMAGED' // a pack is missing, has no pack header or is shorter than its blocks
  | 'E_LOST_CHECKPOINTS' | 'E_NO_STATE' | 'E_UNREACHABLE_BLOCKS' // records lost (fs/maint/losses.ts)
  | ChainProblemCode // the effect ledger's hash chain (store/effect-chain.ts)

/** One problem: what is wrong in plain words, and where (as far as known). */
export interface VerifyProblem {
  code: VerifyProblemCode
  message: string
  /** checkpoint id, or 'live' for the fsync'd live table */
  checkpoint?: number | 'live'
  path?: string
  ino?: Ino
  blockId?: BlockId
  /** seq of the effect ledger entry changed, removed or out of order */
  entry?: number
}

export interface VerifyReport {
  store: string
  /** true when no problem was found */
  ok: boolean
  problems: VerifyProblem[]
  counts: {
    checkpoints: number
    /** inode tables walked: every checkpoint's, plus the live one if fsync left one */
    tables: number
    /** distinct inode records read */
    records: number
    /** frozen lower paths checked */
    frozen: number
    /** blocks in the index, every one re-read and re-hashed */
    blocks: number
    /** bytes of those blocks */
    bytes: number
    /** effect ledger entries read, their hash chain and head checked */
    ledgerEntries: number
  }
  /** what the store lost: checkpoints whose records are gone, the state record, content no checkpoint reaches (fs/maint/losses.ts) */
  losses: Losses
}

/** Choices of verifyOpened. */
export interface VerifyOptions {
  /**
   * intact block records found in the packs (id → bytes), from
   * BlockStore.scanPacks: content no checkpoint reaches is counted against
   * them. Without it the packs are scanned only when records were lost.
   */
  scanned?: Map<BlockId, number>
  /** the report after a repair: damaged blocks get the advice for what repair could not fix, not "run repair" */
  repaired?: boolean
}

/** Why verify could not run at all (no store, store locked by a daemon). */
export class VerifyError extends Error {
  constructor (message: string, readonly code: 'E_NO_STORE' | 'E_LOCKED' | 'E_OPEN') { super(message) }
}

/** Problems kept in full; the rest are counted only (a wrecked store can have millions). */
const MAX_PROBLEMS = 10000

interface PersistedNode { l: number, k: [number, number][] }

/** A table as read from the store: ino → record (with its record id). */
type Table = Map<Ino, { id: number, r: InodeRecord }>

/** Inodes of a table whose node or record is missing (already reported; entries naming them are not reported again). */
interface Lost { inos: Set<Ino>, ranges: Array<[lo: number, hi: number]> }

function isLost (lost: Lost, ino: Ino): boolean {
  return lost.inos.has(ino) || lost.ranges.some(([lo, hi]) => lo <= ino && ino <= hi)
}

/**
 * Verifies the store in `storeDir`. Throws VerifyError when there is no
 * store there or another process (a running daemon) holds it.
 */
export async function verifyStore (storeDir: string): Promise<VerifyReport> {
  const store = path.resolve(storeDir)
  if (!fs.existsSync(path.join(store, META_DIR))) throw new VerifyError(`there is no rewindfs store at ${store} (no ${META_DIR}/ directory)`, 'E_NO_STORE')
  let db: StoreDb
  try {
    db = await StoreDb.open(store)
  } catch (e) {
    if (e instanceof StoreError && e.code === 'E_LOCKED') {
      throw new VerifyError(`the store ${store} is held by a running daemon (or another process); verify reads the store alone: rewindfs unmount, then rewindfs verify`, 'E_LOCKED')
    }
    throw new VerifyError(`cannot open the store ${store}: ${(e as Error).message}`, 'E_OPEN')
  }
  try {
    const blocks = await BlockStore.open(store, db, { checkPacks: false })
    try {
      return await run(store, db, blocks)
    } finally {
      blocks.close()
    }
  } finally {
    await db.close()
  }
}

/** Verifies an opened store (for repair, which verifies before and after). Same checks as verifyStore. */
export async function verifyOpened (store: string, db: StoreDb, blocks: BlockStore, opts: VerifyOptions = {}): Promise<VerifyReport> {
  return await run(store, db, blocks, opts)
}

/** Intact block records of every pack: id → bytes (reads every pack once). */
export async function scanBlockSizes (blocks: BlockStore): Promise<Map<BlockId, number>> {
  const scan = await blocks.scanPacks()
  return new Map([...scan.byId].map(([id, b]) => [id, b.location.length]))
}

async function run (store: string, db: StoreDb, blocks: BlockStore, opts: VerifyOptions = {}): Promise<VerifyReport> {
  const problems: VerifyProblem[] = []
  let dropped = 0
  const report = (p: VerifyProblem): void => { if (problems.length < MAX_PROBLEMS) problems.push(p); else dropped++ }
  const reportProblem = report
  const counts = { checkpoints: 0, tables: 0, records: 0, frozen: 0, blocks: 0, bytes: 0, ledgerEntries: 0 }

  // store-wide caches: every node and record is read once however many tables share it
  const nodes = new Map<number, PersistedNode | null>()
  const records = new Map<number, InodeRecord | null>()
  /** record ids whose own content (blocks) has been checked */
  const contentChecked = new Set<number>()
  /** first user of each block, for naming the file a bad block belongs to */
  const blockUsers = new Map<BlockId, string>()
  /** blocks records use that the index lacks (reported after the walk, with every user) */
  const missingBlocks: VerifyProblem[] = []

  const loadNode = async (id: number): Promise<PersistedNode | null> => {
    if (nodes.has(id)) return nodes.get(id)!
    const v = await db.get<any>('node', id)
    const n = v && typeof v.l === 'number' && Array.isArray(v.k) ? v as PersistedNode : null
    nodes.set(id, n)
    return n
  }
  const loadRecord = async (id: number): Promise<InodeRecord | null> => {
    if (records.has(id)) return records.get(id)!
    const v = await db.get<any>('node', id)
    let r: InodeRecord | null = null
    if (v && typeof v.ino === 'number') {
      try { r = decodeRecord(v) } catch { r = null }
    }
    records.set(id, r)
    if (r) counts.records++
    return r
  }

  const checkpoints = new Map<number, CheckpointRecord>()
  for await (const e of db.iterate<CheckpointRecord>('checkpoint')) checkpoints.set(e.value.id, e.value)
  counts.checkpoints = checkpoints.size
  const state = await db.get<StoreState>('meta', 'state')

  /** Reads the whole table under `rootId`, reporting missing nodes and records. */
  const readTable = async (rootId: number, where: number | 'live', label: string, quiet = false): Promise<{ table: Table, lost: Lost }> => {
    const report = quiet ? () => {} : reportProblem
    const table: Table = new Map()
    const lost: Lost = { inos: new Set(), ranges: [] }
    const missing: Array<{ ino: Ino, id: number, code: 'E_MISSING_RECORD' | 'E_BAD_RECORD' }> = []
    const walk = async (id: number, level: number, prefix: number): Promise<void> => {
      const n = await loadNode(id)
      if (!n || n.l !== level) {
        const lo = (prefix * 2 ** (8 * (4 - level))) >>> 0
        const hi = (lo + 2 ** (8 * (4 - level)) - 1) >>> 0
        lost.ranges.push([lo, hi])
        report({ code: 'E_MISSING_NODE', checkpoint: where, message: `${label}: inode table node ${id} (level ${level}, inodes ${lo}..${hi}) is ${n ? `at level ${n.l}, not ${level}` : 'missing from the store'}; every inode below it is lost from this table` })
        return
      }
      for (const [s, cid] of n.k) {
        const p = ((prefix << 8) | s) >>> 0
        if (level < 3) { await walk(cid, level + 1, p); continue }
        const r = await loadRecord(cid)
        if (!r) { missing.push({ ino: p, id: cid, code: 'E_MISSING_RECORD' }); continue }
        if (r.ino !== p) { missing.push({ ino: p, id: cid, code: 'E_BAD_RECORD' }); continue }
        table.set(p, { id: cid, r })
      }
    }
    if (rootId !== 0) await walk(rootId, 0, 0)
    for (const m of missing) {
      lost.inos.add(m.ino)
      const at = namesOf(table, m.ino)
      const r = records.get(m.id)
      report({
        code: m.code, checkpoint: where, ino: m.ino, ...(at.length ? { path: at[0] } : {}),
        message: m.code === 'E_MISSING_RECORD'
          ? `${label}: inode record ${m.id} (ino ${m.ino}${at.length ? `, ${at.join(', ')}` : ''}) is missing from the store`
          : `${label}: inode record ${m.id} in the slot of ino ${m.ino}${at.length ? ` (${at.join(', ')})` : ''} is the record of ino ${r?.ino}`
      })
    }
    return { table, lost }
  }

  /** Checks one table's references and its records' blocks. */
  const checkTable = ({ table, lost }: { table: Table, lost: Lost }, where: number | 'live', label: string): void => {
    counts.tables++
    const pathOf = (ino: Ino): string => pathIn(table, ino) ?? `(ino ${ino}, no path)`
    if (!table.has(ROOT_INO)) report({ code: 'E_NO_ROOT', checkpoint: where, ino: ROOT_INO, path: '/', message: `${label}: the root directory (ino 1) is not in the inode table` })
    for (const [ino, { id, r }] of table) {
      if (r.entries) {
        for (const [name, child] of r.entries) {
          const c = table.get(child)
          if (!c && !isLost(lost, child)) {
            const p = joinPath(pathOf(ino), name)
            report({ code: 'E_DANGLING_ENTRY', checkpoint: where, ino: child, path: p, message: `${label}: ${p} names ino ${child}, which is not in the inode table` })
          }
        }
      }
      for (const [parent, name] of r.links) {
        const pr = table.get(parent)?.r
        if (pr?.entries === undefined && pr?.lower !== undefined) continue // parent not listed yet: its names are still lower
        if (!pr && isLost(lost, parent)) continue // already reported as missing
        if (pr?.entries?.get(name) !== ino) {
          const why = !pr ? `its parent ino ${parent} is not in the inode table`
            : !pr.entries ? `its parent ${pathOf(parent)} has no entries`
              : pr.entries.has(name) ? `${joinPath(pathOf(parent), name)} names ino ${pr.entries.get(name)!} instead`
                : `its parent ${pathOf(parent)} has no entry ${JSON.stringify(name)}`
          report({ code: 'E_UNMATCHED_LINK', checkpoint: where, ino, path: pr ? joinPath(pathOf(parent), name) : undefined, message: `${label}: ino ${ino} says it is ${JSON.stringify(name)} in ino ${parent}, but ${why}` })
        }
      }
      if (!r.blocks) continue
      const first = !contentChecked.has(id)
      contentChecked.add(id)
      for (const [k, b] of r.blocks.entries()) {
        if (!blockUsers.has(b)) blockUsers.set(b, `${label} ${pathOf(ino)}`)
        if (!first) continue
        const p = pathOf(ino)
        if (!blocks.has(b)) {
          missingBlocks.push({ code: 'E_MISSING_BLOCK', checkpoint: where, ino, path: p, blockId: b, message: `${label}: ${p} (ino ${ino}) block ${k} is block ${b}, which is not in the block index` })
          continue
        }
        const room = Math.min(BLOCK_SIZE, r.size - k * BLOCK_SIZE)
        const len = blocks.length(b)
        if (len > room) {
          report({ code: 'E_BLOCK_TOO_LONG', checkpoint: where, ino, path: p, blockId: b, message: `${label}: ${p} (ino ${ino}, ${r.size} bytes) block ${k} is block ${b} of ${len} bytes, but the file leaves room for ${Math.max(0, room)}` })
        }
      }
    }
  }

  for (const cp of [...checkpoints.values()].sort((a, b) => a.id - b.id)) {
    const label = `checkpoint ${cp.id}`
    checkTable(await readTable(cp.root, cp.id, label), cp.id, label)
    if (cp.context !== null && cp.context !== undefined && await db.get('context', cp.context) === undefined) {
      report({ code: 'E_MISSING_CONTEXT', checkpoint: cp.id, message: `${label}: its context ${cp.context} is missing from the store` })
    }
    if (cp.parent !== null && cp.parent !== undefined && !checkpoints.has(cp.parent)) {
      report({ code: 'E_UNKNOWN_CHECKPOINT', checkpoint: cp.id, message: `${label}: its parent checkpoint ${cp.parent} does not exist` })
    }
  }
  const live = state?.live
  if (live && live.root !== 0) {
    const label = 'live state (made durable by fsync)'
    checkTable(await readTable(live.root, 'live', label), 'live', label)
  }
  if (state && state.head !== null && !checkpoints.has(state.head)) {
    report({ code: 'E_UNKNOWN_CHECKPOINT', checkpoint: state.head, message: `the store's head checkpoint ${state.head} does not exist` })
  }
  const branches: BranchRecord[] = []
  for await (const { value: br } of db.iterate<BranchRecord>('branch')) {
    branches.push(br)
    for (const [what, id] of [['base', br.base], ['head', br.head]] as const) {
      if (id !== null && id !== undefined && !checkpoints.has(id)) {
        report({ code: 'E_UNKNOWN_CHECKPOINT', checkpoint: id, message: `branch ${br.name}: its ${what} checkpoint ${id} does not exist` })
      }
    }
  }

  for await (const { key, value } of db.iterate<FrozenPath[]>('lower')) {
    counts.frozen++
    const p = '/' + relOfFrozenKey(key)
    for (const f of Array.isArray(value) ? decodeFrozen(value) : []) {
      for (const b of f.blocks ?? []) {
        if (b <= 0) continue // a hole, or a run of holes
        if (!blockUsers.has(b)) blockUsers.set(b, `the frozen copy of ${p}`)
        if (!blocks.has(b)) report({ code: 'E_MISSING_BLOCK', path: p, blockId: b, message: `the frozen copy of ${p} (sessions ${f.from}..${f.to}) uses block ${b}, which is not in the block index` })
      }
    }
  }

  const losses = await findLosses(store, db, blocks, { checkpoints, state, branches, used: new Set(blockUsers.keys()), scanned: opts.scanned })
  if (losses.checkpointCount > 0) {
    report({ code: 'E_LOST_CHECKPOINTS', message: `the records of ${losses.checkpointCount} checkpoint${losses.checkpointCount === 1 ? '' : 's'} (${fmtRanges(losses.checkpoints)}) are missing: the store made checkpoints up to #${losses.highest} and garbage collection removed none of these; they cannot be restored` })
  }
  if (losses.stateMissing) {
    report({ code: 'E_NO_STATE', message: 'the store\'s state record (head, current branch, counters) is missing while the store holds data: a mount would start over at checkpoint #1 as if the store were new' })
  }
  if ((losses.checkpointCount > 0 || losses.stateMissing) && (losses.unreachableBytes ?? 0) > 0) {
    report({ code: 'E_UNREACHABLE_BLOCKS', message: `the packs hold ${losses.unreachableBlocks} blocks (${mib(losses.unreachableBytes!)} MiB) that no checkpoint reaches: content of the lost records. rewindfs gc would delete them; copy the store directory first if you want to keep them` })
  }

  for await (const { value } of db.iterate<BlockRecord>('block')) {
    counts.blocks++
    counts.bytes += value.length
  }
  for (const pp of blocks.packProblems()) report({ code: 'E_PACK_DAMAGED', message: pp })
  const badBlocks: VerifyProblem[] = [...missingBlocks]
  for await (const bp of blocks.verifyAll()) badBlocks.push({ code: bp.code, blockId: bp.blockId, message: bp.message })
  if (badBlocks.length > 0) {
    // every checkpoint that uses a bad block (the walk above named only the
    // first, as shared records are checked once): the tables again, from
    // the records already read
    const users = new Map<BlockId, string[]>(badBlocks.map(b => [b.blockId!, []]))
    for (const cp of [...checkpoints.values()].sort((a, b) => a.id - b.id)) {
      const { table } = await readTable(cp.root, cp.id, `checkpoint ${cp.id}`, true)
      for (const [ino, { r }] of table) {
        for (const b of r.blocks ?? []) {
          const u = users.get(b)
          const where = `checkpoint ${cp.id} ${pathIn(table, ino) ?? `(ino ${ino})`}`
          if (u && u[u.length - 1] !== where) u.push(where)
        }
      }
    }
    for (const bp of badBlocks) {
      const u = users.get(bp.blockId!) ?? []
      const first = blockUsers.get(bp.blockId!)
      if (u.length === 0 && first) u.push(first)
      const named = u.length === 0 ? '' : `; used by ${u.slice(0, 5).join(', ')}${u.length > 5 ? ` and ${u.length - 5} more` : ''}`
      const next = bp.code === 'E_MISSING_BLOCK' ? '' : `. ${opts.repaired === true ? BLOCK_LOST_HINT : BLOCK_REPAIR_HINT}`
      report({ ...bp, message: bp.message + named + next })
    }
  }

  const ledger = verifyLedger(store)
  counts.ledgerEntries = ledger.entries
  for (const lp of ledger.problems) report({ code: lp.code, message: lp.message, ...(lp.seq !== undefined ? { entry: lp.seq } : {}) })

  if (dropped > 0) problems.push({ code: problems[problems.length - 1]!.code, message: `... and ${dropped} more problems (only the first ${MAX_PROBLEMS} are listed)` })
  return { store, ok: problems.length === 0, problems, counts, losses }
}

/** The losses of an opened store (fs/maint/losses.ts); scans the packs only when records were lost and `scanned` is not given. */
async function findLosses (store: string, db: StoreDb, blocks: BlockStore, o: {
  checkpoints: Map<number, CheckpointRecord>, state: StoreState | undefined, branches: BranchRecord[], used: Set<BlockId>, scanned?: Map<BlockId, number>
}): Promise<Losses> {
  const ids: number[] = [lastUnmountCheckpoint(store) ?? 0]
  if (o.state) ids.push(o.state.nextCheckpoint - 1, o.state.head ?? 0)
  for (const cp of o.checkpoints.values()) ids.push(cp.id, cp.parent ?? 0)
  for (const br of o.branches) ids.push(br.base ?? 0, br.head ?? 0)
  const highest = Math.max(0, ...ids.filter(i => Number.isSafeInteger(i)))
  const removed = asRanges(await db.get('meta', META_GC_REMOVED))
  const lost = missingIds(highest, o.checkpoints.keys(), removed)
  let holdsData = o.checkpoints.size > 0
  for await (const _ of db.keys('block')) { holdsData = true; break }
  for (const size of blocks.packFiles.listPacks().values()) if (size > PACK_HEADER_SIZE) holdsData = true
  const stateMissing = o.state === undefined && holdsData
  let scanned = o.scanned
  if (!scanned && (lost.length > 0 || stateMissing)) scanned = await scanBlockSizes(blocks)
  const u = scanned ? unreachable(scanned, o.used) : null
  return { highest, checkpoints: lost, checkpointCount: countRanges(lost), stateMissing, unreachableBlocks: u?.blocks ?? null, unreachableBytes: u?.bytes ?? null }
}

/** The plain-words summary of a report's losses (repair and verify print it), or null when nothing was lost. */
export function lossSummary (r: VerifyReport, afterRepair: boolean): string | null {
  return describeLosses(r.losses, afterRepair)
}

function joinPath (dir: string, name: string): string {
  return dir === '/' ? `/${name}` : `${dir}/${name}`
}

/** Path of `ino` in `table` through its first link, or null when a link is broken or loops. */
function pathIn (table: Table, ino: Ino): string | null {
  const parts: string[] = []
  let cur = ino
  for (let guard = 0; guard < 4096; guard++) {
    if (cur === ROOT_INO) return '/' + parts.reverse().join('/')
    const r = table.get(cur)?.r
    const l = r?.links[0]
    if (!l) return null
    parts.push(l[1])
    cur = l[0]
  }
  return null
}

/** Paths at which the directories of `table` name `ino` (for a record that is missing). */
function namesOf (table: Table, ino: Ino): string[] {
  const out: string[] = []
  for (const [dino, { r }] of table) {
    if (!r.entries) continue
    for (const [name, child] of r.entries) {
      if (child === ino) out.push(joinPath(pathIn(table, dino) ?? `(ino ${dino})`, name))
    }
  }
  return out
}
