/**
 * The effect ledger through a real mount and the CLI (issue 15):
 *  - `rewindfs exec` records a command matching the store's pattern list,
 *    refuses a repeat the gate refuses (exit 77, the command not run), passes
 *    the command's exit status through, records a non-zero exit as unknown;
 *  - a malformed pattern file refuses every exec (fail closed);
 *  - `rewindfs effects override` needs a reason, records the OS user and the
 *    reason; the protocol has no override;
 *  - `rewindfs effects reconcile` settles an unknown outcome;
 *  - a restore reports three separate facts and lists the abandoned effects;
 *  - two protocol clients beginning the same effect at once: one admitted;
 *  - the Python guarded-call wrapper (client/python/rewindfs_effects.py);
 *  - `rewindfs verify` reads the ledger (effects-verify: what it names).
 */
import t from 'tap'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { mountWorkspace } from './helpers/mount.js'
import { EXTERNAL_COMMANDS_FILE } from '../effects/patterns.js'
import { LEDGER_FILE } from '../store/effect-chain.js'
import { RewindError } from '../client/errors.js'
import { RewindClient } from '../client/client.js'
import { fileURLToPath } from 'node:url'

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..')

t.test('exec, effects, override, reconcile, restore and verify', async tt => {
  const m = await mountWorkspace(tt, dir => { fs.writeFileSync(path.join(dir, 'a.txt'), 'a\n') })
  const outside = path.join(m.root, 'outside.log')
  const script = path.join(m.root, 'make-ticket')
  fs.writeFileSync(script, `#!/bin/sh\necho "ticket $1" >> ${outside}\nexit "$1"\n`, { mode: 0o755 })
  const patterns = path.join(m.store, EXTERNAL_COMMANDS_FILE)
  fs.writeFileSync(patterns, JSON.stringify({ version: 1, patterns: [{ name: 'ticket', regex: 'make-ticket', class: 'compensable', description: 'creates a ticket' }] }))
  const made = (): number => fs.existsSync(outside) ? fs.readFileSync(outside, 'utf8').split('\n').filter(Boolean).length : 0
  const list = async (): Promise<any[]> => JSON.parse((await m.cli(['effects', '--json'])).stdout)
  const before = await m.client.mark({ label: 'before the effects' })

  const first = await m.cli(['exec', '--', script, '0'])
  tt.equal(first.code, 0, `an external command runs: ${first.stderr}`)
  tt.equal(made(), 1, 'and acts')
  tt.match(first.stderr, /external effect #\d+ \(ticket, compensable\) recorded before running/)
  const local = await m.cli(['exec', '--no-checkpoint', '--', 'true'])
  tt.equal(local.code, 0, 'a command matching no pattern runs')
  tt.notMatch(local.stderr, /external effect/, 'and is not recorded')
  let l = await list()
  tt.equal(l.length, 1, 'one effect in the ledger')
  tt.match(l[0], { status: 'confirmed', class: 'compensable', tool: 'exec: ticket (compensable)', target: `${script} 0` })

  const again = await m.cli(['exec', '--', script, '0'])
  tt.equal(again.code, 77, 'the same command again: refused with exit status 77')
  tt.equal(made(), 1, 'and not run')
  tt.match(again.stderr, /not run: the recovery gate refused this ticket command \[E_EFFECT_DONE\]: Refused: occurrence #\d+ already happened/, `the gate's message: ${again.stderr}`)

  const fails = await m.cli(['exec', '--', script, '3'])
  tt.equal(fails.code, 3, 'the exit status is passed through')
  tt.equal(made(), 2)
  tt.match(fails.stderr, /ended with exit status 3: its outcome is unknown/, 'a non-zero exit is an unknown outcome')
  l = await list()
  const unknown = l.find(e => e.target === `${script} 3`)
  tt.equal(unknown?.status, 'unknown', 'recorded unknown')
  const blocked = await m.cli(['exec', '--', script, '3'])
  tt.equal(blocked.code, 77, 'unknown fails closed')
  tt.match(blocked.stderr, /\[E_EFFECT_UNKNOWN\].*Reconcile it first/)
  tt.equal(made(), 2, 'not run')

  // an override is the person's act: not over the protocol, and not without a reason
  const ledgerBytes = fs.readFileSync(path.join(m.store, LEDGER_FILE))
  await tt.rejects((m.client as any).call('effect_override', { occurrence: unknown.occurrence, reason: 'agent says so' }), { code: 'E_UNKNOWN_OP' }, 'the protocol has no override')
  const noReason = await m.cli(['effects', 'override', String(unknown.occurrence), '--reason', ' '])
  tt.equal(noReason.code, 1, 'an override without a reason is refused')
  tt.match(noReason.stderr, /--reason must say why/)
  const badVerdict = await m.cli(['effects', 'reconcile', String(unknown.occurrence), '--verdict', 'gone'])
  tt.equal(badVerdict.code, 1, 'a bad verdict is refused')
  tt.match(badVerdict.stderr, /--verdict must be one of absent, present, wrong/)
  tt.ok(fs.readFileSync(path.join(m.store, LEDGER_FILE)).equals(ledgerBytes), 'refused requests changed nothing in the ledger')

  const ov = await m.cli(['effects', 'override', String(unknown.occurrence), '--reason', 'checked the tracker by hand: no ticket 3'])
  tt.equal(ov.code, 0, `override: ${ov.stderr}`)
  l = await list()
  tt.match(l.find(e => e.occurrence === unknown.occurrence)?.override, { user: os.userInfo().username, reason: 'checked the tracker by hand: no ticket 3' }, 'the OS user and the reason are recorded')
  const afterOverride = await m.cli(['exec', '--', script, '3'])
  tt.equal(afterOverride.code, 3, 'after the override the command runs again')
  tt.equal(made(), 3)
  l = await list()
  const second = l.filter(e => e.target === `${script} 3`)
  tt.equal(second.length, 2, 'as a new occurrence')
  const rec = await m.cli(['effects', 'reconcile', String(second[0].occurrence), '--verdict', 'absent', '--evidence', '{"tickets": 18446744073709551615}'])
  tt.equal(rec.code, 0, `reconcile: ${rec.stderr}`)
  const afterAbsent = await m.cli(['exec', '--', script, '3'])
  tt.equal(afterAbsent.code, 3, 'proven absent: allowed again')
  tt.equal(made(), 4)
  tt.ok((await m.cli(['effects', '--json'])).stdout.includes('"tickets":18446744073709551615'), 'reconcile evidence keeps a 64-bit integer exactly')

  // malformed pattern file: every exec refused
  fs.writeFileSync(patterns, '{ "version": 1, "patterns": [ {')
  const malformed = await m.cli(['exec', '--', 'true'])
  tt.equal(malformed.code, 77, 'a malformed pattern file refuses exec (fail closed)')
  tt.match(malformed.stderr, /external-command patterns cannot be read.*not valid JSON/)
  fs.writeFileSync(patterns, JSON.stringify({ version: 1, patterns: [] }))

  // a restore: three separate facts, and every effect of the abandoned suffix
  const r = await m.client.restore({ id: before.id })
  tt.equal(r.recovery.workspace, 'restored')
  tt.equal(r.recovery.trajectory, 'no context', 'the checkpoint carries no context: the trajectory is not restored')
  tt.equal(r.recovery.effects, 'unreconciled', 'the latest occurrence is unknown: effects are not reconciled')
  tt.same(r.recovery.abandoned.map(e => e.status).sort(), ['confirmed', 'unknown', 'unknown', 'unknown'], 'the abandoned effects are listed with their status')
  const repeat = await m.client.effectBegin({ tool: 'exec: ticket (compensable)', target: `${script} 0`, request: { method: 'exec', body: { argv: [script, '0'], cwd: m.root } } }).catch((e: unknown) => e)
  tt.ok(repeat instanceof RewindError && repeat.code === 'E_EFFECT_DONE', 'choosing an earlier checkpoint does not authorise a retry')

  // two protocol clients begin the same effect at once: exactly one is admitted
  await m.client.effectRegister({ tool: 'race', class: 'compensable' })
  const other = await RewindClient.connect({ storeDir: m.store, timeoutMs: 60000 })
  try {
    const args = { tool: 'race', target: 'http://127.0.0.1/race', request: { method: 'POST', body: { n: 1 } } }
    const settled = await Promise.allSettled([m.client.effectBegin(args), other.effectBegin(args), m.client.effectBegin(args), other.effectBegin(args)])
    tt.equal(settled.filter(x => x.status === 'fulfilled').length, 1, 'two clients, four begins of one identity: one admitted')
    tt.same([...new Set(settled.flatMap(x => x.status === 'rejected' ? [(x.reason as RewindError).code] : []))], ['E_EFFECT_UNKNOWN'], 'the others see it in flight')
  } finally { await other.close() }

  // the Python guarded-call wrapper (client/python/rewindfs_effects.py)
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
