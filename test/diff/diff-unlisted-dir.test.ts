/**
 * diff through a real mount sees content and mode changes of files whose directory did not change.
 */
import t from 'tap'
import fs from 'node:fs'
import path from 'node:path'
import { mountWorkspace } from '../helpers/mount.js'
import { smallTree } from '../helpers/small-tree.js'

t.test('diff sees content and mode changes of files whose directory did not change', async t => {
  const m = await mountWorkspace(t, smallTree)
  fs.appendFileSync(path.join(m.dir, 'src/lib/a.txt'), 'two\n')
  const c2 = await m.client.mark({})
  fs.appendFileSync(path.join(m.dir, 'src/lib/a.txt'), 'three\n')
  fs.chmodSync(path.join(m.dir, 'README'), 0o600)
  const live = await m.client.diff({ a: c2.id })
  t.same(live, [{ path: '/README', change: 'meta' }, { path: '/src/lib/a.txt', change: 'modified' }], 'against the live state')
  const c3 = await m.client.mark({})
  t.same(await m.client.diff({ a: c2.id, b: c3.id }), live, 'between two checkpoints')
  t.same(await m.client.diff({ a: c3.id }), [], 'nothing since the last checkpoint')
  const st = await m.cli(['status'])
  t.match(st.stdout, /unsaved\s+0 paths changed/)
})
