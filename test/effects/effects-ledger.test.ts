/**
 * The effect ledger and the recovery gate without a mount (effects/):
 * every status transition, every gate decision of the table, request
 * identity, the hash chain catching a changed, removed, reordered or
 * truncated entry, an intent surviving kill -9 and reading back as
 * unknown, one admitted occurrence out of two concurrent begins (also from
 * two ledger objects on one file, as daemon and CLI are), bad fields and a
 * full store changing nothing.
 */
import t from 'tap'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { spawnSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { createLedgerSync, entryLine, LEDGER_FILE, LEDGER_HEAD_FILE, sealEntry, verifyLedger, writeHeadSync } from '../../store/effect-chain.js'
import { EffectError, Ledger } from '../../effects/ledger.js'
import { deriveIdentity } from '../../effects/identity.js'

const here = path.dirname(fileURLToPath(import.meta.url))

function store (tt: { teardown (fn: () => void): void }): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rwfs-ledger-'))
  tt.teardown(() => fs.rmSync(dir, { recursive: true, force: true }))
  createLedgerSync(dir, { format: 3 })
  return dir
}

async function refused (p: Promise<unknown>): Promise<EffectError> {
  try { await p } catch (e) { if (e instanceof EffectError) return e; throw e }
  throw new Error('expected a refusal, the call succeeded')
}

const size = (dir: string): number => fs.statSync(path.join(dir, LEDGER_FILE)).size

t.test('status transitions: intent -> pending -> confirmed | failed | unknown, with evidence; the rest refused', async tt => {
  const dir = store(tt)
  const l = await Ledger.open(dir)
  await l.register({ tool: 'create_ticket', class: 'compensable' })
  const a = await l.begin({ tool: 'create_ticket', target: 'http://t/tickets', request: { method: 'POST', body: { title: 'a' } } })
  tt.equal(l.get(a.occurrence)!.status, 'intent', 'begin records the intent')
  tt.equal((await l.sent({ occurrence: a.occurrence, evidence: { sentAt: 1 } })).status, 'pending')
  const done = await l.complete({ occurrence: a.occurrence, status: 'confirmed', evidence: { http: 201, id: 7 } })
  tt.same(done.history.map(h => h.status), ['intent', 'pending', 'confirmed'])
  tt.same(done.history[2].evidence, { http: 201, id: 7 }, 'the evidence is kept with the transition')
  tt.equal((await refused(l.complete({ occurrence: a.occurrence, status: 'failed' }))).code, 'E_EFFECT_STATE', 'confirmed is final')
  tt.equal((await refused(l.sent({ occurrence: a.occurrence }))).code, 'E_EFFECT_STATE')

  const b = await l.begin({ tool: 'create_ticket', target: 'http://t/tickets', request: { method: 'POST', body: { title: 'b' } } })
  tt.equal((await l.complete({ occurrence: b.occurrence, status: 'failed', evidence: { http: 400 } })).status, 'failed', 'intent -> failed (never sent)')
  const c = await l.begin({ tool: 'create_ticket', target: 'http://t/tickets', request: { method: 'POST', body: { title: 'c' } } })
  await l.sent({ occurrence: c.occurrence })
  tt.equal((await l.complete({ occurrence: c.occurrence, status: 'unknown', evidence: { error: 'ETIMEDOUT' } })).status, 'unknown', 'pending -> unknown (a timeout)')
  tt.equal((await refused(l.complete({ occurrence: c.occurrence, status: 'confirmed' }))).code, 'E_EFFECT_STATE', 'an unknown outcome is settled by reconcile, not complete')
  const d = await l.begin({ tool: 'create_ticket', target: 'http://t/tickets', request: { method: 'POST', body: { title: 'd' } } })
  tt.equal((await refused(l.reconcile({ occurrence: d.occurrence, verdict: 'absent' }))).code, 'E_EFFECT_STATE', 'no reconcile while in flight')
  tt.equal((await refused(l.complete({ occurrence: 999, status: 'confirmed' }))).code, 'E_UNKNOWN_EFFECT')

  // a deadline passed: the occurrence becomes unknown, persisted
  let now = Date.now()
  const l2 = await Ledger.open(fs.mkdtempSync(path.join(os.tmpdir(), 'rwfs-ledger-')), { now: () => now })
  tt.teardown(() => fs.rmSync(l2.storeDir, { recursive: true, force: true }))
  createLedgerSync(l2.storeDir, { format: 3 })
  const l3 = await Ledger.open(l2.storeDir, { now: () => now })
  await l3.register({ tool: 'send', class: 'irreversible' })
  const e = await l3.begin({ tool: 'send', target: 'mail:bob', identity: 'msg-1', timeoutMs: 1000 })
  now += 1001
  const [listed] = await l3.list({ target: 'mail:bob' })
  tt.equal(listed.status, 'unknown', 'past its deadline an intent is unknown')
  tt.match(listed.history.at(-1)!.evidence, { reason: /deadline/ })
  tt.equal((await Ledger.open(l2.storeDir)).get(e.occurrence)!.status, 'unknown', 'and it is persisted')
  tt.equal(verifyLedger(dir).ok, true, 'the chain verifies')
})

t.test('every gate decision of the table', async tt => {
  const dir = store(tt)
  const l = await Ledger.open(dir)
  await l.register({ tool: 'ticket', class: 'compensable' })
  await l.register({ tool: 'delete_ticket', class: 'idempotent' })
  await l.register({ tool: 'pay', class: 'irreversible' })
  await l.register({ tool: 'get', class: 'replayable' })
  await l.register({ tool: 'put', class: 'idempotent' })
  const T = 'http://t/tickets'
  const req = (title: string) => ({ tool: 'ticket', target: T, request: { method: 'POST', body: { title } } })

  const first = await l.begin(req('x'))
  tt.equal(first.gate.rule, 'new', 'no earlier occurrence: allowed')
  tt.same(await refused(l.begin(req('x'))).then(e => [e.code, (e.details as any).gate.rule]), ['E_EFFECT_UNKNOWN', 'in-flight'], 'in flight: refused')
  await l.complete({ occurrence: first.occurrence, status: 'confirmed', evidence: { id: 1 } })
  const done = await refused(l.begin(req('x')))
  tt.same([done.code, (done.details as any).gate.rule, (done.details as any).gate.occurrence], ['E_EFFECT_DONE', 'present', first.occurrence], 'confirmed: refused, accept the fact')
  tt.match(done.message, /accept/)

  // present but wrong, compensable: only the compensation
  await l.reconcile({ occurrence: first.occurrence, verdict: 'wrong', evidence: { title: 'X?' } })
  tt.equal((await refused(l.begin(req('x')))).code, 'E_EFFECT_COMPENSATE_ONLY')
  const comp = await l.compensate({ compensates: first.occurrence, tool: 'delete_ticket', target: `${T}/1`, request: { method: 'DELETE' } })
  tt.equal(comp.gate.rule, 'new', 'the compensation is allowed, as its own occurrence')
  tt.same(l.get(first.occurrence)!.compensations, [comp.occurrence], 'linked to the one it compensates')
  tt.equal(l.get(comp.occurrence)!.compensates, first.occurrence)
  tt.equal((await refused(l.compensate({ compensates: first.occurrence, tool: 'delete_ticket', target: `${T}/1`, identity: 'again' }))).code, 'E_EFFECT_UNKNOWN', 'a second compensation while the first is in flight: refused')
  await l.complete({ occurrence: comp.occurrence, status: 'confirmed', evidence: { http: 204 } })
  tt.equal((await l.begin(req('x'))).gate.rule, 'compensated', 'compensated: the effect may happen again, as a new occurrence')

  // proven absent
  const b = await l.begin(req('y'))
  await l.complete({ occurrence: b.occurrence, status: 'failed', evidence: { http: 503 } })
  tt.equal((await l.begin(req('y'))).gate.rule, 'absent', 'failed outcome: proven absent, allowed')
  const c = await l.begin(req('z'))
  await l.complete({ occurrence: c.occurrence, status: 'unknown', evidence: { error: 'socket hang up' } })
  const unk = await refused(l.begin(req('z')))
  tt.same([unk.code, (unk.details as any).gate.rule], ['E_EFFECT_UNKNOWN', 'unknown'], 'unknown: refused (fail closed)')
  tt.match(unk.message, /[Rr]econcile/)
  await l.reconcile({ occurrence: c.occurrence, verdict: 'absent', evidence: { listed: [] } })
  tt.equal((await l.begin(req('z'))).gate.rule, 'absent', 'reconciled absent: allowed')
  const d = await l.begin(req('w'))
  await l.complete({ occurrence: d.occurrence, status: 'unknown' })
  await l.reconcile({ occurrence: d.occurrence, verdict: 'present', evidence: { id: 9 } })
  tt.equal((await refused(l.begin(req('w')))).code, 'E_EFFECT_DONE', 'reconciled present: refused')
  tt.equal((await refused(l.compensate({ compensates: b.occurrence, tool: 'delete_ticket', target: `${T}/b`, identity: 'd-b' }))).code, 'E_EFFECT_DONE', 'nothing to compensate when absent')

  // irreversible
  const p = await l.begin({ tool: 'pay', target: 'bank:acct', identity: 'invoice-1' })
  await l.complete({ occurrence: p.occurrence, status: 'confirmed' })
  tt.same(await refused(l.begin({ tool: 'pay', target: 'bank:acct', identity: 'invoice-1' })).then(e => [e.code, (e.details as any).gate.rule]), ['E_EFFECT_IRREVERSIBLE', 'irreversible'], 'irreversible and present: refused, continue from the fact')
  tt.equal((await refused(l.compensate({ compensates: p.occurrence, tool: 'delete_ticket', target: 'bank:acct', identity: 'refund' }))).code, 'E_EFFECT_IRREVERSIBLE', 'an irreversible effect has no compensation')
  const q = await l.begin({ tool: 'pay', target: 'bank:acct', identity: 'invoice-2' })
  await l.complete({ occurrence: q.occurrence, status: 'unknown' })
  await l.reconcile({ occurrence: q.occurrence, verdict: 'wrong' })
  tt.equal((await refused(l.begin({ tool: 'pay', target: 'bank:acct', identity: 'invoice-2' }))).code, 'E_EFFECT_IRREVERSIBLE', 'wrong and not compensable: refused')
  tt.equal((await l.begin({ tool: 'pay', target: 'bank:acct', identity: 'invoice-3' })).gate.rule, 'new', 'another identity is another effect')

  // a person's override
  const o = await l.begin({ tool: 'put', target: 'kv:a', identity: 'k' })
  await l.complete({ occurrence: o.occurrence, status: 'unknown' })
  tt.equal((await refused(l.override({ occurrence: o.occurrence, reason: '  ', user: 'ann', uid: 1000 }))).code, 'E_BAD_REQUEST', 'an override needs a reason')
  const ov = await l.override({ occurrence: o.occurrence, reason: 'checked the store by hand: not there', user: 'ann', uid: 1000 })
  tt.match(ov.override, { reason: 'checked the store by hand: not there', user: 'ann' })
  tt.equal((await l.begin({ tool: 'put', target: 'kv:a', identity: 'k' })).gate.rule, 'overridden', 'overridden: allowed as a new occurrence')

  // replayable
  const g = await l.begin({ tool: 'get', target: 'http://t/tickets', identity: 'list' })
  await l.complete({ occurrence: g.occurrence, status: 'confirmed' })
  tt.equal((await l.begin({ tool: 'get', target: 'http://t/tickets', identity: 'list' })).gate.rule, 'replayable', 'a replayable tool is always allowed')
  tt.equal(l.decision('pay', 'bank:acct', 'invoice-1').allowed, false, 'decision() answers without recording')
  tt.equal(verifyLedger(dir).ok, true)
})

t.test('registration: unknown tools refused, a class never changes, identities follow exclusions', async tt => {
  const dir = store(tt)
  const l = await Ledger.open(dir)
  tt.equal((await refused(l.begin({ tool: 'nope', target: 'x', identity: 'i' }))).code, 'E_EFFECT_UNREGISTERED')
  const r = await l.register({ tool: 'ticket', class: 'compensable', exclude: ['/sent_at', '/meta/nonce'] })
  tt.same(await l.register({ tool: 'ticket', class: 'compensable', exclude: ['/sent_at', '/meta/nonce'] }), r, 'registering again is the same registration')
  tt.equal((await refused(l.register({ tool: 'ticket', class: 'irreversible' }))).code, 'E_EFFECT_CLASS_CONFLICT')
  const body = (sentAt: number, nonce: string) => ({ title: 'a', sent_at: sentAt, meta: { nonce, n: 1 } })
  const a = await l.begin({ tool: 'ticket', target: 'http://t', request: { method: 'POST', body: body(1, 'x') } })
  const e = await refused(l.begin({ tool: 'ticket', target: 'http://t', request: { method: 'POST', body: { meta: { n: 1, nonce: 'y' }, sent_at: 2, title: 'a' } } }))
  tt.equal((e.details as any).identity, a.identity, 'excluded fields and key order do not make a retry look new')
  tt.not(deriveIdentity('http://t', { method: 'POST', body: { title: 'b' } }), a.identity, 'another body is another identity')
  tt.not(deriveIdentity('http://t', { method: 'POST', body: new Uint8Array([1, 2]) }), deriveIdentity('http://t', { method: 'POST', body: new Uint8Array([1, 3]) }), 'bytes bodies compared as bytes')
  tt.equal(deriveIdentity('u', { method: 'PUT', body: { b: 1, a: [1, 'é'] } }), deriveIdentity('u', { body: { a: [1, 'é'], b: 1 }, method: 'PUT' }), 'RFC 8785: key order does not matter')
  tt.equal(a.identity.startsWith('sha256:'), true)
  tt.equal(l.get(a.occurrence)!.identitySource, 'derived')
})

t.test('bad fields and a full store change nothing', async tt => {
  const dir = store(tt)
  let free: number | null = 1 << 30
  const l = await Ledger.open(dir, { freeBytes: () => free })
  await l.register({ tool: 'ticket', class: 'compensable' })
  const before = size(dir)
  const bads: Array<[string, () => Promise<unknown>]> = [
    ['tool', () => l.begin({ tool: '', target: 'x', identity: 'i' })],
    ['target', () => l.begin({ tool: 'ticket', target: 'a\u0000b', identity: 'i' })],
    ['identity', () => l.begin({ tool: 'ticket', target: 'x', identity: 'i', request: { method: 'POST' } })],
    ['timeoutMs', () => l.begin({ tool: 'ticket', target: 'x', identity: 'i', timeoutMs: 0 })],
    ['preState', () => l.begin({ tool: 'ticket', target: 'x', identity: 'i', preState: { n: NaN } })],
    ['request.body', () => l.begin({ tool: 'ticket', target: 'x', request: { method: 'POST', body: { n: Infinity } } })],
    ['class', () => l.register({ tool: 't2', class: 'sometimes' as any })],
    ['exclude', () => l.register({ tool: 't2', class: 'unknown', exclude: ['no-slash'] })],
    ['occurrence', () => l.complete({ occurrence: -1, status: 'confirmed' })],
    ['status', () => l.complete({ occurrence: 1, status: 'pending' })],
    ['verdict', () => l.reconcile({ occurrence: 1, verdict: 'maybe' as any })],
  ]
  for (const [field, p] of bads) {
    const e = await refused(p())
    tt.same([e.code, (e.details as any)?.field], ['E_BAD_REQUEST', field], `${field}: ${e.message}`)
  }
  tt.equal(size(dir), before, 'nothing was written')
  free = 4096
  const full = await refused(l.begin({ tool: 'ticket', target: 'x', identity: 'i' }))
  tt.equal(full.code, 'E_NO_SPACE', 'a store too full to record the intent: refused')
  tt.match(full.message, /nothing was attempted/)
  tt.equal(size(dir), before, 'nothing was written')
  tt.same(await l.list(), [], 'no occurrence exists')
})

t.test('the hash chain names a changed, removed, reordered or truncated entry', async tt => {
  const dir = store(tt)
  const l = await Ledger.open(dir)
  await l.register({ tool: 'ticket', class: 'compensable' })
  for (const id of ['a', 'b', 'c']) {
    const o = await l.begin({ tool: 'ticket', target: 'x', identity: id })
    await l.complete({ occurrence: o.occurrence, status: 'confirmed' })
  }
  await l.close()
  const file = path.join(dir, LEDGER_FILE)
  const good = fs.readFileSync(file, 'utf8')
  const lines = good.trimEnd().split('\n')
  tt.equal(lines.length, 8)
  tt.equal(verifyLedger(dir).ok, true)
  const check = (text: string) => { fs.writeFileSync(file, text); return verifyLedger(dir) }

  let r = check(good.replace('"status":"confirmed"', '"status":"failed"'))
  tt.same(r.problems.map(p => [p.code, p.seq]), [['E_LEDGER_CHANGED', 4]], 'a changed entry is named')
  tt.match(r.problems[0].message, /entry #4 .*changed/)
  r = check([...lines.slice(0, 4), ...lines.slice(5)].join('\n') + '\n')
  tt.same(r.problems.map(p => [p.code, p.seq]), [['E_LEDGER_REMOVED', 5]], 'a removed entry is named')
  tt.match(r.problems[0].message, /#5 was removed/)
  r = check([...lines.slice(0, 4), lines[5], lines[4], ...lines.slice(6)].join('\n') + '\n')
  tt.same(r.problems.map(p => [p.code, p.seq]), [['E_LEDGER_REORDERED', 5]], 'a reordered entry is named')
  r = check(lines.slice(0, 6).join('\n') + '\n')
  tt.same(r.problems.map(p => p.code), ['E_LEDGER_TRUNCATED'], 'a truncated tail is caught by the head')
  tt.match(r.problems[0].message, /#7..#8 were removed/)
  r = check(good + '{"seq":9,"torn')
  tt.same([r.ok, r.torn > 0], [true, true], 'an unterminated last line (a cut write) is not a problem')
  fs.rmSync(path.join(dir, LEDGER_HEAD_FILE))
  tt.equal(check(good).problems[0].code, 'E_LEDGER_MISSING', 'a missing head is a problem')
  fs.writeFileSync(file, good.replace('"status":"confirmed"', '"status":"failed"'))
  const damaged = await Ledger.open(dir)
  tt.equal((await refused(damaged.begin({ tool: 'ticket', target: 'y', identity: 'z' }))).code, 'E_LEDGER_CORRUPT', 'a damaged ledger refuses every begin')
})

t.test('concurrent begins of one identity: exactly one admitted (one object, and two objects on one file)', async tt => {
  const dir = store(tt)
  const a = await Ledger.open(dir)
  await a.register({ tool: 'ticket', class: 'compensable' })
  const b = await Ledger.open(dir)
  const args = { tool: 'ticket', target: 'http://t', request: { method: 'POST', body: { title: 'same' } } }
  const settled = await Promise.allSettled([a.begin(args), a.begin(args), b.begin(args), b.begin(args)])
  const ok = settled.filter(s => s.status === 'fulfilled')
  tt.equal(ok.length, 1, 'one admitted')
  for (const s of settled) if (s.status === 'rejected') tt.equal((s.reason as EffectError).code, 'E_EFFECT_UNKNOWN', 'the others see it in flight')
  tt.equal(verifyLedger(dir).ok, true, 'two writers kept one chain')
  tt.equal((await Ledger.open(dir)).inGenerations(new Set([0])).length, 1, 'one occurrence on file')
})

t.test('an intent survives kill -9 and reads back as unknown; restores list the abandoned effects', async tt => {
  const dir = store(tt)
  const script = path.join(here, '..', 'helpers', 'effects-kill.js')
  const r = spawnSync(process.execPath, [script, dir], { encoding: 'utf8' })
  tt.equal(r.signal, 'SIGKILL', 'the writer was killed with SIGKILL after begin')
  const occurrence = Number(r.stdout.trim())
  tt.ok(occurrence > 0, `it printed the occurrence (${r.stdout.trim()})`)
  const seen = await Ledger.open(dir)
  tt.equal(seen.get(occurrence)!.status, 'intent', 'the intent acknowledged before the kill is there')
  const l = await Ledger.open(dir, { recoverOpen: true, actor: () => ({ checkpoint: 3, generation: 4, branch: 'b1' }) })
  const o = l.get(occurrence)!
  tt.equal(o.status, 'unknown', 'and reads back as unknown after a restart')
  tt.match(o.history.at(-1)!.evidence, { reason: /daemon stopped/ })
  tt.equal((await refused(l.begin({ tool: 'ticket', target: 'http://t', identity: 'k' }))).code, 'E_EFFECT_UNKNOWN', 'the same effect now fails closed')

  l.noteCheckpoint({ checkpoint: 5, generation: 5, branch: 'b1', parent: 3 })
  const n = await l.begin({ tool: 'ticket', target: 'http://t', identity: 'other' })
  const abandoned = await l.noteRestore({ checkpoint: 3, from: 5, branch: 'b2', saved: null, abandoned: new Set([0, 4]) })
  tt.same(abandoned.map(e => [e.occurrence, e.status]), [[occurrence, 'unknown'], [n.occurrence, 'intent']], 'the abandoned suffix, with statuses')
  const kinds = fs.readFileSync(path.join(dir, LEDGER_FILE), 'utf8').trimEnd().split('\n').map(x => JSON.parse(x).kind)
  tt.same(kinds, ['genesis', 'register', 'begin', 'status', 'checkpoint', 'begin', 'restore'], 'checkpoints and restores are entries of their own, in order')
  tt.equal(verifyLedger(dir).ok, true)
})

t.test('effects are numbered on their own: 1, 2, 3 whatever other entries lie between; a ledger that numbered them by entry goes on after its largest', async tt => {
  const dir = store(tt)
  const l = await Ledger.open(dir)
  for (const tool of ['a', 'b', 'c', 'd', 'e']) await l.register({ tool, class: 'idempotent' })
  l.noteCheckpoint({ checkpoint: 1, generation: 1, branch: 'main', parent: null })
  const first = await l.begin({ tool: 'a', target: 'http://t/1', identity: 'x' })
  tt.equal(first.occurrence, 1, 'the first effect is #1 (after a genesis, five registrations and a checkpoint entry)')
  await l.complete({ occurrence: first.occurrence, status: 'confirmed' })
  l.noteCheckpoint({ checkpoint: 2, generation: 2, branch: 'main', parent: 1 })
  const second = await l.begin({ tool: 'b', target: 'http://t/2', identity: 'y' })
  tt.equal(second.occurrence, 2, 'the second is #2')
  tt.equal((await Ledger.open(dir)).get(2)?.tool, 'b', 'reopened, #2 is the second effect')
  tt.equal(verifyLedger(dir).ok, true)

  // a ledger written before: its begin's occurrence is the entry's seq (4)
  const old = fs.mkdtempSync(path.join(os.tmpdir(), 'rwfs-ledger-'))
  tt.teardown(() => fs.rmSync(old, { recursive: true, force: true }))
  createLedgerSync(old, { format: 3 })
  const o = await Ledger.open(old)
  await o.register({ tool: 'a', class: 'idempotent' })
  await o.register({ tool: 'b', class: 'idempotent' })
  const lines = fs.readFileSync(path.join(old, LEDGER_FILE), 'utf8').trimEnd().split('\n')
  const last = JSON.parse(lines.at(-1)!)
  const e = sealEntry({ kind: 'begin', occurrence: 4, tool: 'a', class: 'idempotent', target: 'http://t/1', identity: 'x', identitySource: 'given', actor: { run: null, attempt: null, checkpoint: null, generation: 0, branch: 'main' }, preState: null, compensates: null, gate: 'new', deadline: Date.now() + 60000 }, { seq: last.seq, hash: last.hash })
  tt.equal(e.seq, 4)
  fs.appendFileSync(path.join(old, LEDGER_FILE), entryLine(e))
  writeHeadSync(old, { seq: e.seq, hash: e.hash })
  const o2 = await Ledger.open(old)
  tt.equal(o2.get(4)?.tool, 'a', 'the old effect keeps its number')
  const next = await o2.begin({ tool: 'b', target: 'http://t/2', identity: 'y' })
  tt.equal(next.occurrence, 5, 'a new one goes on after the largest')
  tt.equal(verifyLedger(old).ok, true)
})
