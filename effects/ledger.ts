/**
 * The effect ledger (issue 15; DESIGN.md "External effects"): what tools did
 * outside the workspace, recorded in the store before it happened, with its
 * outcome, and the checkpoints and restores it happened between. The file
 * and its hash chain are store/effect-chain.ts; the recovery gate is
 * effects/gate.ts; this module keeps the ledger's state in memory and writes
 * every change as an entry.
 *
 * Entry kinds (fields besides seq, time, kind, prev, hash):
 *
 * | kind | fields |
 * |---|---|
 * | `genesis` | `format`, `migratedFrom?` |
 * | `register` | `tool`, `class`, `exclude` (JSON Pointers), `description` |
 * | `begin` | `occurrence` (the effect's own number: 1, 2, 3, … in begin order, one more than the largest before it; ledgers written before that numbered effects by their entry's seq, and their new effects go on after the largest), `tool`, `class`, `target`, `identity`, `identitySource`, `actor`, `preState`, `compensates`, `gate` (rule), `deadline` (ms) |
 * | `status` | `occurrence`, `status` (pending, confirmed, failed, unknown), `evidence` |
 * | `reconcile` | `occurrence`, `verdict`, `evidence` |
 * | `override` | `occurrence`, `reason`, `user`, `uid` |
 * | `checkpoint` | `checkpoint`, `generation`, `branch`, `parent` |
 * | `restore` | `checkpoint`, `from`, `branch`, `saved`, `abandoned` (occurrence ids) |
 *
 * Durability: a begin is acknowledged only after its entry is fdatasync'ed
 * and the head rewritten (so the intent survives kill -9); so are the other
 * effect entries and restores. Checkpoint entries are kept in memory and
 * written in the batch of the next entry (or at close): no cost per mark,
 * and each effect entry still follows the checkpoints before it.
 *
 * Writers: the daemon, and `rewindfs effects override|reconcile` (a
 * person's acts) while the daemon runs. Every write takes the file lock
 * (proper-lockfile, `<ledger>.lock`) and first reads what another process
 * appended (catchUp), so the chain stays one line.
 *
 * Fail closed: an intent or pending occurrence past its deadline, or found
 * open when the daemon starts (`recoverOpen`), becomes `unknown`, persisted.
 * A ledger whose chain does not verify refuses every write (E_LEDGER_CORRUPT).
 */
import fs from 'node:fs'
import path from 'node:path'
import { canonicalJson } from '../proto/canonical.js'
import { checkValue } from '../proto/values.js'
import lockfile from 'proper-lockfile'
import { isEffectClass, isEffectStatus, isReconcileVerdict, type EffectActor, type EffectBeginInfo, type EffectClass, type EffectInfo, type EffectRegistration, type EffectStatus, type GateInfo, type ReconcileVerdict } from '../proto/effects.js'
import { checkHead, entryLine, LEDGER_FILE, LEDGER_HEAD_FILE, parseLedger, readHead, sealEntry, type ChainProblem, type LedgerEntry, type LedgerHead, fsyncDir, parseLine } from '../store/effect-chain.js'
import { decide, decideCompensation, type GateDecision, type PriorOccurrence } from './gate.js'
import { isWellFormed } from '../proto/validate.js'
import { deriveIdentity, isJsonPointer, MAX_IDENTITY_LENGTH, type EffectRequest } from './identity.js'

/** Default time an occurrence may stay intent or pending before it is unknown, ms (5 minutes). */
export const DEFAULT_EFFECT_TIMEOUT_MS = 5 * 60 * 1000
/** Largest timeoutMs of a begin, ms (1 day). */
export const MAX_EFFECT_TIMEOUT_MS = 24 * 60 * 60 * 1000
/** Bytes that must be free on the store's filesystem for a begin (1 MiB): below, the intent could not be recorded for sure. */
export const LEDGER_MIN_FREE = 1024 * 1024
/** Largest canonical JSON of an evidence value, bytes (64 KiB). */
export const MAX_EVIDENCE_BYTES = 64 * 1024
/** Largest canonical JSON of a pre-state snapshot, bytes (1 MiB). */
export const MAX_PRESTATE_BYTES = 1024 * 1024
/** Longest tool name, UTF-16 code units. */
export const MAX_TOOL_LENGTH = 200
/** Longest target, UTF-16 code units. */
export const MAX_TARGET_LENGTH = 4096
/** Longest override reason, UTF-16 code units. */
export const MAX_REASON_LENGTH = 2000

/** Error codes the ledger throws (proto/errors.ts documents each). */
export type EffectErrorCode =
  | 'E_BAD_REQUEST' | 'E_NO_SPACE' | 'E_IO'
  | 'E_EFFECT_UNREGISTERED' | 'E_EFFECT_CLASS_CONFLICT' | 'E_UNKNOWN_EFFECT' | 'E_EFFECT_STATE'
  | 'E_EFFECT_DONE' | 'E_EFFECT_COMPENSATE_ONLY' | 'E_EFFECT_IRREVERSIBLE' | 'E_EFFECT_UNKNOWN'
  | 'E_LEDGER_CORRUPT'

/** An error with a stable code (the server sends code, message and details as they are). */
export class EffectError extends Error {
  constructor (readonly code: EffectErrorCode, message: string, readonly details?: unknown) {
    super(message)
    this.name = 'EffectError'
  }
}

/** The daemon's state an actor is taken from at begin. */
export interface ActorState { checkpoint: number | null, generation: number, branch: string }

/** Options of Ledger.open. */
export interface LedgerOptions {
  /** the daemon's current head, generation and branch (default: none, generation 0, branch "main") */
  actor?: () => ActorState
  /** bytes free on the store's filesystem (default: statfs), null when unknown */
  freeBytes?: (dir: string) => number | null
  /** bytes that must be free for a begin; default LEDGER_MIN_FREE */
  minFree?: number
  /** clock, ms since the epoch */
  now?: () => number
  /** turn every occurrence found intent or pending into unknown (the daemon at start: their caller's outcome is lost) */
  recoverOpen?: boolean
}

interface Occ extends EffectInfo { deadline: number }

/** Arguments of begin (and compensate, with `compensates`). */
export interface BeginArgs {
  tool: string
  target: string
  /** the request the identity is derived from (default), or */
  request?: EffectRequest
  /** the identity given by the caller (used as it is) */
  identity?: string
  run?: string
  attempt?: number
  preState?: unknown
  /** ms the occurrence may stay intent or pending before it is unknown; default DEFAULT_EFFECT_TIMEOUT_MS */
  timeoutMs?: number
}

/** Filters of list; every given one must hold. */
export interface ListArgs { run?: string, branch?: string, status?: EffectStatus, target?: string, limit?: number }

function bad (field: string, message: string): never {
  throw new EffectError('E_BAD_REQUEST', `${field}: ${message}`, { field })
}

function checkName (field: string, v: unknown, max: number): string {
  if (typeof v !== 'string' || v.length < 1 || v.length > max || /[\u0000-\u001f\u007f]/.test(v) || !isWellFormed(v)) bad(field, `expected a string of 1..${max} characters without control characters`)
  return v
}

/**
 * A value of the protocol's value model (PROTOCOL.md "Values": integers up
 * to 2^64-1 exact) of at most `max` canonical bytes, as a copy; no bytes
 * (the ledger is a JSON-lines file: encode them, e.g. as base64).
 */
function checkJson (field: string, v: unknown, max: number): unknown {
  if (v === undefined) return null
  if (containsBytes(v)) bad(field, 'expected a JSON value (no bytes: encode them, e.g. as base64)')
  let copy: unknown
  let text: string
  try {
    copy = checkValue(structuredClone(v))
    text = canonicalJson(copy)
  } catch (e) { bad(field, `expected a JSON value (${(e as Error).message})`) }
  if (Buffer.byteLength(text) > max) bad(field, `at most ${max} bytes of JSON, got ${Buffer.byteLength(text)}`)
  return copy
}

function containsBytes (v: unknown): boolean {
  if (v instanceof Uint8Array) return true
  if (Array.isArray(v)) return v.some(containsBytes)
  if (v !== null && typeof v === 'object') return Object.values(v).some(containsBytes)
  return false
}

/**
 * The ledger of one store. Open with Ledger.open; every method that writes
 * resolves after its entry is durable and rejects with EffectError (nothing
 * written) on bad input, a gate refusal, a full store or a damaged ledger.
 */
export class Ledger {
  private head: LedgerHead | null = null
  /** bytes of the file this process has read or written */
  private size = 0
  private readonly registrations = new Map<string, EffectRegistration>()
  private readonly occs = new Map<number, Occ>()
  /** target \0 identity -> occurrences (not compensations), oldest first */
  private readonly byKey = new Map<string, number[]>()
  /** checkpoint entries (and noted ones): id -> generation and parent, kept after gc removes the checkpoint */
  private readonly checkpoints = new Map<number, { generation: number, parent: number | null }>()
  private readonly pendingMarks: Array<Record<string, unknown> & { kind: 'checkpoint' }> = []
  private queue: Promise<unknown> = Promise.resolve()
  private closed = false
  /** the file has been read (open): later locked sections read only what others appended */
  private loaded = false
  /** problems found when the file was read; non-empty: every write is refused */
  damaged: ChainProblem[] = []
  /** entries read or written */
  entries = 0
  /** the largest occurrence id of the ledger (0 before the first begin): the next is one more */
  private lastOccurrence = 0

  private constructor (readonly storeDir: string, private readonly opts: LedgerOptions) {}

  private get file (): string { return path.join(this.storeDir, LEDGER_FILE) }
  private now (): number { return (this.opts.now ?? Date.now)() }

  /**
   * Open the ledger of `storeDir` (created by the store's format 3, see
   * store/migrate.ts). Reads and checks the whole file; a torn last
   * line (a write a kill cut short, never acknowledged) is cut off, a head
   * left behind by a kill is moved forward. A damaged chain or a missing
   * file leaves the ledger readable and every write refused.
   */
  static async open (storeDir: string, opts: LedgerOptions = {}): Promise<Ledger> {
    const l = new Ledger(path.resolve(storeDir), opts)
    await l.exclusive(async () => {
      let text: string
      try { text = await fs.promises.readFile(l.file, 'utf8') } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e
        l.damaged = [{ code: 'E_LEDGER_MISSING', message: `the effect ledger ${LEDGER_FILE} is missing: external effects cannot be recorded (rewindfs verify)` }]
        return
      }
      const p = parseLedger(text)
      l.damaged = [...p.problems]
      const { head, problem } = readHead(l.storeDir)
      if (problem) l.damaged.push(problem)
      else if (head !== null) l.damaged.push(...checkHead(p.entries, head))
      if (p.torn > 0 && l.damaged.length === 0) await fs.promises.truncate(l.file, Buffer.byteLength(text) - p.torn)
      l.size = Buffer.byteLength(text) - (l.damaged.length === 0 ? p.torn : 0)
      for (const e of p.entries) l.apply(e)
      l.loaded = true
      const last = p.entries.at(-1)
      if (l.damaged.length === 0 && last !== undefined && (head === null || head.seq < last.seq)) {
        await writeHead(l.storeDir, { seq: last.seq, hash: last.hash }, true)
      }
      if (l.damaged.length === 0 && opts.recoverOpen === true) {
        const open = [...l.occs.values()].filter(o => o.status === 'intent' || o.status === 'pending')
        if (open.length > 0) {
          await l.write(open.map(o => ({ kind: 'status', occurrence: o.occurrence, status: 'unknown', evidence: { reason: 'the daemon stopped before the outcome was recorded', was: o.status } })), true)
        }
      }
    })
    return l
  }

  // ------------------------------------------------------------ reading

  /** The registration of `tool`, or null. */
  registration (tool: string): EffectRegistration | null { return this.registrations.get(tool) ?? null }

  /** The occurrence `id`, or null. */
  get (id: number): EffectInfo | null {
    const o = this.occs.get(id)
    return o === undefined ? null : view(o)
  }

  /** Occurrences matching every given filter, newest first, at most `limit` (default all). Expired ones are made unknown first. */
  async list (args: ListArgs = {}): Promise<EffectInfo[]> {
    if (this.damaged.length === 0 && !this.closed) await this.exclusive(async () => { await this.expire() })
    return this.select(args)
  }

  private select (args: ListArgs): EffectInfo[] {
    const out: EffectInfo[] = []
    for (const o of [...this.occs.values()].reverse()) {
      if (args.run !== undefined && o.actor.run !== args.run) continue
      if (args.branch !== undefined && o.actor.branch !== args.branch) continue
      if (args.status !== undefined && o.status !== args.status) continue
      if (args.target !== undefined && o.target !== args.target) continue
      out.push(view(o))
      if (args.limit !== undefined && out.length >= args.limit) break
    }
    return out
  }

  /** The occurrences begun in any of `generations`, oldest first. */
  inGenerations (generations: ReadonlySet<number>): EffectInfo[] {
    return [...this.occs.values()].filter(o => generations.has(o.actor.generation)).map(view)
  }

  /** The gate's decision for a begin of `tool` on `target` with `identity` now, without recording anything. */
  decision (tool: string, target: string, identity: string): GateInfo {
    const reg = this.registrations.get(tool)
    const d = decide(reg?.class ?? 'unknown', this.prior(target, identity))
    return gateInfo(d)
  }

  /**
   * What the gate would decide for a begin now (effect_gate), records
   * nothing: the identity is derived from `request` (or given) as begin does.
   * E_EFFECT_UNREGISTERED for an unregistered tool.
   */
  async gate (args: { tool: string, target: string, request?: EffectRequest, identity?: string }): Promise<GateInfo & { identity: string }> {
    const tool = checkName('tool', args.tool, MAX_TOOL_LENGTH)
    const target = checkName('target', args.target, MAX_TARGET_LENGTH)
    return await this.exclusive(async () => {
      const reg = this.registrations.get(tool)
      if (reg === undefined) throw new EffectError('E_EFFECT_UNREGISTERED', `tool ${tool} is not registered: register its effect class first (effect_register)`, { tool })
      let identity: string
      try { identity = args.identity ?? deriveIdentity(target, args.request ?? {}, reg.exclude) } catch (e) { bad('request.body', (e as Error).message) }
      if (this.damaged.length === 0 && !this.closed) await this.expire()
      return { ...this.decision(tool, target, identity), identity }
    })
  }

  /** The checkpoint the ledger recorded (or noted) with id `id`: its generation and parent; null when it has none. */
  checkpointOf (id: number): { generation: number, parent: number | null } | null {
    return this.checkpoints.get(id) ?? null
  }

  // ------------------------------------------------------------ writing

  /**
   * Register `tool`'s effect class (and the body fields its derived
   * identities leave out). Registering again with the same class and
   * exclusions returns the registration; another class or other
   * exclusions is E_EFFECT_CLASS_CONFLICT (a class is declared once, never
   * changed afterwards: register under a new name).
   */
  async register (args: { tool: string, class: EffectClass, exclude?: string[], description?: string }): Promise<EffectRegistration> {
    const tool = checkName('tool', args.tool, MAX_TOOL_LENGTH)
    if (!isEffectClass(args.class)) bad('class', 'expected one of replayable, idempotent, compensable, irreversible, unknown')
    const exclude = args.exclude ?? []
    if (!Array.isArray(exclude) || exclude.length > 100 || !exclude.every(isJsonPointer)) bad('exclude', 'expected at most 100 JSON Pointers (RFC 6901), each starting with "/", e.g. "/timestamp"')
    const description = args.description ?? ''
    if (typeof description !== 'string' || description.length > 2000) bad('description', 'expected a string of at most 2000 characters')
    return await this.exclusive(async () => {
      const had = this.registrations.get(tool)
      if (had !== undefined) {
        if (had.class === args.class && canonicalJson(had.exclude) === canonicalJson(exclude)) return had
        throw new EffectError('E_EFFECT_CLASS_CONFLICT', `tool ${tool} is registered as ${had.class} excluding [${had.exclude.join(', ')}]; a tool's class and exclusions cannot change: register it under a new name`, { tool, registered: had })
      }
      await this.write([{ kind: 'register', tool, class: args.class, exclude, description }], true)
      return this.registrations.get(tool)!
    })
  }

  /**
   * Begin an effect: the gate decides from the latest earlier occurrence
   * with the same target and identity; when it allows, the intent is
   * recorded (durably) and its occurrence id returned. A refusal is an
   * EffectError whose code is the gate's (E_EFFECT_DONE,
   * E_EFFECT_COMPENSATE_ONLY, E_EFFECT_IRREVERSIBLE, E_EFFECT_UNKNOWN) and
   * whose details carry the decision; nothing is recorded. E_NO_SPACE when
   * the store is too full to record the intent: then nothing may be attempted.
   */
  async begin (args: BeginArgs): Promise<EffectBeginInfo> {
    return await this.beginOcc(args, null)
  }

  /** Begin a compensation of occurrence `compensates` (its own effect, linked to it): see gate.ts decideCompensation. */
  async compensate (args: BeginArgs & { compensates: number }): Promise<EffectBeginInfo> {
    if (!Number.isSafeInteger(args.compensates) || args.compensates < 1) bad('compensates', 'expected an occurrence id (a positive integer)')
    return await this.beginOcc(args, args.compensates)
  }

  private async beginOcc (args: BeginArgs, compensates: number | null): Promise<EffectBeginInfo> {
    const tool = checkName('tool', args.tool, MAX_TOOL_LENGTH)
    const target = checkName('target', args.target, MAX_TARGET_LENGTH)
    if (args.identity !== undefined && args.request !== undefined) bad('identity', 'give identity or request, not both')
    if (args.identity !== undefined) checkName('identity', args.identity, MAX_IDENTITY_LENGTH)
    const run = args.run === undefined ? null : checkName('run', args.run, 200)
    const attempt = args.attempt ?? null
    if (attempt !== null && (!Number.isSafeInteger(attempt) || attempt < 0)) bad('attempt', 'expected a non-negative integer')
    const timeoutMs = args.timeoutMs ?? DEFAULT_EFFECT_TIMEOUT_MS
    if (!Number.isSafeInteger(timeoutMs) || timeoutMs < 1 || timeoutMs > MAX_EFFECT_TIMEOUT_MS) bad('timeoutMs', `expected a duration in 1..${MAX_EFFECT_TIMEOUT_MS} ms`)
    const preState = checkJson('preState', args.preState, MAX_PRESTATE_BYTES)
    if (args.request !== undefined && (typeof args.request !== 'object' || args.request === null)) bad('request', 'expected {method?, body?}')
    if (args.request?.method !== undefined) checkName('request.method', args.request.method, 64)
    return await this.exclusive(async () => {
      this.writable()
      const reg = this.registrations.get(tool)
      if (reg === undefined) throw new EffectError('E_EFFECT_UNREGISTERED', `tool ${tool} is not registered: register its effect class first (effect_register)`, { tool })
      let identity: string
      try { identity = args.identity ?? deriveIdentity(target, args.request ?? {}, reg.exclude) } catch (e) { bad('request.body', (e as Error).message) }
      await this.expire()
      let d: GateDecision
      if (compensates === null) d = decide(reg.class, this.prior(target, identity))
      else {
        const of = this.occs.get(compensates)
        if (of === undefined) throw new EffectError('E_UNKNOWN_EFFECT', `no occurrence #${compensates} in the ledger`, { occurrence: compensates })
        const earlier = [...of.compensations].reverse().map(id => this.occs.get(id)!).find(c => c.status !== 'failed' || c.reconcile !== null)
        d = decideCompensation(this.priorOf(of), earlier === undefined ? null : this.priorOf(earlier))
      }
      if (!d.allowed) throw new EffectError(d.code!, d.message, { gate: gateInfo(d), tool, target, identity })
      const free = (this.opts.freeBytes ?? defaultFreeBytes)(this.storeDir)
      const need = this.opts.minFree ?? LEDGER_MIN_FREE
      if (free !== null && free < need) throw new EffectError('E_NO_SPACE', `the store's filesystem has ${free} bytes free, fewer than the ${need} needed to record the intent: nothing was attempted; free space and begin again`, { free, need })
      const a = (this.opts.actor ?? (() => ({ checkpoint: null, generation: 0, branch: 'main' })))()
      const actor: EffectActor = { run, attempt, checkpoint: a.checkpoint, generation: a.generation, branch: a.branch }
      const occurrence = this.lastOccurrence + 1
      await this.write([{
        kind: 'begin', occurrence, tool, class: reg.class, target, identity, identitySource: args.identity !== undefined ? 'given' : 'derived',
        actor, preState, compensates, gate: d.rule, deadline: this.now() + timeoutMs,
      }], true)
      return { occurrence, identity, gate: gateInfo(d) }
    })
  }

  /** intent -> pending: the call is being sent. E_EFFECT_STATE unless the occurrence is intent. */
  async sent (args: { occurrence: number, evidence?: unknown }): Promise<EffectInfo> {
    const evidence = checkJson('evidence', args.evidence, MAX_EVIDENCE_BYTES)
    return await this.transition(args.occurrence, ['intent'], () => ({ kind: 'status', occurrence: args.occurrence, status: 'pending', evidence }))
  }

  /**
   * Record the outcome: confirmed (it took effect), failed (it did not) or
   * unknown (a timeout, a lost response: nobody can tell), with evidence
   * (e.g. the response status and the resource id). From intent or pending
   * only (E_EFFECT_STATE otherwise: an unknown outcome is settled by reconcile).
   */
  async complete (args: { occurrence: number, status: EffectStatus, evidence?: unknown }): Promise<EffectInfo> {
    if (!['confirmed', 'failed', 'unknown'].includes(args.status)) bad('status', 'expected confirmed, failed or unknown')
    const evidence = checkJson('evidence', args.evidence, MAX_EVIDENCE_BYTES)
    return await this.transition(args.occurrence, ['intent', 'pending'], () => ({ kind: 'status', occurrence: args.occurrence, status: args.status, evidence }))
  }

  /**
   * Record what an authoritative re-read of the target showed: absent,
   * present (as intended) or wrong (present but not as intended). Not while
   * the occurrence is still in flight (E_EFFECT_STATE: complete it, or wait
   * for its deadline).
   */
  async reconcile (args: { occurrence: number, verdict: ReconcileVerdict, evidence?: unknown }): Promise<EffectInfo> {
    if (!isReconcileVerdict(args.verdict)) bad('verdict', 'expected absent, present or wrong')
    const evidence = checkJson('evidence', args.evidence, MAX_EVIDENCE_BYTES)
    return await this.transition(args.occurrence, ['confirmed', 'failed', 'unknown'], () => ({ kind: 'reconcile', occurrence: args.occurrence, verdict: args.verdict, evidence }))
  }

  /**
   * A person's override of the gate for occurrence `occurrence`, with the
   * reason and the OS user recorded: the next begin of the same effect is
   * allowed as a new occurrence. Only the CLI calls this (never the
   * protocol: a token holder cannot override).
   */
  async override (args: { occurrence: number, reason: string, user: string, uid: number }): Promise<EffectInfo> {
    if (typeof args.reason !== 'string' || args.reason.trim().length === 0 || args.reason.length > MAX_REASON_LENGTH) bad('reason', `expected a non-empty reason of at most ${MAX_REASON_LENGTH} characters`)
    checkName('user', args.user, 256)
    return await this.transition(args.occurrence, ['intent', 'pending', 'confirmed', 'failed', 'unknown'], () => ({ kind: 'override', occurrence: args.occurrence, reason: args.reason, user: args.user, uid: args.uid }))
  }

  /** Note a checkpoint (written with the next entry). */
  noteCheckpoint (c: { checkpoint: number, generation: number, branch: string, parent: number | null }): void {
    if (this.closed || this.damaged.length > 0) return
    this.pendingMarks.push({ kind: 'checkpoint', checkpoint: c.checkpoint, generation: c.generation, branch: c.branch, parent: c.parent })
    this.checkpoints.set(c.checkpoint, { generation: c.generation, parent: c.parent })
  }

  /**
   * Record a restore (durably) and return the effects of the abandoned
   * suffix: those begun in `abandoned` generations, with their status.
   * A damaged ledger records nothing and still lists what it read.
   */
  async noteRestore (r: { checkpoint: number, from: number | null, branch: string, saved: number | null, abandoned: ReadonlySet<number> }): Promise<EffectInfo[]> {
    if (this.closed || this.damaged.length > 0) return this.inGenerations(r.abandoned)
    return await this.exclusive(async () => {
      await this.expire()
      const list = this.inGenerations(r.abandoned)
      await this.write([{ kind: 'restore', checkpoint: r.checkpoint, from: r.from, branch: r.branch, saved: r.saved, abandoned: list.map(e => e.occurrence) }], true)
      return list
    })
  }

  /** Write what is noted and stop; later writes are refused. */
  async close (): Promise<void> {
    if (this.closed) return
    await this.exclusive(async () => {
      if (this.pendingMarks.length > 0 && this.damaged.length === 0) await this.write([], true)
      this.closed = true
    }, true).catch(() => { this.closed = true })
  }

  // ------------------------------------------------------------ internals

  private writable (): void {
    if (this.closed) throw new EffectError('E_LEDGER_CORRUPT', 'the effect ledger is closed (the daemon is stopping)')
    if (this.damaged.length > 0) throw new EffectError('E_LEDGER_CORRUPT', `the effect ledger is damaged, so no effect may begin: ${this.damaged[0].message} (rewindfs verify lists every problem)`, { problems: this.damaged })
  }

  private async transition (id: number, from: EffectStatus[], entry: () => Record<string, unknown> & { kind: string }): Promise<EffectInfo> {
    if (!Number.isSafeInteger(id) || id < 1) bad('occurrence', 'expected an occurrence id (a positive integer)')
    return await this.exclusive(async () => {
      this.writable()
      await this.expire()
      const o = this.occs.get(id)
      if (o === undefined) throw new EffectError('E_UNKNOWN_EFFECT', `no occurrence #${id} in the ledger`, { occurrence: id })
      if (!from.includes(o.status)) throw new EffectError('E_EFFECT_STATE', `occurrence #${id} is ${o.status}; this needs it ${from.join(' or ')}${o.status === 'unknown' ? ' (an unknown outcome is settled by reconcile)' : ''}`, { occurrence: id, status: o.status })
      await this.write([entry()], true)
      return view(this.occs.get(id)!)
    })
  }

  /** Intent and pending occurrences past their deadline become unknown (in the lock). */
  private async expire (): Promise<void> {
    const now = this.now()
    const late = [...this.occs.values()].filter(o => (o.status === 'intent' || o.status === 'pending') && o.deadline <= now)
    if (late.length > 0) await this.write(late.map(o => ({ kind: 'status', occurrence: o.occurrence, status: 'unknown', evidence: { reason: 'no outcome recorded before the deadline (a timeout or a lost response)', deadline: o.deadline, was: o.status } })), true)
  }

  private prior (target: string, identity: string): PriorOccurrence | null {
    const ids = this.byKey.get(target + '\0' + identity)
    if (ids === undefined || ids.length === 0) return null
    return this.priorOf(this.occs.get(ids[ids.length - 1])!)
  }

  private priorOf (o: Occ): PriorOccurrence {
    const compensated = o.compensations.some(id => {
      const c = this.occs.get(id)!
      return c.reconcile !== null ? c.reconcile.verdict === 'present' : c.status === 'confirmed'
    })
    return { occurrence: o.occurrence, class: o.class, status: o.status, verdict: o.reconcile?.verdict ?? null, overridden: o.override !== null, compensated, target: o.target }
  }

  /** Run `fn` alone: in this process (a queue) and, when `lock`, across processes (the file lock). */
  private async exclusive<T> (fn: () => Promise<T>, lock = true): Promise<T> {
    const run = async (): Promise<T> => {
      let release: (() => Promise<void>) | null = null
      if (lock && fs.existsSync(this.file)) {
        release = await lockfile.lock(this.file, { retries: { retries: 100, minTimeout: 5, maxTimeout: 100 }, stale: 10000, realpath: false })
      }
      try {
        if (release !== null && this.loaded) await this.catchUp()
        return await fn()
      } finally {
        if (release !== null) await release().catch(() => {})
      }
    }
    const p = this.queue.then(run, run)
    this.queue = p.catch(() => {})
    return await p
  }

  /** Read the entries another process appended since this one last read or wrote (in the lock). */
  private async catchUp (): Promise<void> {
    if (this.damaged.length > 0) return
    const st = await fs.promises.stat(this.file)
    if (st.size === this.size) return
    if (st.size < this.size) {
      this.damaged.push({ code: 'E_LEDGER_TRUNCATED', message: `the effect ledger shrank from ${this.size} to ${st.size} bytes while in use: entries were removed` })
      return
    }
    const fh = await fs.promises.open(this.file, 'r')
    let text: string
    try {
      const buf = Buffer.alloc(st.size - this.size)
      await fh.read(buf, 0, buf.length, this.size)
      text = buf.toString('utf8')
    } finally { await fh.close() }
    const lines = text.split('\n')
    if (lines.at(-1) !== '') lines.pop() // an unterminated tail: another writer died mid-line (never acknowledged)
    else lines.pop()
    for (const l of lines) {
      let e: LedgerEntry
      try { e = parseLine(l) as LedgerEntry } catch { this.damaged.push({ code: 'E_LEDGER_CHANGED', message: 'another process appended a line that is not a ledger entry' }); return }
      const expect = sealEntry({ ...e, kind: e.kind }, this.head, e.time)
      if (e.seq !== expect.seq || e.prev !== expect.prev || e.hash !== expect.hash) { this.damaged.push({ code: 'E_LEDGER_CHANGED', message: `entry #${e.seq} appended by another process does not continue the chain` }); return }
      this.apply(e)
      this.size += Buffer.byteLength(l) + 1
    }
  }

  /** Append entries (after the noted checkpoints) as one write; durable: fdatasync and fsync'd head. In the lock. */
  private async write (kinds: Array<Record<string, unknown> & { kind: string }>, durable: boolean): Promise<void> {
    const all = [...this.pendingMarks, ...kinds]
    if (all.length === 0) return
    let head = this.head
    const sealed: LedgerEntry[] = []
    const t = this.now()
    for (const k of all) { const e = sealEntry(k, head, t); sealed.push(e); head = { seq: e.seq, hash: e.hash } }
    const buf = Buffer.from(sealed.map(entryLine).join(''))
    const fh = await fs.promises.open(this.file, 'a')
    try {
      try {
        await fh.write(buf)
        if (durable) await fh.datasync()
      } catch (e) {
        await fh.truncate(this.size).catch(() => {})
        const code = (e as NodeJS.ErrnoException).code
        if (code === 'ENOSPC' || code === 'EDQUOT') throw new EffectError('E_NO_SPACE', `the store's filesystem is full: the ledger entry could not be recorded, so nothing was done (${code}); free space and retry`)
        throw new EffectError('E_IO', `writing the effect ledger failed: ${(e as Error).message}`, { errno: code })
      }
    } finally { await fh.close() }
    this.size += buf.length
    this.pendingMarks.length = 0
    for (const e of sealed) this.apply(e)
    await writeHead(this.storeDir, head!, durable)
  }

  /** Fold one entry into the state. */
  private apply (e: LedgerEntry): void {
    this.head = { seq: e.seq, hash: e.hash }
    this.entries++
    const f = e as Record<string, any>
    switch (e.kind) {
      case 'checkpoint':
        this.checkpoints.set(f.checkpoint, { generation: f.generation, parent: f.parent ?? null })
        break
      case 'register':
        this.registrations.set(f.tool, { tool: f.tool, class: f.class, exclude: f.exclude ?? [], description: f.description ?? '', time: e.time })
        break
      case 'begin': {
        const o: Occ = {
          occurrence: f.occurrence, tool: f.tool, class: f.class, target: f.target, identity: f.identity, identitySource: f.identitySource,
          actor: f.actor, preState: f.preState ?? null, compensates: f.compensates ?? null, compensations: [], time: e.time,
          status: 'intent', history: [{ status: 'intent', time: e.time, evidence: { gate: f.gate } }], reconcile: null, override: null, deadline: f.deadline,
        }
        this.occs.set(o.occurrence, o)
        this.lastOccurrence = Math.max(this.lastOccurrence, o.occurrence)
        if (o.compensates !== null) this.occs.get(o.compensates)?.compensations.push(o.occurrence)
        else {
          const key = o.target + '\0' + o.identity
          const ids = this.byKey.get(key) ?? []
          ids.push(o.occurrence)
          this.byKey.set(key, ids)
        }
        break
      }
      case 'status': {
        const o = this.occs.get(f.occurrence)
        if (o !== undefined && isEffectStatus(f.status)) { o.status = f.status; o.history.push({ status: f.status, time: e.time, evidence: f.evidence ?? null }) }
        break
      }
      case 'reconcile': {
        const o = this.occs.get(f.occurrence)
        if (o !== undefined) o.reconcile = { verdict: f.verdict, evidence: f.evidence ?? null, time: e.time }
        break
      }
      case 'override': {
        const o = this.occs.get(f.occurrence)
        if (o !== undefined) o.override = { reason: f.reason, user: f.user, time: e.time }
        break
      }
    }
  }
}

function view (o: Occ): EffectInfo {
  const { deadline: _d, ...rest } = o
  return structuredClone(rest)
}

function gateInfo (d: GateDecision): GateInfo {
  return { allowed: d.allowed, rule: d.rule, occurrence: d.occurrence, message: d.message }
}

function defaultFreeBytes (dir: string): number | null {
  try { const s = fs.statfsSync(dir); return s.bavail * s.bsize } catch { return null }
}

/** Write the head file: a temporary file renamed over it; durable: fsync'd, and the directory too. */
async function writeHead (storeDir: string, head: LedgerHead, durable: boolean): Promise<void> {
  const file = path.join(storeDir, LEDGER_HEAD_FILE)
  const tmp = `${file}.tmp`
  const fh = await fs.promises.open(tmp, 'w', 0o600)
  try {
    await fh.write(JSON.stringify(head) + '\n')
    if (durable) await fh.sync()
  } finally { await fh.close() }
  await fs.promises.rename(tmp, file)
  if (durable) fsyncDir(path.dirname(file))
}
