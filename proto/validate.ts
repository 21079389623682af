/**
 * Validation of every field of every request. `validateRequest` takes a
 * decoded message (unknown) and returns a typed Request with normalised
 * paths, or throws ProtoError:
 *   - E_BAD_REQUEST         not an object, bad/missing id, v or op type, any bad field, any unknown field
 *   - E_UNSUPPORTED_VERSION v is an integer but not in SUPPORTED_VERSIONS
 *   - E_UNKNOWN_OP          op is a string but not in OPS
 * Messages name the field and what was expected. Rules are written out in
 * proto/PROTOCOL.md "Field rules"; the constants below are the limits.
 */
import { ProtoError } from './errors.js'
import { EVENTS, isEventName, isObject, isOp, isRequestIdValue, OPS, type EventName, type Op, type Request, type RequestId } from './messages.js'
import { SUPPORTED_VERSIONS } from './version.js'
import { decodeName, encodeName, isByteName } from './names.js'
import { EFFECT_CLASSES, EFFECT_STATUSES, RECONCILE_VERDICTS } from './effects.js'
import { checkValue, isWellFormedString, ValueError } from './values.js'

/** Largest path accepted, in UTF-8 bytes (PATH_MAX). */
export const MAX_PATH_BYTES = 4096
/** Largest path component accepted, in UTF-8 bytes (NAME_MAX). */
export const MAX_NAME_BYTES = 255
/** Longest checkpoint label, in UTF-16 code units (JS string length). */
export const MAX_LABEL_LENGTH = 1024
/** Longest branch name, in UTF-16 code units. */
export const MAX_BRANCH_LENGTH = 255
/** Longest hello `client` string, in UTF-16 code units. */
export const MAX_CLIENT_LENGTH = 256
/** Largest `limit` of log. */
export const MAX_LOG_LIMIT = 100000
/** Largest (and default) `limit` of candidates. */
export const MAX_CANDIDATES = 80
/** Longest rewind memory run name, in UTF-16 code units. */
export const MAX_RUN_LENGTH = 200

/** Largest process id accepted (Linux PID_MAX_LIMIT, 2^22). */
export const MAX_PID = 4194304
/** Largest magnitude of a call's exit status (an int32). */
export const MAX_EXIT = 2147483647

/** Most paths in one request's `paths` (restore). */
export const MAX_PATHS = 10000

/** Largest `length` of read, bytes (16 MiB); also the daemon's default when a read gives no length. */
export const MAX_READ_LENGTH = 16 * 1024 * 1024

const MAX_SAFE = Number.MAX_SAFE_INTEGER

/** Fields allowed in every request besides the op's own. */
const ENVELOPE = ['v', 'id', 'op']

/** Allowed argument fields per op (anything else is E_BAD_REQUEST). */
const FIELDS: { [O in Op]: readonly string[] } = {
  hello: ['client'],
  status: [],
  mark: ['label', 'context', 'meta'],
  restore: ['checkpoint', 'paths', 'dryRun'],
  log: ['branch', 'limit'],
  diff: ['a', 'b'],
  stat: ['checkpoint', 'path'],
  readdir: ['checkpoint', 'path'],
  read: ['checkpoint', 'path', 'offset', 'length'],
  context: ['checkpoint'],
  candidates: ['limit'],
  memory_add: ['run', 'entry'],
  memory_get: ['run'],
  export: ['checkpoint', 'dir'],
  unmount: ['discard'],
  subscribe: ['events'],
  pin: ['checkpoint', 'pinned'],
  run_end: ['run'],
  gc: ['keepLast', 'abandonedAfterMs', 'runIdleMs', 'dryRun'],
  undo: ['checkpoint', 'dryRun'],
  history: ['path', 'all', 'limit', 'meta'],
  call_begin: ['tool', 'args', 'pid'],
  call_end: ['call', 'exitStatus'],
  effect_register: ['tool', 'class', 'exclude', 'description'],
  effect_begin: ['tool', 'target', 'request', 'identity', 'run', 'attempt', 'preState', 'timeoutMs'],
  effect_compensate: ['compensates', 'tool', 'target', 'request', 'identity', 'run', 'attempt', 'preState', 'timeoutMs'],
  effect_gate: ['tool', 'target', 'request', 'identity'],
  effect_sent: ['occurrence', 'evidence'],
  effect_complete: ['occurrence', 'status', 'evidence'],
  effect_reconcile: ['occurrence', 'verdict', 'evidence'],
  effect_list: ['run', 'branch', 'status', 'target', 'limit'],
}

function bad (id: RequestId | null, field: string, expected: string, got?: unknown): never {
  const suffix = arguments.length >= 4 ? `, got ${describe(got)}` : ''
  throw new ProtoError('E_BAD_REQUEST', `${field}: expected ${expected}${suffix}`, id, { field })
}

function describe (x: unknown): string {
  if (x === null) return 'null'
  if (Array.isArray(x)) return 'array'
  if (x instanceof Uint8Array) return 'bytes'
  if (typeof x === 'string') return x.length > 40 ? `string of length ${x.length}` : JSON.stringify(x)
  if (typeof x === 'number') return String(x)
  return typeof x
}

/** UTF-8 length of a well-formed string, without TextEncoder. */
export function utf8Length (s: string): number {
  let n = 0
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i)
    if (c < 0x80) n += 1
    else if (c < 0x800) n += 2
    else if (c >= 0xd800 && c <= 0xdbff) { n += 4; i++ } else n += 3
  }
  return n
}

/** True when `s` has no lone surrogate (so it encodes to UTF-8 losslessly). */
export const isWellFormed = isWellFormedString

/**
 * Normalise a workspace path, or return a reason it is refused.
 * Rules: a string of at most MAX_PATH_BYTES UTF-8 bytes, well-formed, no NUL;
 * split on '/'; empty and '.' components are dropped (so a leading '/' means
 * the workspace root, and 'a//b/./c' is 'a/b/c'); a '..' component anywhere is
 * refused; each component is at most MAX_NAME_BYTES bytes. The result is the
 * components joined by '/', with no leading or trailing '/'; the workspace
 * root is the empty string ''.
 */
export function normalizePath (p: string | Uint8Array): { path: string } | { reason: string } {
  // a path sent as bytes (PROTOCOL.md "Paths that are not UTF-8"): decoded losslessly, its escaped bytes count one each
  const bytes = p instanceof Uint8Array
  if (bytes) p = decodeName(p as Uint8Array)
  else if (!isWellFormed(p as string)) return { reason: 'a well-formed string (no lone surrogates; send a path that is not UTF-8 as bytes)' }
  const s = p as string
  const len = (x: string): number => bytes && isByteName(x) ? encodeName(x).length : utf8Length(x)
  if (s.includes('\0')) return { reason: 'a path without NUL' }
  if (len(s) > MAX_PATH_BYTES) return { reason: `a path of at most ${MAX_PATH_BYTES} UTF-8 bytes` }
  const out: string[] = []
  for (const c of s.split('/')) {
    if (c === '' || c === '.') continue
    if (c === '..') return { reason: "a workspace path without a '..' component" }
    if (len(c) > MAX_NAME_BYTES) return { reason: `path components of at most ${MAX_NAME_BYTES} UTF-8 bytes` }
    out.push(c)
  }
  return { path: out.join('/') }
}

/** Field readers: each returns the value or undefined (absent or null when optional), or throws. */
class Reader {
  constructor (readonly id: RequestId | null, readonly m: Record<string, unknown>) {}

  private get (f: string, required: boolean): unknown {
    const x = this.m[f]
    if (x === undefined || x === null) {
      if (required) bad(this.id, f, 'a value (required)')
      return undefined
    }
    return x
  }

  int (f: string, required: boolean, min: number, max: number, what = `an integer in ${min}..${max}`): number | undefined {
    const x = this.get(f, required)
    if (x === undefined) return undefined
    if (typeof x !== 'number' || !Number.isInteger(x) || x < min || x > max) bad(this.id, f, what, x)
    return x
  }

  checkpoint (f: string, required: boolean): number | undefined {
    return this.int(f, required, 1, MAX_SAFE, 'a checkpoint id (a positive integer)')
  }

  str (f: string, required: boolean, minLen: number, maxLen: number): string | undefined {
    const x = this.get(f, required)
    if (x === undefined) return undefined
    if (typeof x !== 'string' || x.length < minLen || x.length > maxLen || !isWellFormed(x) || x.includes('\0')) {
      bad(this.id, f, `a string of ${minLen}..${maxLen} characters without NUL`, x)
    }
    return x
  }

  bool (f: string, required: boolean): boolean | undefined {
    const x = this.get(f, required)
    if (x === undefined) return undefined
    if (typeof x !== 'boolean') bad(this.id, f, 'a boolean', x)
    return x
  }

  path (f: string): string {
    const x = this.get(f, true)
    if (typeof x !== 'string' && !(x instanceof Uint8Array)) bad(this.id, f, 'a workspace path (string, or bytes for a path that is not UTF-8)', x)
    const r = normalizePath(x)
    if ('reason' in r) bad(this.id, f, r.reason, x)
    return r.path
  }

  /**
   * A list of workspace paths (each as by `path`, normalised), 1..MAX_PATHS
   * of them; the workspace root ('' or '/') is refused (a selective restore
   * of the root is the whole workspace: leave the list out).
   */
  paths (f: string): string[] | undefined {
    const x = this.get(f, false)
    if (x === undefined) return undefined
    if (!Array.isArray(x) || x.length === 0 || x.length > MAX_PATHS) bad(this.id, f, `a non-empty array of at most ${MAX_PATHS} workspace paths`, x)
    return (x as unknown[]).map((p, i) => {
      if (typeof p !== 'string' && !(p instanceof Uint8Array)) bad(this.id, `${f}[${i}]`, 'a workspace path (string, or bytes for a path that is not UTF-8)', p)
      const r = normalizePath(p)
      if ('reason' in r) bad(this.id, `${f}[${i}]`, r.reason, p)
      if (r.path === '') bad(this.id, `${f}[${i}]`, 'a path other than the workspace root (leave paths out to restore the whole workspace)', p)
      return r.path
    })
  }

  /** An absolute host path: starts with '/', no NUL, no '..' component, at most MAX_PATH_BYTES. */
  absPath (f: string): string {
    const x = this.get(f, true)
    if (typeof x !== 'string' || !x.startsWith('/')) bad(this.id, f, "an absolute path (starting with '/')", x)
    const r = normalizePath(x)
    if ('reason' in r) bad(this.id, f, r.reason, x)
    if (r.path === '') bad(this.id, f, 'an absolute path other than /', x)
    return '/' + r.path
  }

  /**
   * A rewind memory run name: 1..MAX_RUN_LENGTH characters, well-formed, no
   * control characters (U+0000..U+001F, U+007F) and no '!' (the store key
   * separator, store/FORMAT.md "Rewind memory").
   */
  run (f: string): string {
    const x = this.get(f, true)
    if (typeof x !== 'string' || x.length < 1 || x.length > MAX_RUN_LENGTH || !isWellFormed(x) || /[\u0000-\u001f\u007f!]/.test(x)) {
      bad(this.id, f, `a run name of 1..${MAX_RUN_LENGTH} characters without control characters or '!'`, x)
    }
    return x
  }

  /** A map value (not an array, not bytes), required, checked as by `value`. */
  object (f: string): Record<string, unknown> {
    const x = this.get(f, true)
    if (!isObject(x)) bad(this.id, f, 'an object', x)
    return this.checked(f, x) as Record<string, unknown>
  }

  /** Any value of the value model (proto/values.ts); absent and null both mean absent. */
  value (f: string): unknown {
    const x = this.get(f, false)
    return x === undefined ? undefined : this.checked(f, x)
  }

  private checked (f: string, x: unknown): unknown {
    try {
      return checkValue(x)
    } catch (e) {
      if (!(e instanceof ValueError)) throw e
      throw new ProtoError('E_BAD_REQUEST', `${f}: ${e.message}; a value holds only null, booleans, finite numbers, strings, bytes, arrays and maps with string keys (PROTOCOL.md "Values")`, this.id, { field: f, at: e.at })
    }
  }

  /** One of the strings in `list`. */
  oneOf<T extends string> (f: string, required: boolean, list: readonly T[]): T | undefined {
    const x = this.get(f, required)
    if (x === undefined) return undefined
    if (typeof x !== 'string' || !(list as readonly string[]).includes(x)) bad(this.id, f, `one of ${list.join(', ')}`, x)
    return x as T
  }

  /** A name or target: a string of 1..max characters, well-formed, no control characters. */
  name (f: string, required: boolean, max: number): string | undefined {
    const x = this.get(f, required)
    if (x === undefined) return undefined
    if (typeof x !== 'string' || x.length < 1 || x.length > max || !isWellFormed(x) || /[\u0000-\u001f\u007f]/.test(x)) bad(this.id, f, `a string of 1..${max} characters without control characters`, x)
    return x
  }

  /** An array of at most 100 JSON Pointers (RFC 6901), each starting with '/'. */
  pointers (f: string): string[] | undefined {
    const x = this.get(f, false)
    if (x === undefined) return undefined
    if (!Array.isArray(x) || x.length > 100 || !x.every(p => typeof p === 'string' && p.startsWith('/') && p.length <= 1024 && !/~[^01]|~$/.test(p))) bad(this.id, f, 'an array of at most 100 JSON Pointers (RFC 6901) such as "/timestamp"', x)
    return [...x] as string[]
  }

  /** An effect request {method?, body?}: method a name of 1..64 characters, body a value. */
  effectRequest (f: string): { method?: string; body?: unknown } | undefined {
    const x = this.get(f, false)
    if (x === undefined) return undefined
    if (!isObject(x)) bad(this.id, f, 'an object {method?, body?}', x)
    for (const k of Object.keys(x)) if (k !== 'method' && k !== 'body') bad(this.id, `${f}.${k}`, 'no such field (a request has method and body)')
    const inner = new Reader(this.id, x)
    const method = inner.name('method', false, 64)
    const body = x.body === undefined ? undefined : inner.value('body')
    return compact({ method, body })
  }

  events (f: string): EventName[] | undefined {
    const x = this.get(f, false)
    if (x === undefined) return undefined
    if (!Array.isArray(x) || x.length === 0 || x.length > EVENTS.length || !x.every(isEventName)) {
      bad(this.id, f, `a non-empty array of event names (${EVENTS.join(', ')})`, x)
    }
    return [...new Set(x as EventName[])]
  }
}

/** Longest effect tool name, UTF-16 code units. */
export const MAX_TOOL_LENGTH = 200
/** Longest effect target, UTF-16 code units. */
export const MAX_TARGET_LENGTH = 4096
/** Longest request identity given by a caller, UTF-16 code units. */
export const MAX_IDENTITY_LENGTH = 512
/** Largest timeoutMs of effect_begin, ms (1 day). */
export const MAX_EFFECT_TIMEOUT_MS = 24 * 60 * 60 * 1000

function occurrence (r: Reader): number {
  return r.int('occurrence', true, 1, MAX_SAFE, 'an occurrence id (a positive integer)')!
}

/** The fields effect_begin and effect_compensate share. */
function effectBegin (r: Reader): { tool: string; target: string; request?: { method?: string; body?: unknown }; identity?: string; run?: string; attempt?: number; preState?: unknown; timeoutMs?: number } {
  const out = {
    tool: r.name('tool', true, MAX_TOOL_LENGTH)!,
    target: r.name('target', true, MAX_TARGET_LENGTH)!,
    request: r.effectRequest('request'),
    identity: r.name('identity', false, MAX_IDENTITY_LENGTH),
    run: r.name('run', false, MAX_RUN_LENGTH),
    attempt: r.int('attempt', false, 0, MAX_SAFE, 'an attempt number (a non-negative integer)'),
    preState: r.value('preState'),
    timeoutMs: r.int('timeoutMs', false, 1, MAX_EFFECT_TIMEOUT_MS, `a duration in 1..${MAX_EFFECT_TIMEOUT_MS} ms`),
  }
  if (out.request !== undefined && out.identity !== undefined) bad(r.id, 'identity', 'either identity or request, not both')
  return out
}

/** Drop keys whose value is undefined, so the api sees only given arguments. */
function compact<T extends Record<string, unknown>> (o: T): T {
  for (const k of Object.keys(o)) if (o[k] === undefined) delete o[k]
  return o
}

/** Read the id of a message if it is valid, else null (for error replies to undecodable requests). */
export function peekId (msg: unknown): RequestId | null {
  return isObject(msg) && isRequestIdValue(msg.id) ? msg.id : null
}

/**
 * Validate a decoded message as a request. Returns a new object holding only
 * the known fields (never the input object), with paths normalised.
 * Throws ProtoError (see the module comment).
 */
export function validateRequest (msg: unknown): Request {
  if (!isObject(msg)) bad(null, 'message', 'an object {v, id, op, ...}', msg)
  if (!isRequestIdValue(msg.id)) bad(null, 'id', 'a non-negative safe integer or a string of 1..128 characters', msg.id)
  const id = msg.id
  const v = msg.v
  if (typeof v !== 'number' || !Number.isInteger(v)) bad(id, 'v', 'an integer protocol version', v)
  if (!SUPPORTED_VERSIONS.includes(v)) {
    throw new ProtoError('E_UNSUPPORTED_VERSION', `v: version ${v} not supported; supported: ${SUPPORTED_VERSIONS.join(', ')}`, id, { supported: [...SUPPORTED_VERSIONS] })
  }
  const op = msg.op
  if (typeof op !== 'string') bad(id, 'op', 'an operation name (string)', op)
  if (!isOp(op)) throw new ProtoError('E_UNKNOWN_OP', `op: unknown operation ${describe(op)}`, id, { ops: [...OPS] })
  const allowed = FIELDS[op]
  for (const k of Object.keys(msg)) {
    if (!ENVELOPE.includes(k) && !allowed.includes(k)) {
      throw new ProtoError('E_BAD_REQUEST', `${k}: unknown field for ${op} (its fields: ${allowed.join(', ') || 'none'})`, id, { field: k })
    }
  }
  const r = new Reader(id, msg)
  const env = { v, id, op }
  switch (op) {
    case 'hello': return compact({ ...env, op, client: r.str('client', false, 0, MAX_CLIENT_LENGTH) })
    case 'status': return { ...env, op }
    case 'mark': return compact({ ...env, op, label: r.str('label', false, 0, MAX_LABEL_LENGTH), context: r.value('context'), meta: r.value('meta') })
    case 'restore': return compact({ ...env, op, checkpoint: r.checkpoint('checkpoint', true)!, paths: r.paths('paths'), dryRun: r.bool('dryRun', false) })
    case 'log': return compact({ ...env, op, branch: r.str('branch', false, 1, MAX_BRANCH_LENGTH), limit: r.int('limit', false, 1, MAX_LOG_LIMIT) })
    case 'diff': return compact({ ...env, op, a: r.checkpoint('a', true)!, b: r.checkpoint('b', false) })
    case 'stat': return compact({ ...env, op, checkpoint: r.checkpoint('checkpoint', false), path: r.path('path') })
    case 'readdir': return compact({ ...env, op, checkpoint: r.checkpoint('checkpoint', false), path: r.path('path') })
    case 'read': return compact({
      ...env,
      op,
      checkpoint: r.checkpoint('checkpoint', false),
      path: r.path('path'),
      offset: r.int('offset', false, 0, MAX_SAFE, 'a byte offset (a non-negative safe integer)'),
      length: r.int('length', false, 0, MAX_READ_LENGTH, `a byte length in 0..${MAX_READ_LENGTH}`),
    })
    case 'context': return { ...env, op, checkpoint: r.checkpoint('checkpoint', true)! }
    case 'candidates': return compact({ ...env, op, limit: r.int('limit', false, 1, MAX_CANDIDATES) })
    case 'memory_add': return { ...env, op, run: r.run('run'), entry: r.object('entry') }
    case 'memory_get': return { ...env, op, run: r.run('run') }
    case 'export': return { ...env, op, checkpoint: r.checkpoint('checkpoint', true)!, dir: r.absPath('dir') }
    case 'unmount': return compact({ ...env, op, discard: r.bool('discard', false) })
    case 'subscribe': return compact({ ...env, op, events: r.events('events') })
    case 'pin': return compact({ ...env, op, checkpoint: r.checkpoint('checkpoint', true)!, pinned: r.bool('pinned', false) })
    case 'run_end': return { ...env, op, run: r.run('run') }
    case 'gc': return compact({
      ...env,
      op,
      keepLast: r.int('keepLast', false, 0, MAX_SAFE, 'a number of checkpoints (a non-negative safe integer)'),
      abandonedAfterMs: r.int('abandonedAfterMs', false, 0, MAX_SAFE, 'a duration in ms (a non-negative safe integer)'),
      runIdleMs: r.int('runIdleMs', false, 0, MAX_SAFE, 'a duration in ms (a non-negative safe integer)'),
      dryRun: r.bool('dryRun', false),
    })
    case 'undo': return compact({ ...env, op, checkpoint: r.checkpoint('checkpoint', true)!, dryRun: r.bool('dryRun', false) })
    case 'history': return compact({ ...env, op, path: r.path('path'), all: r.bool('all', false), limit: r.int('limit', false, 1, MAX_LOG_LIMIT), meta: r.bool('meta', false) })
    case 'call_begin': return compact({ ...env, op, tool: r.name('tool', true, MAX_TOOL_LENGTH)!, args: r.value('args'), pid: r.int('pid', true, 1, MAX_PID, `a process id in 1..${MAX_PID}`)! })
    case 'call_end': return compact({ ...env, op, call: r.int('call', true, 1, MAX_SAFE, 'a call id (a positive integer)')!, exitStatus: r.int('exitStatus', false, -MAX_EXIT, MAX_EXIT, `an exit status in -${MAX_EXIT}..${MAX_EXIT}`) })
    case 'effect_register': return compact({ ...env, op, tool: r.name('tool', true, MAX_TOOL_LENGTH)!, class: r.oneOf('class', true, EFFECT_CLASSES)!, exclude: r.pointers('exclude'), description: r.str('description', false, 0, 2000) })
    case 'effect_begin': return compact({ ...env, op, ...effectBegin(r) })
    case 'effect_compensate': return compact({ ...env, op, compensates: r.int('compensates', true, 1, MAX_SAFE, 'an occurrence id (a positive integer)')!, ...effectBegin(r) })
    case 'effect_gate': return compact({ ...env, op, tool: r.name('tool', true, MAX_TOOL_LENGTH)!, target: r.name('target', true, MAX_TARGET_LENGTH)!, request: r.effectRequest('request'), identity: r.name('identity', false, MAX_IDENTITY_LENGTH) })
    case 'effect_sent': return compact({ ...env, op, occurrence: occurrence(r), evidence: r.value('evidence') })
    case 'effect_complete': return compact({ ...env, op, occurrence: occurrence(r), status: r.oneOf('status', true, ['confirmed', 'failed', 'unknown'] as const)!, evidence: r.value('evidence') })
    case 'effect_reconcile': return compact({ ...env, op, occurrence: occurrence(r), verdict: r.oneOf('verdict', true, RECONCILE_VERDICTS)!, evidence: r.value('evidence') })
    case 'effect_list': return compact({ ...env, op, run: r.name('run', false, MAX_RUN_LENGTH), branch: r.str('branch', false, 1, MAX_BRANCH_LENGTH), status: r.oneOf('status', false, EFFECT_STATUSES), target: r.name('target', false, MAX_TARGET_LENGTH), limit: r.int('limit', false, 1, MAX_LOG_LIMIT) })
  }
}
