/**
 * The agent half of the effect ledger (client/effects.ts, client/tools.ts),
 * against a recording fake of the client (no daemon):
 *  - guardedCall: begin, sent, the call, complete confirmed with the
 *    outcome's evidence; a gate refusal calls nothing and carries the gate's
 *    message (gateMessage); a timeout is recorded unknown; an error that
 *    proves nothing was sent (ECONNREFUSED) is failed, any other unknown;
 *  - backtrack_candidates lists the current branch's external effects;
 *    backtrack_commit returns the abandoned branch's effects as notUndone,
 *    and notUndoneNote tells the model they were not undone.
 */
import t from 'tap'
import { guardedCall, gateMessage, EffectRefusedError, EffectCallError, notUndoneNote, classifyError } from '../../client/effects.js'
import { backtrackCandidates, backtrackCommit } from '../../client/tools.js'
import { RewindError } from '../../client/errors.js'
import type { EffectInfo, GateInfo } from '../../proto/effects.js'

const GATE: GateInfo = { allowed: true, rule: 'new', occurrence: null, message: 'No earlier occurrence of this effect: go ahead.' }

function fake (refuse?: GateInfo): { calls: Array<[string, any]>, client: any } {
  const calls: Array<[string, any]> = []
  const client = {
    effectBegin: async (a: any) => {
      calls.push(['begin', a])
      if (refuse !== undefined) throw new RewindError('E_EFFECT_DONE', refuse.message, { gate: refuse }, 'effect_begin')
      return { occurrence: 5, identity: 'sha256:abc', gate: GATE }
    },
    effectCompensate: async (a: any) => { calls.push(['compensate', a]); return { occurrence: 6, identity: 'x', gate: GATE } },
    effectSent: async (a: any) => { calls.push(['sent', a]); return {} },
    effectComplete: async (a: any) => { calls.push(['complete', a]); return {} },
  }
  return { calls, client }
}

const info = (occurrence: number, status: EffectInfo['status']): EffectInfo => ({
  occurrence, tool: 'create_ticket', class: 'compensable', target: 'http://t/tickets', identity: 'k', identitySource: 'derived',
  actor: { run: 'r', attempt: null, checkpoint: 3, generation: 4, branch: 'main' }, preState: null, compensates: null, compensations: [],
  time: 0, status, history: [], reconcile: null, override: null
})

t.test('guardedCall: confirmed, with the outcome\'s evidence', async tt => {
  const { calls, client } = fake()
  let got: any
  const r = await guardedCall(client, { tool: 'create_ticket', target: 'http://t/tickets', request: { method: 'POST', body: { title: 'a' } }, call: async ctx => { got = ctx; return { id: 41 } }, outcome: x => ({ status: 'confirmed', evidence: { ticket: x.id } }) })
  tt.same(r.result, { id: 41 })
  tt.equal(r.status, 'confirmed')
  tt.equal(got.occurrence, 5, 'the call gets the occurrence id')
  tt.equal(got.identity, 'sha256:abc', 'and the identity, to send as an idempotency key')
  tt.same(calls.map(c => c[0]), ['begin', 'sent', 'complete'], 'begin, sent, complete, in order')
  tt.same(calls[2][1], { occurrence: 5, status: 'confirmed', evidence: { ticket: 41 } })
})

t.test('guardedCall: a refusal calls nothing and says what the gate said', async tt => {
  const refusal: GateInfo = { allowed: false, rule: 'present', occurrence: 4, message: 'Refused: occurrence #4 already happened on http://t/tickets as intended. Do not repeat it; accept that it exists and continue from there.' }
  const { calls, client } = fake(refusal)
  let called = false
  const err = await guardedCall(client, { tool: 'create_ticket', target: 'http://t/tickets', call: async () => { called = true } }).catch((e: unknown) => e)
  tt.ok(err instanceof EffectRefusedError, 'EffectRefusedError')
  tt.equal((err as EffectRefusedError).code, 'E_EFFECT_DONE')
  tt.notOk(called, 'the call was not made')
  tt.same(calls.map(c => c[0]), ['begin'], 'nothing after the refused begin')
  tt.equal(gateMessage(err), refusal.message, 'gateMessage: the gate\'s message for the model')
  tt.equal(gateMessage(new RewindError('E_EFFECT_UNKNOWN', 'x', { gate: { ...refusal, message: 'reconcile first' } })), 'reconcile first', 'also from the RewindError of a begin')
  tt.equal(gateMessage(new Error('other')), null, 'null for other errors')
})

t.test('guardedCall: a timeout is unknown, a refused connection failed, another error unknown', async tt => {
  const timeout = fake()
  let aborted = false
  const e1 = await guardedCall(timeout.client, { tool: 't', target: 'x', callTimeoutMs: 50, call: async ({ signal }) => await new Promise(resolve => { signal.addEventListener('abort', () => { aborted = true }); setTimeout(resolve, 2000) }) }).catch((e: unknown) => e)
  tt.ok(e1 instanceof EffectCallError && e1.status === 'unknown', 'a timeout: unknown')
  tt.ok(aborted, 'the call\'s signal is aborted')
  tt.match(timeout.calls.at(-1)?.[1], { status: 'unknown', evidence: { timeout: true } }, 'recorded unknown with the timeout as evidence')
  const refused = fake()
  const e2 = await guardedCall(refused.client, { tool: 't', target: 'x', call: async () => { throw Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }) } }).catch((e: unknown) => e)
  tt.ok(e2 instanceof EffectCallError && e2.status === 'failed', 'connection refused: failed (nothing was sent)')
  tt.match(refused.calls.at(-1)?.[1], { status: 'failed', evidence: { code: 'ECONNREFUSED' } })
  const reset = fake()
  const e3 = await guardedCall(reset.client, { tool: 't', target: 'x', call: async () => { throw new TypeError('fetch failed', { cause: Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' }) }) } }).catch((e: unknown) => e)
  tt.ok(e3 instanceof EffectCallError && e3.status === 'unknown', 'a reset connection: unknown (the request may have arrived)')
  tt.equal(classifyError(new TypeError('fetch failed', { cause: Object.assign(new Error('x'), { code: 'ENOTFOUND' }) })), 'failed', 'a name that does not resolve, inside fetch\'s cause: failed')
  const comp = fake()
  await guardedCall(comp.client, { tool: 'delete_ticket', target: 'x', compensates: 5, call: async () => 1 })
  tt.equal(comp.calls[0][0], 'compensate', 'with compensates: effect_compensate')
  tt.equal(comp.calls[0][1].compensates, 5)
})

t.test('the backtrack tools list the effects a rewind cannot undo', async tt => {
  let listed: any
  const client: any = {
    candidates: async () => [{ id: 3, step: 0, label: null, time: 0, branch: 'main', meta: null }],
    status: async () => ({ branch: 'main', head: 7 }),
    effectList: async (a: any) => { listed = a; return [info(9, 'unknown')] },
    memoryAdd: async () => ({ count: 1 }),
    memoryGet: async () => ({ entries: [] }),
    restore: async () => ({ checkpoint: 3, branch: 'b1', changed: 1, ms: 1, saved: null, recovery: { trajectory: 'restored', workspace: 'restored', effects: 'unreconciled', abandoned: [info(9, 'unknown')] } })
  }
  const c = await backtrackCandidates(client, { reason: 'stuck' })
  tt.same(listed, { branch: 'main', limit: 20 }, 'the current branch\'s effects are asked for')
  tt.match(c.external_effects, [{ occurrence: 9, tool: 'create_ticket', target: 'http://t/tickets', status: 'unknown', after_checkpoint: 3 }], 'listed with status and the checkpoint they followed')
  const done = await backtrackCommit(client, 'r', { checkpoint_id: 3, reason: 'wrong approach', memory: { tried: 'a', why_abandoned: 'b', instead: 'c', facts: [], milestones: [] } })
  tt.match(done.notUndone, [{ occurrence: 9, status: 'unknown' }], 'the commit returns what the rewind did not undo')
  const note = notUndoneNote(done.restore?.recovery?.abandoned ?? [])
  tt.match(note, /not these external effects of the abandoned branch/)
  tt.match(note, /#9 create_ticket on http:\/\/t\/tickets: unknown/)
  tt.equal(notUndoneNote([]), null, 'no note when nothing was abandoned')
})
