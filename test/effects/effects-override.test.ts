/**
 * The person's acts on the effect ledger, and what agents see, through a
 * real mount (issue 15):
 *  - `rewindfs effects override` needs a reason and records the OS user and
 *    the reason; the protocol has no override; refused requests change
 *    nothing in the ledger;
 *  - `rewindfs effects reconcile` settles an unknown outcome (proven absent:
 *    allowed again), its evidence keeps a 64-bit integer exactly;
 *  - a restore reports three separate facts and lists the abandoned
 *    effects; choosing an earlier checkpoint does not authorise a retry;
 *  - two protocol clients beginning the same effect at once: one admitted;
 *  - the Python guarded-call wrapper (client/python/rewindfs_effects.py);
 *  - `rewindfs verify` after the unmount counts the ledger (effects-verify:
 *    what it names when damaged).
 */
import t from 'tap'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { mountWorkspace } from '../helpers/mount.js'
import { LEDGER_FILE } from '../../store/effect-chain.js'
import { RewindError } from '../../client/errors.js'
import { RewindClient } from '../../client/client.js'

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..')

t.test('override, reconcile, restore, concurrent begins, the Python wrapper', async tt => {
  const m = await mountWorkspace(tt, dir => { fs.writeFileSync(path.join(dir, 'a.txt'), 'a\n') })
  const c = m.client
  const before = await c.mark({ label: 'before the effects' })
  await c.effectRegister({ tool: 'ticket', class: 'compensable' })
  const target = 'http://127.0.0.1/tickets'
  const args = { tool: 'ticket', target, request: { method: 'POST', body: { title: 'a' } } }
  const first = await c.effectBegin(args)
  await c.effectComplete({ occurrence: first.occurrence, status: 'unknown', evidence: { error: 'socket hang up' } })
  const refusedCode = async (): Promise<string> => await c.effectBegin(args).then(() => 'allowed', (e: RewindError) => e.code)
  tt.equal(await refusedCode(), 'E_EFFECT_UNKNOWN', 'unknown: refused')

  const ledger = path.join(m.store, LEDGER_FILE)
  const bytes = fs.readFileSync(ledger)
  await tt.rejects((c as any).call('effect_override', { occurrence: first.occurrence, reason: 'the agent says so' }), { code: 'E_UNKNOWN_OP' }, 'the protocol has no override')
  await tt.rejects(c.effectComplete({ occurrence: first.occurrence, status: 'sideways' as any }), { code: 'E_BAD_REQUEST' }, 'a bad status')
  await tt.rejects(c.effectReconcile({ occurrence: 0, verdict: 'absent' }), { code: 'E_BAD_REQUEST' }, 'a bad occurrence id')
  await tt.rejects(c.effectBegin({ ...args, identity: 'both' }), { code: 'E_BAD_REQUEST' }, 'request and identity both given')
  await tt.rejects(c.effectBegin({ tool: 'nobody', target, identity: 'k' }), { code: 'E_EFFECT_UNREGISTERED' }, 'an unregistered tool')
  const noReason = await m.cli(['effects', 'override', String(first.occurrence), '--reason', ' '])
  tt.equal(noReason.code, 1, 'an override without a reason is refused')
  tt.match(noReason.stderr, /--reason must say why/)
  const badVerdict = await m.cli(['effects', 'reconcile', String(first.occurrence), '--verdict', 'gone'])
  tt.equal(badVerdict.code, 1, 'a bad verdict is refused')
  tt.match(badVerdict.stderr, /--verdict must be one of absent, present, wrong/)
  tt.ok(fs.readFileSync(ledger).equals(bytes), 'refused requests changed nothing in the ledger')

  const ov = await m.cli(['effects', 'override', String(first.occurrence), '--reason', 'checked the tracker by hand: no ticket'])
  tt.equal(ov.code, 0, `override: ${ov.stderr}`)
  tt.match(ov.stdout, new RegExp(`#${first.occurrence} .*overridden by ${os.userInfo().username}: "checked the tracker by hand: no ticket"`), 'the CLI prints the override')
  tt.match((await c.effectList({ target }))[0]?.override, { user: os.userInfo().username, reason: 'checked the tracker by hand: no ticket' }, 'the OS user and the reason are recorded')
  const second = await c.effectBegin(args)
  tt.equal(second.gate.rule, 'overridden', 'after the override the effect may begin again, as a new occurrence')
  await c.effectComplete({ occurrence: second.occurrence, status: 'unknown' })
  const rec = await m.cli(['effects', 'reconcile', String(second.occurrence), '--verdict', 'absent', '--evidence', '{"tickets": 18446744073709551615}'])
  tt.equal(rec.code, 0, `reconcile: ${rec.stderr}`)
  const listed = await m.cli(['effects', '--json', '--target', target])
  tt.ok(listed.stdout.includes('"tickets":18446744073709551615'), 'the reconcile evidence keeps a 64-bit integer exactly')
  const third = await c.effectBegin(args)
  tt.equal(third.gate.rule, 'absent', 'proven absent: allowed again')
  await c.effectComplete({ occurrence: third.occurrence, status: 'confirmed', evidence: { ticket: 1 } })
  tt.equal(await refusedCode(), 'E_EFFECT_DONE', 'confirmed: refused, accept the fact')

  const full = await c.restore({ id: before.id })
  tt.ok(full.recovery !== undefined, 'a full restore reports recovery')
  const r = { recovery: full.recovery! }
  tt.equal(r.recovery.workspace, 'restored')
  tt.equal(r.recovery.trajectory, 'no context', 'the checkpoint carries no context: the trajectory is not restored')
  tt.equal(r.recovery.effects, 'unreconciled', 'an occurrence is unknown and not reconciled: effects are not reconciled')
  tt.same(r.recovery.abandoned.map(e => [e.occurrence, e.status]), [[first.occurrence, 'unknown'], [second.occurrence, 'unknown'], [third.occurrence, 'confirmed']], 'the abandoned effects are listed with their status')
  tt.equal(await refusedCode(), 'E_EFFECT_DONE', 'choosing an earlier checkpoint does not authorise a retry')

  await c.effectRegister({ tool: 'race', class: 'compensable' })
  const other = await RewindClient.connect({ storeDir: m.store, timeoutMs: 60000 })
  try {
    const a = { tool: 'race', target: 'http://127.0.0.1/race', request: { method: 'POST', body: { n: 1 } } }
    const settled = await Promise.allSettled([c.effectBegin(a), other.effectBegin(a), c.effectBegin(a), other.effectBegin(a)])
    tt.equal(settled.filter(x => x.status === 'fulfilled').length, 1, 'two clients, four begins of one identity: one admitted')
    tt.same([...new Set(settled.flatMap(x => x.status === 'rejected' ? [(x.reason as RewindError).code] : []))], ['E_EFFECT_UNKNOWN'], 'the others see it in flight')
  } finally { await other.close() }

  const py = await m.sh(`/usr/bin/python3 ${JSON.stringify(path.join(ROOT, 'test/python/effects_guarded.py'))} ${JSON.stringify(m.store)}`, { cwd: m.root })
  tt.equal(py.code, 0, `the Python wrapper runs: ${py.stderr}`)
  const res = JSON.parse(py.stdout.trim().split('\n').at(-1) ?? '{}')
  tt.match(res, { first: 'confirmed', repeat: 'E_EFFECT_DONE', timeout: 'unknown', refused: 'failed', calls: 1 }, 'Python: confirmed, the repeat refused without calling, a timeout unknown, a refused connection failed')
  tt.match(res.message, /already happened/, 'Python: the gate\'s message for the model')
  tt.equal(res.evidence?.ticket, 7, 'Python: the evidence is recorded')
  tt.ok(py.stdout.includes('"big": 18446744073709551615'), 'Python: a 64-bit integer in evidence comes back exactly')

  await m.unmount()
  const clean = await m.cli(['verify', '--store', m.store])
  tt.equal(clean.code, 0, `verify is clean: ${clean.stdout}${clean.stderr}`)
  tt.match(clean.stdout, /[1-9][0-9]* effect ledger entries checked/, 'and counted the ledger\'s entries')
})
