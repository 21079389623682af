/**
 * `rewindfs exec` and the effect ledger through a real mount (issue 15):
 * a command matching the store's pattern list is recorded before it runs,
 * a repeat the gate refuses is not run (exit 77, the gate's message on
 * stderr), the command's exit status is passed through, a non-zero exit is
 * an unknown outcome (and fails closed), a command matching no pattern is
 * not recorded, and a malformed pattern file refuses every exec. The
 * person's acts (override, reconcile), the restore's facts, concurrent
 * clients and the Python wrapper: effects-override.
 */
import t from 'tap'
import fs from 'node:fs'
import path from 'node:path'
import { mountWorkspace } from '../helpers/mount.js'
import { EXTERNAL_COMMANDS_FILE } from '../../effects/patterns.js'

t.test('exec records external commands and refuses what the gate refuses', async tt => {
  const m = await mountWorkspace(tt, dir => { fs.writeFileSync(path.join(dir, 'a.txt'), 'a\n') })
  const outside = path.join(m.root, 'outside.log')
  const script = path.join(m.root, 'make-ticket')
  fs.writeFileSync(script, `#!/bin/sh\necho "ticket $1" >> ${outside}\nexit "$1"\n`, { mode: 0o755 })
  const patterns = path.join(m.store, EXTERNAL_COMMANDS_FILE)
  tt.ok(fs.existsSync(patterns), 'the daemon wrote the default pattern list into the store')
  fs.writeFileSync(patterns, JSON.stringify({ version: 1, patterns: [{ name: 'ticket', regex: 'make-ticket', class: 'compensable', description: 'creates a ticket' }] }))
  const made = (): number => fs.existsSync(outside) ? fs.readFileSync(outside, 'utf8').split('\n').filter(Boolean).length : 0

  const first = await m.cli(['exec', '--', script, '0'])
  tt.equal(first.code, 0, `an external command runs: ${first.stderr}`)
  tt.equal(made(), 1, 'and acts')
  tt.match(first.stderr, /external effect #\d+ \(ticket, compensable\) recorded before running/)
  const local = await m.cli(['exec', '--no-checkpoint', '--', 'true'])
  tt.equal(local.code, 0, 'a command matching no pattern runs')
  tt.notMatch(local.stderr, /external effect/, 'and is not recorded')
  const l = await m.client.effectList({})
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
  tt.equal((await m.client.effectList({ target: `${script} 3` }))[0]?.status, 'unknown', 'recorded unknown')
  const blocked = await m.cli(['exec', '--', script, '3'])
  tt.equal(blocked.code, 77, 'unknown fails closed')
  tt.match(blocked.stderr, /\[E_EFFECT_UNKNOWN\].*Reconcile it first/)
  tt.equal(made(), 2, 'not run')

  fs.writeFileSync(patterns, '{ "version": 1, "patterns": [ {')
  const malformed = await m.cli(['exec', '--', 'true'])
  tt.equal(malformed.code, 77, 'a malformed pattern file refuses exec (fail closed)')
  tt.match(malformed.stderr, /external-command patterns cannot be read.*not valid JSON/)
  const pats = await m.cli(['effects', 'patterns'])
  tt.equal(pats.code, 1, 'effects patterns says the file is malformed')
  tt.match(pats.stderr, /external-commands.json: not valid JSON/)
})
