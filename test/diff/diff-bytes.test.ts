/**
 * diff's M means the bytes differ (issue 11, item 4): a file rewritten with
 * the bytes it had (git reset --hard, an editor saving unchanged content)
 * only has a new mtime, which is `m`. Checked for every way content is
 * known: unsealed writes against a checkpoint, two checkpoints' block
 * lists, a file of the directory against a block list after a remount.
 */
import t from 'tap'
import fs from 'node:fs'
import path from 'node:path'
import crypto from 'node:crypto'
import { mountWorkspace } from '../helpers/mount.js'
import type { DiffEntry } from '../../daemon/api.js'

const byPath = (d: DiffEntry[]): string[] => d.map(e => `${e.change} ${e.path}`)
const BIG = crypto.randomBytes(3 * 65536 + 100)

const m = await mountWorkspace(t, dir => {
  fs.writeFileSync(path.join(dir, 'a.txt'), 'alpha\n')
  fs.writeFileSync(path.join(dir, 'b.txt'), 'bravo\n')
  fs.writeFileSync(path.join(dir, 'big.bin'), BIG)
})
const p = (r: string): string => path.join(m.dir, r)
// written through the mount once, so both sides have block lists later
fs.writeFileSync(p('c.txt'), 'charlie\n')
const c1 = await m.client.mark({ label: 'c1' })
await new Promise(resolve => setTimeout(resolve, 20))
fs.writeFileSync(p('a.txt'), 'alpha\n') // the same bytes, a new mtime
fs.writeFileSync(p('b.txt'), 'BRAVO\n') // other bytes, the same size
fs.writeFileSync(p('big.bin'), BIG) // the same 3 blocks and a tail
fs.writeFileSync(p('c.txt'), 'charlie\n')
const want = ['meta /', 'meta /a.txt', 'modified /b.txt', 'meta /big.bin', 'meta /c.txt']

t.test('live writes against a checkpoint', async t => {
  t.same(byPath(await m.client.diff({ a: c1.id })).filter(e => e !== 'meta /'), want.slice(1), 'same bytes are m, other bytes M')
})

t.test('two checkpoints (block lists)', async t => {
  const c2 = await m.client.mark({ label: 'c2' })
  t.same(byPath(await m.client.diff({ a: c1.id, b: c2.id })).filter(e => e !== 'meta /'), want.slice(1))
  const cli = await m.cli(['diff', String(c1.id), String(c2.id)])
  t.same(cli.stdout.trim().split('\n').filter(l => l !== 'm /'), ['m /a.txt', 'M /b.txt', 'm /big.bin', 'm /c.txt'], 'the CLI says the same')
})

t.test('a file of the directory against a block list, after a remount', async t => {
  await m.unmount()
  await m.remount()
  const c3 = (await m.client.log({}))[0]!
  fs.writeFileSync(path.join(m.dir, 'b.txt'), 'BRAVO\n') // rewritten with its bytes in the next session
  t.same(byPath(await m.client.diff({ a: c1.id })).filter(e => e !== 'meta /'), want.slice(1), 'the first session\'s changes, judged by bytes')
  t.same(byPath(await m.client.diff({ a: c3.id })), ['meta /b.txt'], 'the rewrite with the same bytes is m')
})
