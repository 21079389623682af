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
 *  - `rewindfs verify` exits 1 and names a changed, removed or reordered
 *    ledger entry, and a truncated tail.
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

  await m.unmount()
  const clean = await m.cli(['verify', '--store', m.store])
  tt.equal(clean.code, 0, `verify is clean: ${clean.stdout}${clean.stderr}`)
  const file = path.join(m.store, LEDGER_FILE)
  const good = fs.readFileSync(file, 'utf8')
  const lines = good.split('\n').filter(Boolean)
  const damage = async (text: string, want: RegExp, what: string): Promise<void> => {
    fs.writeFileSync(file, text)
    const v = await m.cli(['verify', '--store', m.store])
    tt.equal(v.code, 1, `verify exits 1 for ${what}`)
    tt.match(v.stdout + v.stderr, want, `and names it (${what})`)
    fs.writeFileSync(file, good)
  }
  const i = lines.findIndex(x => x.includes('"kind":"status"'))
  await damage(lines.map((x, k) => k === i ? x.replace('"status":"', '"status":"x') : x).join('\n') + '\n', new RegExp(`E_LEDGER_CHANGED.*entry #${i + 1} .*was changed`), 'a changed entry')
  await damage(lines.filter((_x, k) => k !== 2).join('\n') + '\n', /E_LEDGER_REMOVED.*entry #3 was removed/, 'a removed entry')
  await damage([lines[0], lines[2], lines[1], ...lines.slice(3)].join('\n') + '\n', /E_LEDGER_REORDERED.*entry #2 .*out of order/, 'reordered entries')
  await damage(lines.slice(0, -2).join('\n') + '\n', new RegExp(`E_LEDGER_TRUNCATED.*entries #${lines.length - 1}..#${lines.length} were removed from its end`), 'a truncated tail')
  const after = await m.cli(['verify', '--store', m.store])
  tt.equal(after.code, 0, 'the original ledger verifies again')
})
