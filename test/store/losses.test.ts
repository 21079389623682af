/**
 * Repair and verify say what was lost instead of reporting "clean":
 *  1. every .ldb table of the metadata database deleted (the newcomer's
 *     case): LevelDB's repair rebuilds an almost empty database; repair
 *     names the checkpoints whose records are gone, the content the packs
 *     still hold that no checkpoint reaches, warns that gc would delete it,
 *     and exits 1;
 *  2. a checkpoint record deleted (a gap below the highest id): verify
 *     reports it, while checkpoints gc removed are not reported as lost.
 */
import t from 'tap'
import fs from 'node:fs'
import path from 'node:path'
import crypto from 'node:crypto'
import { mountWorkspace } from '../helpers/mount.js'
import { StoreDb } from '../../store/db.js'
import { verifyStore } from '../../fs/maint/verify.js'

const MiB = 1024 * 1024

t.test('all .ldb tables deleted: repair names the lost checkpoints and content, exits 1', async tt => {
  const m = await mountWorkspace(tt)
  for (let i = 0; i < 3; i++) {
    fs.writeFileSync(path.join(m.dir, `f${i}.bin`), crypto.randomBytes(2 * MiB))
    await m.client.mark({ label: `step ${i}` })
  }
  await m.unmount()
  // opening the database once moves its log into a .ldb table, as the next mount would
  await (await StoreDb.open(m.store)).close()
  const meta = path.join(m.store, 'meta')
  const tables = fs.readdirSync(meta).filter(f => f.endsWith('.ldb'))
  tt.ok(tables.length >= 1, `the database has .ldb tables (${tables.join(', ')})`)
  for (const f of tables) fs.rmSync(path.join(meta, f))

  const r = await m.cli(['verify', '--store', m.store, '--repair'])
  tt.equal(r.code, 1, 'repair exits 1: history was lost')
  tt.match(r.stdout, /LevelDB's repair rebuilt it/, 'says LevelDB repaired the database')
  tt.notMatch(r.stdout, /^clean/m, 'does not call the store clean')
  // mount + 3 marks: #1..#4; the database remembers none of them, unmount.json the last one
  tt.match(r.stdout, /the records of 4 checkpoints \(#1\.\.#4\) could not be rebuilt/, 'names the lost checkpoints')
  tt.match(r.stdout, /the packs still hold [\d.]+ MiB of their content, which no checkpoint reaches/, 'says how much content is still in the packs')
  tt.match(r.stdout, /rewindfs gc would delete (it|them); copy the store .* first/, 'warns that gc would delete it')
  const json = await m.cli(['verify', '--store', m.store, '--repair', '--json'])
  tt.equal(json.code, 1, 'a second repair still exits 1')
  const rep = JSON.parse(json.stdout)
  tt.ok(rep.after.losses.unreachableBytes >= 6 * MiB, `the loss counts the 6 MiB written (${rep.after.losses.unreachableBytes})`)
  const v = await verifyStore(m.store)
  tt.equal(v.ok, false, 'verify agrees afterwards')
  tt.ok(v.problems.some(p => p.code === 'E_LOST_CHECKPOINTS' || p.code === 'E_NO_STATE'), 'with a loss code')
})

t.test('a deleted checkpoint record is lost; one gc removed is not', async tt => {
  const m = await mountWorkspace(tt)
  fs.writeFileSync(path.join(m.dir, 'g0.txt'), 'content 0\n')
  const c0 = await m.client.mark({ label: 'g0' })
  fs.writeFileSync(path.join(m.dir, 'g1.txt'), 'content 1\n')
  const c1 = await m.client.mark({ label: 'g1 (abandoned)' })
  await m.client.restore({ id: c0.id })
  fs.writeFileSync(path.join(m.dir, 'g2.txt'), 'content 2\n')
  await m.client.mark({ label: 'g2' })
  await m.unmount()
  const gc = await m.cli(['gc', '--store', m.store, '--keep-last', '1', '--abandoned-after', '0'])
  tt.equal(gc.code, 0, gc.stdout + gc.stderr)
  tt.match(gc.stdout, new RegExp(`removed \\(#[\\d, #]*\\b${c1.id}\\b`), `gc removed #${c1.id}`)
  const clean = await verifyStore(m.store)
  tt.same(clean.problems, [], 'gaps gc made are not losses')
  const db = await StoreDb.open(m.store)
  const kept: number[] = []
  for await (const k of db.keys('checkpoint')) kept.push(parseInt(k, 16))
  tt.ok(kept.length >= 2, `gc kept the ancestors (${kept.join(', ')})`)
  const victim = kept[kept.length - 1]!
  await db.batch().del('checkpoint', victim).write({ sync: true })
  await db.close()
  const v = await verifyStore(m.store)
  const lost = v.problems.find(p => p.code === 'E_LOST_CHECKPOINTS')
  tt.ok(lost, 'verify reports the lost checkpoint')
  tt.match(lost?.message, new RegExp(`the records of 1 checkpoint \\(#${victim}\\) are missing`))
  const cli = await m.cli(['verify', '--store', m.store])
  tt.equal(cli.code, 1, 'verify exits 1')
  tt.match(cli.stdout, /E_LOST_CHECKPOINTS/)
})
