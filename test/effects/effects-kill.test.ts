/**
 * An intent acknowledged by the daemon survives kill -9 of the daemon and
 * reads back as unknown after the next mount (issue 15): the begin's entry
 * is fdatasync'ed before the reply, and a daemon that starts finds the
 * occurrences its predecessor left intent or pending and records them
 * unknown (fail closed), so the same effect is refused until reconciled.
 */
import t from 'tap'
import fs from 'node:fs'
import path from 'node:path'
import { mountWorkspace } from '../helpers/mount.js'
import type { RewindError } from '../../client/errors.js'

t.test('kill -9 between begin and complete: the intent reads back as unknown', async tt => {
  const m = await mountWorkspace(tt, dir => { fs.writeFileSync(path.join(dir, 'a.txt'), 'a\n') })
  await m.client.effectRegister({ tool: 'pay', class: 'irreversible' })
  const args = { tool: 'pay', target: 'bank:acct-1', identity: 'invoice-7', run: 'run-1', attempt: 1 }
  const b = await m.client.effectBegin(args)
  const p = await m.client.effectBegin({ ...args, identity: 'invoice-8' })
  await m.client.effectSent({ occurrence: p.occurrence, evidence: { request: 'sent' } })
  await m.kill9()
  await m.remount()
  const list = await m.client.effectList({ run: 'run-1' })
  const byId = new Map(list.map(e => [e.occurrence, e]))
  tt.equal(byId.get(b.occurrence)?.status, 'unknown', 'the intent is there and unknown')
  tt.equal(byId.get(p.occurrence)?.status, 'unknown', 'the pending one too')
  tt.match(byId.get(b.occurrence)?.history.map(h => h.status), ['intent', 'unknown'], 'intent, then unknown')
  tt.match(byId.get(p.occurrence)?.history.at(-1)?.evidence, { reason: /daemon stopped before the outcome was recorded/, was: 'pending' }, 'with the reason as evidence')
  tt.match(byId.get(b.occurrence)?.actor, { run: 'run-1', attempt: 1, branch: 'main' }, 'the actor survives')
  const again = await m.client.effectBegin(args).then(() => 'allowed', (e: RewindError) => e.code)
  tt.equal(again, 'E_EFFECT_UNKNOWN', 'the same effect is refused: fail closed')
  await m.unmount()
  const v = await m.cli(['verify', '--store', m.store])
  tt.equal(v.code, 0, `the ledger verifies after the kill: ${v.stdout}${v.stderr}`)
})
