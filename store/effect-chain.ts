/**
 * The effect ledger's file and its hash chain (store format 4,
 * store/FORMAT.md "Effect ledger"). The ledger is one append-only
 * text file in the store, outside the workspace:
 *
 *     <store>/effects/ledger.jsonl   one entry per line: a JSON object ending in "\n"
 *     <store>/effects/head.json      {"seq": <last entry's seq>, "hash": "<its hash>"}: the chain's head, kept a second time
 *
 * Every entry has `seq` (1, 2, 3, ... in file order), `time` (ms since the
 * epoch), `kind`, `prev` (the previous entry's hash; 64 zeros for the first)
 * and `hash`: the SHA-256 (hex) of the entry without `hash`, canonicalised as
 * RFC 8785 (JSON Canonicalization Scheme, npm `canonicalize`), integers
 * beyond 2^53 written exactly (proto/canonical.ts). So an entry
 * changed in place fails its hash, a removed or reordered entry breaks the
 * seq and prev links, and a truncated tail leaves the head file naming an
 * entry the file no longer has. The head is written after the file, so
 * after a kill the file may hold entries past the head (the daemon moves
 * the head forward at its next start); never the other way round.
 *
 * Limit: the chain detects accidental damage and edits that do not rewrite
 * the rest of the chain and the head; it is not a signature.
 */
import { createHash } from 'node:crypto'
import fs from 'node:fs'
import path from 'node:path'
import { canonicalJson } from '../proto/canonical.js'
import { parseMessage, stringifyMessage } from '../proto/json.js'

/** Directory of the ledger inside a store. */
export const LEDGER_DIR = 'effects'
/** The ledger file, relative to the store. */
export const LEDGER_FILE = path.join(LEDGER_DIR, 'ledger.jsonl')
/** The head file, relative to the store. */
export const LEDGER_HEAD_FILE = path.join(LEDGER_DIR, 'head.json')
/** `prev` of the first entry. */
export const GENESIS_PREV = '0'.repeat(64)

/** One ledger entry as stored: the chain fields plus the kind's own fields (effects/ledger.ts). */
export interface LedgerEntry {
  seq: number
  time: number
  kind: string
  prev: string
  hash: string
  [field: string]: unknown
}

/** The head: the last entry's seq and hash. */
export interface LedgerHead { seq: number, hash: string }

/** Problem codes of the chain check, as `rewindfs verify` reports them. */
export type ChainProblemCode = 'E_LEDGER_CHANGED' | 'E_LEDGER_REMOVED' | 'E_LEDGER_REORDERED' | 'E_LEDGER_TRUNCATED' | 'E_LEDGER_MISSING'

/** One problem of the chain, naming the entry (seq) and the line of the file where known. */
export interface ChainProblem { code: ChainProblemCode, message: string, seq?: number, line?: number }

/** SHA-256 hex of an entry without its `hash` field, canonicalised by RFC 8785 with exact 64-bit integers (proto/canonical.ts). Throws for a field that is no JSON value. */
export function entryHash (e: Record<string, unknown>): string {
  const { hash: _hash, ...rest } = e
  const text = canonicalJson(rest)
  return createHash('sha256').update(text).digest('hex')
}

/** Make the entry that follows `head` (null: the first) from a kind's fields. */
export function sealEntry (fields: { kind: string, [k: string]: unknown }, head: LedgerHead | null, time = Date.now()): LedgerEntry {
  const body: Record<string, unknown> = { ...fields, seq: (head?.seq ?? 0) + 1, time, prev: head?.hash ?? GENESIS_PREV }
  delete body.hash
  const e = { ...body, hash: '' } as LedgerEntry
  e.hash = entryHash(e)
  return e
}

/** One entry as a line of the file: JSON, integers beyond 2^53 with all their digits (proto/json.ts). */
export function entryLine (e: LedgerEntry): string {
  return stringifyMessage(e) + '\n'
}

/** Parse one line of the file (integers beyond 2^53 exact, as bigint); throws SyntaxError when it is not JSON. */
export function parseLine (line: string): unknown {
  return parseMessage(line)
}

function isEntryShape (x: unknown): x is LedgerEntry {
  if (typeof x !== 'object' || x === null || Array.isArray(x)) return false
  const e = x as Record<string, unknown>
  return Number.isSafeInteger(e.seq) && (e.seq as number) >= 1 && typeof e.time === 'number' && typeof e.kind === 'string' &&
    typeof e.prev === 'string' && typeof e.hash === 'string'
}

/** What parseLedger found. */
export interface ParsedLedger {
  /** the entries that parse, in file order (a line that does not parse is a problem and is left out) */
  entries: LedgerEntry[]
  /** line number (1-based) of each entry */
  lines: number[]
  problems: ChainProblem[]
  /** bytes of an unterminated last line (a write a kill cut short, never acknowledged); 0 when none */
  torn: number
}

/** Inclusive ranges as text: "#3", "#3..#5". */
function fmtSeqs (seqs: number[]): string {
  const out: string[] = []
  for (let i = 0; i < seqs.length;) {
    let j = i
    while (j + 1 < seqs.length && seqs[j + 1] === seqs[j] + 1) j++
    out.push(i === j ? `#${seqs[i]}` : `#${seqs[i]}..#${seqs[j]}`)
    i = j + 1
  }
  return out.join(', ')
}

/**
 * Parse the ledger file's text and check its chain: each entry's hash, seq
 * order and prev link. Problems name the entry and the line:
 * E_LEDGER_CHANGED (content does not match its hash, a line that is no
 * entry, an entry replaced by another), E_LEDGER_REMOVED (seqs missing),
 * E_LEDGER_REORDERED (every seq present, but not in order). An unterminated
 * last line is `torn`, not a problem. Cost: O(file).
 */
export function parseLedger (text: string): ParsedLedger {
  const problems: ChainProblem[] = []
  const entries: LedgerEntry[] = []
  const lines: number[] = []
  let torn = 0
  let body = text
  if (body.length > 0 && !body.endsWith('\n')) {
    const cut = body.lastIndexOf('\n') + 1
    torn = Buffer.byteLength(body.slice(cut))
    body = body.slice(0, cut)
  }
  const raw = body.length === 0 ? [] : body.slice(0, -1).split('\n')
  raw.forEach((l, i) => {
    let x: unknown
    try { x = parseLine(l) } catch { x = undefined }
    if (!isEntryShape(x)) { problems.push({ code: 'E_LEDGER_CHANGED', message: `line ${i + 1} of the ledger is not a ledger entry (it was changed or overwritten)`, line: i + 1 }); return }
    if (entryHash(x) !== x.hash) problems.push({ code: 'E_LEDGER_CHANGED', message: `entry #${x.seq} (line ${i + 1}, ${x.kind}) was changed: its content does not match its hash`, seq: x.seq, line: i + 1 })
    entries.push(x)
    lines.push(i + 1)
  })
  const seqs = entries.map(e => e.seq)
  const present = new Set(seqs)
  const max = seqs.length === 0 ? 0 : Math.max(...seqs)
  const missing: number[] = []
  for (let s = 1; s <= max; s++) if (!present.has(s)) missing.push(s)
  if (missing.length > 0) problems.push({ code: 'E_LEDGER_REMOVED', message: `entr${missing.length === 1 ? 'y' : 'ies'} ${fmtSeqs(missing)} ${missing.length === 1 ? 'was' : 'were'} removed from the ledger`, seq: missing[0] })
  const dup = new Set<number>()
  for (let i = 0; i < entries.length; i++) {
    const e = entries[i]
    const before = entries[i - 1]
    if (before !== undefined && e.seq <= before.seq) {
      if (e.seq === before.seq || dup.has(e.seq)) problems.push({ code: 'E_LEDGER_CHANGED', message: `entry #${e.seq} appears twice (line ${lines[i]})`, seq: e.seq, line: lines[i] })
      else problems.push({ code: 'E_LEDGER_REORDERED', message: `entry #${e.seq} (line ${lines[i]}) is out of order: it comes after #${before.seq}`, seq: e.seq, line: lines[i] })
      dup.add(e.seq)
      continue
    }
    const expectPrev = before === undefined ? GENESIS_PREV : before.hash
    if (before !== undefined && e.seq === before.seq + 1 && e.prev !== expectPrev) {
      problems.push({ code: 'E_LEDGER_CHANGED', message: `entry #${before.seq} (line ${lines[i - 1]}) was replaced: entry #${e.seq} does not follow it (its prev is not #${before.seq}'s hash)`, seq: before.seq, line: lines[i - 1] })
    }
    if (before === undefined && e.seq === 1 && e.prev !== GENESIS_PREV) problems.push({ code: 'E_LEDGER_CHANGED', message: `entry #1 (line ${lines[i]}) was changed: it does not start the chain`, seq: 1, line: lines[i] })
  }
  return { entries, lines, problems, torn }
}

/**
 * Check the file's last entry against the head kept outside it:
 * E_LEDGER_TRUNCATED when the head names an entry past the file's end,
 * E_LEDGER_CHANGED when the entry it names has another hash. Entries past
 * the head are allowed (a kill between the file and the head write).
 */
export function checkHead (entries: LedgerEntry[], head: LedgerHead): ChainProblem[] {
  const last = entries.at(-1)
  const lastSeq = last?.seq ?? 0
  if (head.seq > lastSeq) {
    const from = lastSeq + 1
    return [{ code: 'E_LEDGER_TRUNCATED', message: `the ledger was truncated: it ends at #${lastSeq} but its head (${LEDGER_HEAD_FILE}) names #${head.seq}: ${from === head.seq ? `entry #${from} was` : `entries #${from}..#${head.seq} were`} removed from its end`, seq: from }]
  }
  const e = entries.find(x => x.seq === head.seq)
  if (e !== undefined && e.hash !== head.hash) return [{ code: 'E_LEDGER_CHANGED', message: `entry #${head.seq} was changed: its hash does not match the head (${LEDGER_HEAD_FILE})`, seq: head.seq }]
  return []
}

/** Read and parse the head file; null when absent; throws on other read errors. A malformed head is returned as a problem. */
export function readHead (storeDir: string): { head: LedgerHead | null, problem?: ChainProblem } {
  let text: string
  try { text = fs.readFileSync(path.join(storeDir, LEDGER_HEAD_FILE), 'utf8') } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return { head: null }
    throw e
  }
  try {
    const h = JSON.parse(text) as LedgerHead
    if (Number.isSafeInteger(h.seq) && h.seq >= 0 && typeof h.hash === 'string') return { head: { seq: h.seq, hash: h.hash } }
  } catch {}
  return { head: null, problem: { code: 'E_LEDGER_CHANGED', message: `the ledger head ${LEDGER_HEAD_FILE} is not {"seq", "hash"}: it was changed` } }
}

/** Result of verifyLedger. */
export interface LedgerCheck {
  ok: boolean
  problems: ChainProblem[]
  /** entries read */
  entries: number
  /** bytes of a torn last line (not a problem) */
  torn: number
}

/**
 * Verify the ledger of the store in `storeDir` (format 4): file and head
 * present, chain intact, head matching. Reads only. Cost: O(file).
 */
export function verifyLedger (storeDir: string): LedgerCheck {
  let text: string
  try { text = fs.readFileSync(path.join(storeDir, LEDGER_FILE), 'utf8') } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e
    const { head } = readHead(storeDir)
    const what = head !== null ? `its head names #${head.seq}` : 'its head is missing too'
    return { ok: false, problems: [{ code: 'E_LEDGER_MISSING', message: `the effect ledger ${LEDGER_FILE} is missing (${what}): the record of external effects is lost` }], entries: 0, torn: 0 }
  }
  const p = parseLedger(text)
  const problems = [...p.problems]
  const { head, problem } = readHead(storeDir)
  if (problem) problems.push(problem)
  else if (head === null) problems.push({ code: 'E_LEDGER_MISSING', message: `the ledger head ${LEDGER_HEAD_FILE} is missing: a truncated ledger could not be told apart` })
  else problems.push(...checkHead(p.entries, head))
  return { ok: problems.length === 0, problems, entries: p.entries.length, torn: p.torn }
}

/** fsync a directory (so a created or renamed name in it is durable). */
export function fsyncDir (dir: string): void {
  const fd = fs.openSync(dir, 'r')
  try { fs.fsyncSync(fd) } finally { fs.closeSync(fd) }
}

/** Write the head file atomically (temporary file, fsync, rename, fsync of the directory). */
export function writeHeadSync (storeDir: string, head: LedgerHead): void {
  const file = path.join(storeDir, LEDGER_HEAD_FILE)
  const tmp = `${file}.tmp`
  const fd = fs.openSync(tmp, 'w', 0o600)
  try { fs.writeSync(fd, JSON.stringify(head) + '\n'); fs.fsyncSync(fd) } finally { fs.closeSync(fd) }
  fs.renameSync(tmp, file)
  fsyncDir(path.dirname(file))
}

/**
 * Create the ledger of a store: the directory, a first `genesis` entry with
 * `fields`, and the head; all fsynced. Does nothing when the ledger file
 * exists already. Used for a new store and by the format 3 -> 4 migration (store/migrate.ts).
 */
export function createLedgerSync (storeDir: string, fields: Record<string, unknown>): boolean {
  const dir = path.join(storeDir, LEDGER_DIR)
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 })
  const file = path.join(storeDir, LEDGER_FILE)
  if (fs.existsSync(file)) return false
  const e = sealEntry({ ...fields, kind: 'genesis' }, null)
  const tmp = `${file}.tmp`
  const fd = fs.openSync(tmp, 'w', 0o600)
  try { fs.writeSync(fd, entryLine(e)); fs.fsyncSync(fd) } finally { fs.closeSync(fd) }
  fs.renameSync(tmp, file)
  writeHeadSync(storeDir, { seq: e.seq, hash: e.hash })
  return true
}
