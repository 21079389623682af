/**
 * The websocket server and RewindClient over a real loopback server, with a
 * fake in-memory RewindApi that records every call.
 */
import t, { type Test } from 'tap'
import { promises as fs } from 'node:fs'
import { get } from 'node:http'
import * as os from 'node:os'
import * as path from 'node:path'
import { WebSocket } from 'ws'
import type { CheckpointInfo, GcPolicy, GcReport, RestoreInfo, RewindApi, UndoInfo, PathHistoryEntry, StatInfo, StatusInfo } from '../../daemon/api.js'
import { startServer, type RewindServer } from '../../daemon/server.js'
import { writeConnectionFile, writeTokenFile, tokenPath } from '../../daemon/token.js'
import { ApiError } from '../../proto/errors.js'
import { PROTOCOL_VERSION } from '../../proto/version.js'
import { codec, reviveBytes } from '../../proto/codec.js'
import { RewindClient, RewindError, TimeoutError, ConnectionError } from '../../client/client.js'

const TOKEN = 'ab'.repeat(32)
const v = PROTOCOL_VERSION

/** A fake RewindApi: checkpoints in memory, every call recorded as [method, args]. */
class FakeApi implements RewindApi {
  calls: Array<[string, unknown]> = []
  cps: CheckpointInfo[] = []
  contexts = new Map<number, unknown>()
  hang = false
  failWith: unknown = null

  private rec (m: string, a: unknown): void {
    this.calls.push([m, a])
    if (this.failWith !== null) throw this.failWith
  }

  private find (id: number): CheckpointInfo {
    const c = this.cps.find(c => c.id === id)
    if (c === undefined) throw new ApiError('E_UNKNOWN_CHECKPOINT', `no checkpoint ${id}`, { id })
    return c
  }

  private st (p: string): StatInfo {
    return { path: p, type: 'file', mode: 0o100644, uid: 1, gid: 1, size: 5, nlink: 1, ino: 2, mtimeNs: '1700000000000000001', atimeNs: '1', ctimeNs: '2' }
  }

  async status (): Promise<StatusInfo> {
    this.rec('status', undefined)
    if (this.hang) await new Promise(() => {})
    return { workspace: '/w', store: '/s', branch: 'main', head: null, generation: 1, checkpoints: this.cps.length, inodes: 1, dirtyBytes: 0, dirtyInodes: 0, pid: process.pid, protocol: v }
  }

  async mark (req: { label?: string; context?: unknown; meta?: unknown }): Promise<CheckpointInfo> {
    this.rec('mark', req)
    const id = this.cps.length + 1
    const c: CheckpointInfo = { id, label: req.label ?? null, time: Date.now(), generation: id, branch: 'main', parent: id > 1 ? id - 1 : null, inodes: 1, dirtyBytes: 0, ms: 1, pinned: false }
    this.cps.push(c)
    this.contexts.set(id, req.context ?? null)
    return c
  }

  async restore (req: { id: number }): Promise<RestoreInfo> {
    this.rec('restore', req)
    this.find(req.id)
    return { checkpoint: req.id, branch: 'b1', changed: 3, ms: 2, saved: null, recovery: { trajectory: 'no context' as const, workspace: 'restored' as const, effects: 'none' as const, abandoned: [] } }
  }

  async undo (req: { id: number; dryRun?: boolean }): Promise<UndoInfo> {
    this.rec('undo', req)
    this.find(req.id)
    return { checkpoint: req.id, from: req.id - 1, segment: [{ path: '/f', change: 'modified' }], conflicts: [], skipped: [], applied: req.dryRun !== true, dryRun: req.dryRun === true, restore: null }
  }

  async history (req: { path: string; all?: boolean; limit?: number }): Promise<PathHistoryEntry[]> {
    this.rec('history', req)
    return [{ checkpoint: 2, parent: 1, branch: 'main', time: 1, label: null, change: 'modified', type: 'file', size: 5, sizeBefore: 3 }]
  }

  async pin (req: { id: number; pinned: boolean }): Promise<CheckpointInfo> {
    this.rec('pin', req)
    const c = this.find(req.id)
    c.pinned = req.pinned
    return c
  }

  async runEnd (req: { run: string }): Promise<{ run: string; ended: number }> {
    this.rec('runEnd', req)
    return { run: req.run, ended: 1 }
  }

  async gc (req: Partial<GcPolicy>): Promise<GcReport> {
    this.rec('gc', req)
    return {
      dryRun: req.dryRun ?? false,
      policy: { keepLast: req.keepLast ?? 50, abandonedAfterMs: req.abandonedAfterMs ?? 0, runIdleMs: req.runIdleMs ?? 0 },
      checkpoints: { before: this.cps.length, kept: this.cps.length, removed: [] },
      branches: { removed: [] },
      frozen: 0,
      nodes: 0,
      contexts: 0,
      blocks: { removed: 0, bytes: 0 },
      packs: { deleted: 0, compacted: 0, notCompacted: [] },
      bytes: { packsBefore: 0, packsAfter: 0, metaBefore: 0, metaAfter: 0, returned: 0 },
      ms: 0
    }
  }

  async log (req: { branch?: string; limit?: number }): Promise<CheckpointInfo[]> {
    this.rec('log', req)
    return [...this.cps].reverse().slice(0, req.limit ?? 100)
  }

  async diff (req: { a: number; b?: number }) {
    this.rec('diff', req)
    this.find(req.a)
    return [{ path: 'f', change: 'modified' as const }]
  }

  async stat (req: { id?: number; path: string }): Promise<StatInfo | null> {
    this.rec('stat', req)
    return req.path === 'missing' ? null : this.st(req.path)
  }

  async readdir (req: { id?: number; path: string }): Promise<StatInfo[]> {
    this.rec('readdir', req)
    return [this.st('a'), this.st('b')]
  }

  async read (req: { id?: number; path: string; offset?: number; length?: number }): Promise<Uint8Array> {
    this.rec('read', req)
    const all = new Uint8Array(256).map((_, i) => i)
    const off = req.offset ?? 0
    return all.subarray(off, off + (req.length ?? 256))
  }

  async context (req: { id: number }): Promise<unknown> {
    this.rec('context', req)
    this.find(req.id)
    return this.contexts.get(req.id)
  }

  async candidates (req: { limit?: number }) {
    this.rec('candidates', req)
    return [...this.cps].reverse().slice(0, req.limit ?? 80).map((c, i, a) => ({ id: c.id, step: a.length - 1 - i, label: c.label, time: c.time, branch: c.branch, meta: null }))
  }

  async memoryAdd (req: { run: string; entry: Record<string, unknown> }) {
    this.rec('memoryAdd', req)
    return { count: 1 }
  }

  async memoryGet (req: { run: string }) {
    this.rec('memoryGet', req)
    return { entries: [] }
  }

  async export (req: { id: number; dir: string }) {
    this.rec('export', req)
    return { files: 2, bytes: 10 }
  }

  async unmount (req: { discard?: boolean }) {
    this.rec('unmount', req)
    return { discarded: req.discard === true }
  }
}

async function setup (t: Test, opts: { maxPayload?: number } = {}): Promise<{ api: FakeApi; server: RewindServer; url: string }> {
  const api = new FakeApi()
  const server = await startServer({ api, token: TOKEN, ...opts })
  t.teardown(() => server.close())
  return { api, server, url: `ws://127.0.0.1:${server.port}/` }
}

/** A raw websocket with the token; `next()` resolves the next decoded message. */
async function raw (url: string, headers: Record<string, string> = { Authorization: `Bearer ${TOKEN}` }) {
  const ws = new WebSocket(url, { headers })
  const queue: unknown[] = []
  const waiters: Array<(m: unknown) => void> = []
  ws.on('message', (d: Buffer, isBinary: boolean) => {
    const m = reviveBytes(codec.decode(d, isBinary).msg)
    const w = waiters.shift()
    if (w !== undefined) w(m); else queue.push(m)
  })
  await new Promise<void>((resolve, reject) => { ws.once('open', () => resolve()); ws.once('error', reject) })
  return {
    ws,
    next: () => new Promise<any>(resolve => { const m = queue.shift(); if (m !== undefined) resolve(m); else waiters.push(resolve) }),
    close: () => ws.close(),
  }
}

/** Status code of a refused upgrade. */
function refusedStatus (url: string, headers: Record<string, string>): Promise<number> {
  return new Promise(resolve => {
    const ws = new WebSocket(url, { headers })
    ws.on('unexpected-response', (_req, res) => { resolve(res.statusCode ?? 0); ws.terminate() })
    ws.on('error', () => {})
    ws.on('open', () => { resolve(101); ws.close() })
  })
}

for (const encoding of ['msgpack', 'json'] as const) {
  t.test(`every op through the client (${encoding})`, async t => {
    const { api, url } = await setup(t)
    const c = await RewindClient.connect({ url, token: TOKEN, encoding })
    t.teardown(() => c.close())
    t.equal(c.server?.protocol, v)
    const h = await c.hello({ client: 'test' })
    t.ok(h.ops.includes('subscribe'))
    t.equal(h.maxPayload, 64 * 1024 * 1024)
    t.equal((await c.status()).workspace, '/w')
    const m1 = await c.mark({ label: 'one', context: { messages: ['hi', { n: 1 }] }, meta: { tools: [] } })
    t.equal(m1.id, 1)
    t.equal(m1.label, 'one')
    const m2 = await c.mark()
    t.equal(m2.label, null)
    t.same(api.calls.at(-1), ['mark', {}], 'absent fields not passed')
    t.same(await c.restore({ id: 1 }), { checkpoint: 1, branch: 'b1', changed: 3, ms: 2, saved: null, recovery: { trajectory: 'no context', workspace: 'restored', effects: 'none', abandoned: [] } })
    t.same(api.calls.at(-1), ['restore', { id: 1 }], 'wire checkpoint → api id')
    await c.restore({ id: 1, paths: ['/src//a.ts'], dryRun: true })
    t.same(api.calls.at(-1), ['restore', { id: 1, paths: ['src/a.ts'], dryRun: true }], 'restore paths and dryRun reach the api, normalised')
    t.equal((await c.undo({ id: 2, dryRun: true })).dryRun, true)
    t.same(api.calls.at(-1), ['undo', { id: 2, dryRun: true }], 'undo: wire checkpoint → api id')
    t.equal((await c.history({ path: '/src/', all: true })).length, 1)
    t.same(api.calls.at(-1), ['history', { path: 'src', all: true }], 'history: path normalised')
    t.same((await c.log({ limit: 1 })).map(x => x.id), [2])
    t.same(await c.diff({ a: 1 }), [{ path: 'f', change: 'modified' }])
    const s = await c.stat({ path: '/dir/./f', id: 2 })
    t.equal(s?.mtimeNs, '1700000000000000001')
    t.same(api.calls.at(-1), ['stat', { id: 2, path: 'dir/f' }], 'path normalised')
    t.equal(await c.stat({ path: 'missing' }), null)
    t.equal((await c.readdir({ path: '/' })).length, 2)
    t.same(api.calls.at(-1), ['readdir', { path: '' }], 'root is ""')
    const bytes = await c.read({ path: 'f', offset: 250, length: 10 })
    t.ok(bytes instanceof Uint8Array, 'read gives bytes')
    t.same([...bytes], [250, 251, 252, 253, 254, 255])
    t.same(await c.context({ id: 1 }), { messages: ['hi', { n: 1 }] })
    t.equal(await c.context({ id: 2 }), null)
    t.same(await c.export({ id: 1, dir: '/tmp/x' }), { files: 2, bytes: 10 })
    t.same(api.calls.at(-1), ['export', { id: 1, dir: '/tmp/x' }])
    t.same(await c.unmount({ discard: true }), { discarded: true })
    t.same(await c.subscribe(), { events: ['checkpoint', 'restore'] })
  })

  t.test(`raw frames (${encoding})`, async t => {
    const { url } = await setup(t)
    const r = await raw(url)
    t.teardown(() => r.close())
    const send = (m: unknown): void => { const f = codec.encode(m, encoding); r.ws.send(f, { binary: typeof f !== 'string' }) }
    send({ v, id: 1, op: 'read', path: 'f', length: 3 })
    const rep = await r.next()
    t.same(rep.id, 1)
    t.same([...rep.ok], [0, 1, 2], 'bytes in ' + encoding)
    send({ v, id: 'abc', op: 'status' })
    t.equal((await r.next()).id, 'abc', 'string ids echoed')
  })
}

t.test('malformed, unknown and invalid requests never reach the api', async t => {
  const { api, url } = await setup(t)
  const r = await raw(url)
  t.teardown(() => r.close())
  r.ws.send('{"v":1,"id":')
  let rep = await r.next()
  t.same(rep.id, null)
  t.equal(rep.error.code, 'E_BAD_REQUEST', 'malformed JSON')
  r.ws.send(Buffer.from([0x82, 0xa1]), { binary: true })
  rep = await r.next()
  t.same(rep.id, null)
  t.equal(rep.error.code, 'E_BAD_REQUEST', 'malformed msgpack')
  r.ws.send(Buffer.from([0xc1]), { binary: true })
  t.equal((await r.next()).error.code, 'E_BAD_REQUEST', 'msgpack never-used byte')
  r.ws.send('[1,2]')
  t.equal((await r.next()).error.code, 'E_BAD_REQUEST', 'not an object')
  r.ws.send(JSON.stringify({ v, id: 5, op: 'frobnicate' }))
  rep = await r.next()
  t.same([rep.id, rep.error.code], [5, 'E_UNKNOWN_OP'])
  r.ws.send(JSON.stringify({ v: 2, id: 6, op: 'status' }))
  rep = await r.next()
  t.same([rep.id, rep.error.code], [6, 'E_UNSUPPORTED_VERSION'])
  t.same(rep.error.details, { supported: [1] })
  const bad = [
    { op: 'restore', checkpoint: '1' },
    { op: 'restore', checkpoint: -1 },
    { op: 'restore' },
    { op: 'mark', label: 42 },
    { op: 'mark', label: 'x', surprise: true },
    { op: 'log', limit: 1.5 },
    { op: 'read', path: '../x' },
    { op: 'read', path: '/abs/../..' },
    { op: 'stat', path: 'a/../../etc/passwd' },
    { op: 'readdir', path: '..' },
    { op: 'read', path: 'f', length: 'all' },
    { op: 'export', checkpoint: 1, dir: 'relative' },
    { op: 'unmount', discard: 1 },
  ]
  let id = 100
  for (const b of bad) {
    r.ws.send(codec.encode({ v, id: ++id, ...b }, 'msgpack'), { binary: true })
    rep = await r.next()
    t.same([rep.id, rep.error.code], [id, 'E_BAD_REQUEST'], `${JSON.stringify(b)}: ${rep.error.message}`)
  }
  t.same(api.calls, [], 'the api was never called')
  r.ws.send(JSON.stringify({ v, id: 7, op: 'status' }))
  t.equal((await r.next()).ok.workspace, '/w', 'connection stays open')
})

t.test('token and origin', async t => {
  const { url } = await setup(t)
  t.equal(await refusedStatus(url, {}), 401, 'missing token')
  t.equal(await refusedStatus(url, { Authorization: `Bearer ${'cd'.repeat(32)}` }), 401, 'wrong token')
  t.equal(await refusedStatus(url, { Authorization: `Bearer ${TOKEN}x` }), 401, 'longer token')
  t.equal(await refusedStatus(url, { Authorization: `Basic ${TOKEN}` }), 401, 'not bearer')
  t.equal(await refusedStatus(url, { Authorization: `Bearer ${TOKEN}`, Origin: 'http://evil.example' }), 403, 'origin')
  t.equal(await refusedStatus(url, { Authorization: `Bearer ${TOKEN}` }), 101, 'right token')
  for (const p of ['x', 'ws', '?token=1', '/'] as const) {
    t.equal(await refusedStatus(url + p, { Authorization: `Bearer ${TOKEN}` }), 400, `path ${new URL(url + p).pathname}${new URL(url + p).search} refused (only / is served)`)
  }
  await t.rejects(RewindClient.connect({ url, token: 'nope' }), { code: 'E_UNAUTHORIZED' }, 'client sees E_UNAUTHORIZED')
  const status = await new Promise<number>(resolve => get(url.replace('ws:', 'http:'), res => { res.resume(); resolve(res.statusCode ?? 0) }))
  t.equal(status, 426, 'plain HTTP gets 426')
})

t.test('refuses non-loopback hosts', async t => {
  await t.rejects(startServer({ api: new FakeApi(), token: TOKEN, host: '0.0.0.0' }), /non-loopback/)
  await t.rejects(startServer({ api: new FakeApi(), token: TOKEN, host: '192.168.1.1' }), /non-loopback/)
  await t.rejects(startServer({ api: new FakeApi(), token: '' }), /token/)
})

t.test('oversized messages', async t => {
  const { api, url } = await setup(t, { maxPayload: 4096 })
  const r = await raw(url)
  const closed = new Promise<number>(resolve => r.ws.on('close', code => resolve(code)))
  r.ws.send(JSON.stringify({ v, id: 1, op: 'mark', label: 'x', context: 'y'.repeat(5000) }))
  t.equal(await closed, 1009, 'server closes with 1009')
  t.same(api.calls, [], 'api not called')
  const c = await RewindClient.connect({ url, token: TOKEN })
  t.teardown(() => c.close())
  await t.rejects(c.mark({ context: 'y'.repeat(5000) }), { code: 'E_TOO_LARGE' }, 'client refuses before sending')
  // a reply over the limit is replaced by E_TOO_LARGE
  await t.rejects(c.read({ path: 'f', length: 256 }).then(async () => {
    api.cps.push({ id: 9, label: null, time: 0, generation: 1, branch: 'main', parent: null, inodes: 1, dirtyBytes: 0, ms: 0, pinned: false })
    api.contexts.set(9, 'z'.repeat(8000))
    return await c.context({ id: 9 })
  }), { code: 'E_TOO_LARGE' }, 'oversized reply')
  t.equal((await c.status()).workspace, '/w', 'still usable')
})

t.test('api errors reach the client with their code', async t => {
  const { api, url } = await setup(t)
  for (const encoding of ['msgpack', 'json'] as const) {
    const c = await RewindClient.connect({ url, token: TOKEN, encoding })
    const e = await c.restore({ id: 42 }).catch(e => e)
    t.ok(e instanceof RewindError)
    t.equal(e.code, 'E_UNKNOWN_CHECKPOINT')
    t.same(e.details, { id: 42 })
    t.equal(e.op, 'restore')
    api.failWith = new ApiError('E_BUSY', 'a restore is in progress')
    await t.rejects(c.status(), { code: 'E_BUSY', message: 'a restore is in progress' })
    api.failWith = new TypeError('boom')
    await t.rejects(c.status(), { code: 'E_INTERNAL', message: 'boom' })
    api.failWith = { code: 'E_IO', message: 'EIO from another copy of proto' }
    await t.rejects(c.status(), { code: 'E_IO' }, 'ApiError look-alike keeps its code')
    api.failWith = null
    await c.close()
  }
})

t.test('events reach subscribers only', async t => {
  const { url, server } = await setup(t)
  const sub = await RewindClient.connect({ url, token: TOKEN, encoding: 'json' })
  const other = await RewindClient.connect({ url, token: TOKEN })
  const actor = await RewindClient.connect({ url, token: TOKEN })
  t.teardown(async () => { await sub.close(); await other.close(); await actor.close() })
  const got: unknown[] = []
  const otherGot: unknown[] = []
  sub.on('checkpoint', e => got.push(e))
  sub.on('restore', e => got.push(e))
  other.on('checkpoint', e => otherGot.push(e))
  await sub.subscribe()
  const m = await actor.mark({ label: 'ev' })
  await actor.restore({ id: m.id })
  await sub.status() // replies are ordered after the events on this connection
  t.same(got, [{ event: 'checkpoint', checkpoint: m }, { event: 'restore', restore: { checkpoint: m.id, branch: 'b1', changed: 3, ms: 2, saved: null, recovery: { trajectory: 'no context' as const, workspace: 'restored' as const, effects: 'none' as const, abandoned: [] } } }])
  t.same(otherGot, [], 'not subscribed, nothing received')
  server.broadcast({ event: 'restore', restore: { checkpoint: 1, branch: 'x', changed: 0, ms: 0, saved: null, recovery: { trajectory: 'no context' as const, workspace: 'restored' as const, effects: 'none' as const, abandoned: [] } } })
  await sub.status()
  t.equal(got.length, 3, 'broadcast() reaches subscribers')
})

t.test('timeouts and reconnect', async t => {
  const api = new FakeApi()
  let server = await startServer({ api, token: TOKEN })
  const port = server.port!
  const url = `ws://127.0.0.1:${port}/`
  const c = await RewindClient.connect({ url, token: TOKEN })
  t.teardown(async () => { await c.close(); await server.close() })
  const got: unknown[] = []
  c.on('checkpoint', e => got.push(e))
  await c.subscribe(['checkpoint'])
  api.hang = true
  const e = await c.status({ timeoutMs: 100 }).catch(e => e)
  t.ok(e instanceof TimeoutError, 'TimeoutError')
  api.hang = false
  t.equal((await c.status()).workspace, '/w', 'usable after a timeout')
  // connection loss while waiting
  api.hang = true
  const waiting = c.status().catch(e => e)
  await server.close()
  t.ok(await waiting instanceof ConnectionError, 'waiting call rejects with ConnectionError')
  api.hang = false
  await t.rejects(c.status(), ConnectionError, 'no server: ConnectionError')
  server = await startServer({ api, token: TOKEN, port })
  t.equal((await c.status()).workspace, '/w', 'next call reconnects')
  const other = await RewindClient.connect({ url, token: TOKEN })
  await other.mark({ label: 'after' })
  await other.close()
  await c.status()
  t.equal(got.length, 1, 're-subscribed after reconnect')
})

t.test('unix socket and storeDir', async t => {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'rewind-srv-'))
  t.teardown(() => fs.rm(dir, { recursive: true, force: true }))
  const token = await writeTokenFile(tokenPath(dir))
  const socket = path.join(dir, 'sock')
  const server = await startServer({ api: new FakeApi(), token, socketPath: socket })
  t.teardown(() => server.close())
  t.equal(server.port, null)
  t.equal((await fs.stat(socket)).mode & 0o777, 0o600, 'socket is 0600')
  await writeConnectionFile(dir, { port: null, socket, pid: process.pid, workspace: '/w' })
  const c = await RewindClient.connect({ storeDir: dir, encoding: 'json' })
  t.equal((await c.status()).workspace, '/w')
  await c.close()
  const c2 = await RewindClient.connect({ socketPath: socket, token })
  t.equal((await c2.status()).workspace, '/w')
  await c2.close()
  await fs.chmod(tokenPath(dir), 0o644)
  await t.rejects(RewindClient.connect({ storeDir: dir }), /group or others/, 'client refuses an open token file')
})
