/**
 * `rewindfs verify` checks the effect ledger's hash chain (store/effect-chain.ts):
 * it exits 1 and names a changed, removed or reordered entry and a
 * truncated tail (the head kept outside the file), and a missing ledger;
 * exit 0 again once the file is back. The store is made offline (no mount):
 * a new store gets its ledger, and effects are recorded through the
 * ledger itself.
 */
import t from 'tap'
import fs from 'node:fs'
import path from 'node:path'
import { spawnSync } from 'node:child_process'
import { tempRoot, CLI } from '../helpers/mount.js'
import { StoreDb } from '../../store/db.js'
import { LEDGER_FILE } from '../../store/effect-chain.js'
import { Ledger } from '../../effects/ledger.js'

t.test('verify names a changed, removed, reordered or truncated ledger entry, and a missing ledger', async tt => {
  const root = tempRoot()
  tt.teardown(() => fs.rmSync(root, { recursive: true, force: true }))
  const store = path.join(root, 'store')
  fs.mkdirSync(store)
  await (await StoreDb.open(store)).close()
  const l = await Ledger.open(store)
  await l.register({ tool: 'ticket', class: 'compensable' })
  for (const k of ['a', 'b', 'c']) {
    const b = await l.begin({ tool: 'ticket', target: 'http://t', identity: k })
    await l.complete({ occurrence: b.occurrence, status: k === 'b' ? 'unknown' : 'confirmed', evidence: { id: 18446744073709551615n } })
  }
  await l.close()
  const verify = (): { code: number | null, out: string } => {
    const r = spawnSync(process.execPath, [CLI, 'verify', '--store', store], { encoding: 'utf8', env: { ...process.env, REWINDFS_HOME: path.join(root, 'home') }, timeout: 60000 })
    return { code: r.status, out: r.stdout + r.stderr }
  }
  const clean = verify()
  tt.equal(clean.code, 0, `a clean ledger verifies: ${clean.out}`)
  tt.match(clean.out, /8 effect ledger entries checked/, 'genesis, register and three begins and completes')
  const file = path.join(store, LEDGER_FILE)
  const good = fs.readFileSync(file, 'utf8')
  tt.match(good, /"id":18446744073709551615\}/, 'a 64-bit integer is written with all its digits')
  const lines = good.split('\n').filter(Boolean)
  const damage = (text: string | null, want: RegExp, what: string): void => {
    if (text === null) fs.rmSync(file); else fs.writeFileSync(file, text)
    const v = verify()
    tt.equal(v.code, 1, `verify exits 1 for ${what}`)
    tt.match(v.out, want, `and names it (${what}): ${v.out.split('\n').find(x => x.includes('LEDGER')) ?? v.out}`)
    fs.writeFileSync(file, good)
  }
  const i = lines.findIndex(x => x.includes('"kind":"status"'))
  damage(lines.map((x, k) => k === i ? x.replace('"status":"confirmed"', '"status":"failed"') : x).join('\n') + '\n', new RegExp(`E_LEDGER_CHANGED.*entry #${i + 1} .*was changed`), 'a changed entry')
  damage(lines.map((x, k) => k === i ? x.replace('18446744073709551615', '18446744073709551614') : x).join('\n') + '\n', new RegExp(`E_LEDGER_CHANGED.*entry #${i + 1} .*was changed`), 'a 64-bit integer changed in its last digit')
  damage(lines.filter((_x, k) => k !== 2).join('\n') + '\n', /E_LEDGER_REMOVED.*entry #3 was removed/, 'a removed entry')
  damage([lines[0], lines[2], lines[1], ...lines.slice(3)].join('\n') + '\n', /E_LEDGER_REORDERED.*entry #2 .*out of order/, 'reordered entries')
  damage(lines.slice(0, -2).join('\n') + '\n', new RegExp(`E_LEDGER_TRUNCATED.*entries #${lines.length - 1}..#${lines.length} were removed from its end`), 'a truncated tail')
  damage(null, /E_LEDGER_MISSING.*ledger.jsonl is missing/, 'a missing ledger')
  const after = verify()
  tt.equal(after.code, 0, 'the original ledger verifies again')
})
