/**
 * Unit tests of proto/: validation of every op, path rules, the codec (raw
 * bytes into the decoder), error codes; and daemon/token.ts file permissions.
 */
import t, { type Test } from 'tap'
import { promises as fs } from 'node:fs'
import * as os from 'node:os'
import * as path from 'node:path'
import { codec, fromBase64, reviveBytes, toBase64 } from '../../proto/codec.js'
import { ApiError, ERROR_CODES, isErrorCode, ProtoError } from '../../proto/errors.js'
import { OPS } from '../../proto/messages.js'
import { MAX_READ_LENGTH, normalizePath, validateRequest } from '../../proto/validate.js'
import { PROTOCOL_VERSION } from '../../proto/version.js'
import { loadOrCreateToken, readTokenFile, TokenError, tokenPath, writeTokenFile } from '../../daemon/token.js'

const v = PROTOCOL_VERSION

function rejects (t: Test, msg: unknown, code: string, field?: string): void {
  try {
    validateRequest(msg)
    t.fail(`accepted ${JSON.stringify(msg)}`)
  } catch (err) {
    t.ok(err instanceof ProtoError, 'ProtoError')
    t.equal((err as ProtoError).code, code, `${JSON.stringify(msg)} → ${code}`)
    if (field !== undefined) t.match((err as ProtoError).message, field, 'message names the field')
  }
}

t.test('every op validates with its documented arguments', async t => {
  const good: Record<string, object> = {
    hello: { client: 'py/1' },
    status: {},
    mark: { label: 'x', context: { a: [1] }, meta: null },
    restore: { checkpoint: 3 },
    log: { branch: 'main', limit: 5 },
    diff: { a: 1, b: 2 },
    stat: { checkpoint: 1, path: 'a/b' },
    readdir: { path: '' },
    read: { path: 'f', offset: 0, length: MAX_READ_LENGTH },
    context: { checkpoint: 1 },
    candidates: { limit: 80 },
    memory_add: { run: 'run-1', entry: { tried: 'x' } },
    memory_get: { run: 'run-1' },
    export: { checkpoint: 1, dir: '/tmp/out' },
    unmount: { discard: true },
    subscribe: { events: ['checkpoint'] },
    pin: { checkpoint: 2, pinned: false },
    run_end: { run: 'run-1' },
    gc: { keepLast: 0, abandonedAfterMs: 0, runIdleMs: 3600000, dryRun: true },
    undo: { checkpoint: 4, dryRun: true },
    history: { path: 'src/a.ts', all: true, limit: 10, meta: true },
    call_begin: { tool: 'exec', args: ['npm', 'test'], pid: 1234 },
    call_end: { call: 1, exitStatus: 0 },
    effect_register: { tool: 'create_ticket', class: 'compensable', exclude: ['/sent_at'], description: 'POST /tickets' },
    effect_begin: { tool: 'create_ticket', target: 'http://127.0.0.1:1/tickets', request: { method: 'POST', body: { title: 'a' } }, run: 'run-1', attempt: 1, preState: { count: 0 }, timeoutMs: 1000 },
    effect_compensate: { compensates: 3, tool: 'delete_ticket', target: 'http://127.0.0.1:1/tickets/1', identity: 'del-1' },
    effect_gate: { tool: 'create_ticket', target: 'http://127.0.0.1:1/tickets', identity: 'k' },
    effect_sent: { occurrence: 3 },
    effect_complete: { occurrence: 3, status: 'confirmed', evidence: { http: 201 } },
    effect_reconcile: { occurrence: 3, verdict: 'absent', evidence: { listed: [] } },
    effect_list: { run: 'run-1', branch: 'main', status: 'unknown', target: 'x', limit: 5 },
  }
  t.same(Object.keys(good).sort(), [...OPS].sort(), 'all ops covered')
  for (const [op, args] of Object.entries(good)) {
    const r = validateRequest({ v, id: 7, op, ...args })
    t.equal(r.op, op)
    t.equal(r.id, 7)
  }
  const m = validateRequest({ v, id: 'a', op: 'mark', label: null, meta: null })
  t.same(m, { v, id: 'a', op: 'mark' }, 'null optional fields are dropped')
})

t.test('envelope errors', async t => {
  rejects(t, [1, 2], 'E_BAD_REQUEST', 'message')
  rejects(t, 'x', 'E_BAD_REQUEST')
  rejects(t, { v, op: 'status' }, 'E_BAD_REQUEST', 'id')
  rejects(t, { v, id: -1, op: 'status' }, 'E_BAD_REQUEST', 'id')
  rejects(t, { v, id: 1.5, op: 'status' }, 'E_BAD_REQUEST', 'id')
  rejects(t, { v, id: '', op: 'status' }, 'E_BAD_REQUEST', 'id')
  rejects(t, { id: 1, op: 'status' }, 'E_BAD_REQUEST', 'v')
  rejects(t, { v: 99, id: 1, op: 'status' }, 'E_UNSUPPORTED_VERSION')
  rejects(t, { v, id: 1 }, 'E_BAD_REQUEST', 'op')
  rejects(t, { v, id: 1, op: 'format' }, 'E_UNKNOWN_OP')
  rejects(t, { v, id: 1, op: 'status', extra: 1 }, 'E_BAD_REQUEST', 'extra')
  try { validateRequest({ v, id: 9, op: 'nope' }) } catch (err) { t.equal((err as ProtoError).id, 9, 'id kept in the error') }
})

t.test('field types and ranges', async t => {
  rejects(t, { v, id: 1, op: 'gc', keepLast: -1 }, 'E_BAD_REQUEST', 'keepLast')
  rejects(t, { v, id: 1, op: 'gc', abandonedAfterMs: '7d' }, 'E_BAD_REQUEST', 'abandonedAfterMs')
  rejects(t, { v, id: 1, op: 'gc', dryRun: 'yes' }, 'E_BAD_REQUEST', 'dryRun')
  rejects(t, { v, id: 1, op: 'gc', keep: 3 }, 'E_BAD_REQUEST', 'keep')
  rejects(t, { v, id: 1, op: 'pin' }, 'E_BAD_REQUEST', 'checkpoint')
  rejects(t, { v, id: 1, op: 'run_end', run: 'a!b' }, 'E_BAD_REQUEST', 'run')
  rejects(t, { v, id: 1, op: 'restore' }, 'E_BAD_REQUEST', 'checkpoint')
  t.same(validateRequest({ v, id: 1, op: 'restore', checkpoint: 3, paths: ['/src//a.ts', 'b/./c'], dryRun: true }),
    { v, id: 1, op: 'restore', checkpoint: 3, paths: ['src/a.ts', 'b/c'], dryRun: true }, 'restore paths are normalised')
  rejects(t, { v, id: 1, op: 'restore', checkpoint: 3, paths: [] }, 'E_BAD_REQUEST', 'paths')
  rejects(t, { v, id: 1, op: 'restore', checkpoint: 3, paths: 'a' }, 'E_BAD_REQUEST', 'paths')
  rejects(t, { v, id: 1, op: 'restore', checkpoint: 3, paths: ['a', '/'] }, 'E_BAD_REQUEST', 'workspace root')
  rejects(t, { v, id: 1, op: 'restore', checkpoint: 3, paths: ['../x'] }, 'E_BAD_REQUEST', 'paths[0]')
  rejects(t, { v, id: 1, op: 'restore', checkpoint: 3, dryRun: 1 }, 'E_BAD_REQUEST', 'dryRun')
  rejects(t, { v, id: 1, op: 'undo' }, 'E_BAD_REQUEST', 'checkpoint')
  rejects(t, { v, id: 1, op: 'history' }, 'E_BAD_REQUEST', 'path')
  rejects(t, { v, id: 1, op: 'history', path: 'a', limit: 0 }, 'E_BAD_REQUEST', 'limit')
  rejects(t, { v, id: 1, op: 'history', path: 'a', all: 'yes' }, 'E_BAD_REQUEST', 'all')
  rejects(t, { v, id: 1, op: 'restore', checkpoint: '3' }, 'E_BAD_REQUEST', 'checkpoint')
  rejects(t, { v, id: 1, op: 'restore', checkpoint: 0 }, 'E_BAD_REQUEST', 'checkpoint')
  rejects(t, { v, id: 1, op: 'restore', checkpoint: 2 ** 53 }, 'E_BAD_REQUEST', 'checkpoint')
  rejects(t, { v, id: 1, op: 'mark', label: 5 }, 'E_BAD_REQUEST', 'label')
  rejects(t, { v, id: 1, op: 'mark', label: 'x'.repeat(1025) }, 'E_BAD_REQUEST', 'label')
  rejects(t, { v, id: 1, op: 'log', limit: 0 }, 'E_BAD_REQUEST', 'limit')
  rejects(t, { v, id: 1, op: 'log', branch: '' }, 'E_BAD_REQUEST', 'branch')
  rejects(t, { v, id: 1, op: 'diff', a: 1, b: 'x' }, 'E_BAD_REQUEST', 'b')
  rejects(t, { v, id: 1, op: 'read', path: 'f', length: MAX_READ_LENGTH + 1 }, 'E_BAD_REQUEST', 'length')
  rejects(t, { v, id: 1, op: 'read', path: 'f', offset: -1 }, 'E_BAD_REQUEST', 'offset')
  rejects(t, { v, id: 1, op: 'stat', path: 3 }, 'E_BAD_REQUEST', 'path')
  rejects(t, { v, id: 1, op: 'stat' }, 'E_BAD_REQUEST', 'path')
  rejects(t, { v, id: 1, op: 'export', checkpoint: 1, dir: 'rel' }, 'E_BAD_REQUEST', 'dir')
  rejects(t, { v, id: 1, op: 'export', checkpoint: 1, dir: '/a/../b' }, 'E_BAD_REQUEST', 'dir')
  rejects(t, { v, id: 1, op: 'unmount', discard: 'yes' }, 'E_BAD_REQUEST', 'discard')
  rejects(t, { v, id: 1, op: 'subscribe', events: ['mark'] }, 'E_BAD_REQUEST', 'events')
  rejects(t, { v, id: 1, op: 'subscribe', events: [] }, 'E_BAD_REQUEST', 'events')
  rejects(t, { v, id: 1, op: 'restore', id2: 1, checkpoint: 1 }, 'E_BAD_REQUEST', 'id2')
})

t.test('paths', async t => {
  const ok: Array<[string, string]> = [['', ''], ['/', ''], ['.', ''], ['a', 'a'], ['/a/b/', 'a/b'], ['a//./b', 'a/b'], ['a/..b', 'a/..b'], ['a\\b', 'a\\b']]
  for (const [p, n] of ok) t.same(normalizePath(p), { path: n }, `${JSON.stringify(p)} → ${JSON.stringify(n)}`)
  for (const p of ['..', '../x', 'a/../b', '/abs/../..', 'a/..', 'a\0b', 'x'.repeat(256), 'a/' + 'b'.repeat(4095), '\ud800']) {
    t.ok('reason' in normalizePath(p), `${JSON.stringify(p.slice(0, 20))} refused`)
    rejects(t, { v, id: 1, op: 'read', path: p }, 'E_BAD_REQUEST', 'path')
  }
})

t.test('codec: raw bytes into the decoder', async t => {
  const msg = { v, id: 1, op: 'read', path: 'f' }
  const bin = codec.encode(msg, 'msgpack')
  t.ok(bin instanceof Uint8Array)
  t.same(codec.decode(bin, true), { msg, encoding: 'msgpack' })
  const txt = codec.encode(msg, 'json')
  t.equal(typeof txt, 'string')
  t.same(codec.decode(new TextEncoder().encode(txt as string), false), { msg, encoding: 'json' })
  for (const raw of [[0x81], [0x92, 1], [0x01, 0x02], []]) {
    t.throws(() => codec.decode(new Uint8Array(raw), true), { code: 'E_BAD_REQUEST' }, `msgpack ${JSON.stringify(raw)}`)
  }
  t.throws(() => codec.decode('{"v":1,', false), { code: 'E_BAD_REQUEST' })
  t.throws(() => codec.decode(new Uint8Array([0x22, 0xff, 0x22]), false), { code: 'E_BAD_REQUEST' }, 'bad UTF-8')
  // bytes results
  const bytes = new Uint8Array([0, 1, 2, 250, 251, 252, 253])
  const j = codec.encode({ id: 1, ok: bytes }, 'json') as string
  t.same(JSON.parse(j), { id: 1, ok: toBase64(bytes), encoding: 'base64' })
  const back = reviveBytes(codec.decode(j, false).msg) as { ok: Uint8Array }
  t.same([...back.ok], [...bytes])
  const m = codec.decode(codec.encode({ id: 1, ok: bytes }, 'msgpack'), true).msg as { ok: Uint8Array }
  t.ok(m.ok instanceof Uint8Array, 'msgpack bin stays bytes')
  t.same([...m.ok], [...bytes])
  for (let n = 0; n < 40; n++) {
    const b = new Uint8Array(n).map((_, i) => (i * 37 + n) & 255)
    t.equal(toBase64(b), Buffer.from(b).toString('base64'), `base64 of ${n} bytes`)
    t.same([...fromBase64(toBase64(b))], [...b])
  }
})

t.test('errors', async t => {
  for (const c of ['E_BAD_REQUEST', 'E_UNSUPPORTED_VERSION', 'E_UNKNOWN_OP', 'E_UNAUTHORIZED', 'E_TOO_LARGE', 'E_UNKNOWN_CHECKPOINT', 'E_NOT_FOUND', 'E_BUSY', 'E_NO_SPACE', 'E_IO', 'E_CORRUPT', 'E_INTERNAL', 'E_NOT_MOUNTED']) {
    t.ok(isErrorCode(c), c)
    t.equal(typeof ERROR_CODES[c as keyof typeof ERROR_CODES], 'string')
  }
  t.notOk(isErrorCode('E_NOPE'))
  const e = new ApiError('E_BUSY', 'busy', { op: 'mark' })
  t.same(e.toWire(), { code: 'E_BUSY', message: 'busy', details: { op: 'mark' } })
})

t.test('token file', async t => {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'rewind-token-'))
  t.teardown(() => fs.rm(dir, { recursive: true, force: true }))
  const tok = await loadOrCreateToken(dir)
  t.match(tok, /^[0-9a-f]{64}$/)
  const st = await fs.stat(tokenPath(dir))
  t.equal(st.mode & 0o777, 0o600, 'created 0600')
  t.equal(await loadOrCreateToken(dir), tok, 'read back')
  for (const mode of [0o640, 0o604, 0o620, 0o660]) {
    await fs.chmod(tokenPath(dir), mode)
    await t.rejects(readTokenFile(tokenPath(dir)), TokenError, `mode ${mode.toString(8)} refused`)
    await t.rejects(loadOrCreateToken(dir), /group or others/, 'not silently replaced')
  }
  await fs.chmod(tokenPath(dir), 0o600)
  await fs.writeFile(tokenPath(dir), 'short\n')
  await t.rejects(readTokenFile(tokenPath(dir)), TokenError, { reason: 'malformed' })
  await fs.symlink(tokenPath(dir), path.join(dir, 'link'))
  await t.rejects(readTokenFile(path.join(dir, 'link')), /symbolic link/)
  await t.rejects(readTokenFile(path.join(dir, 'none')), TokenError, { reason: 'missing' })
  const t2 = await writeTokenFile(tokenPath(dir))
  t.equal(await readTokenFile(tokenPath(dir)), t2, 'rewritten')
})
