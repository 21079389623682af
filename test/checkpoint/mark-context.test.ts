/**
 * A mark carries the agent's context; stat and read at a checkpoint, through a real mount.
 */
import t from 'tap'
import fs from 'node:fs'
import path from 'node:path'
import { mountWorkspace } from '../helpers/mount.js'
import { smallTree } from '../helpers/small-tree.js'

t.test('mark carries a context; stat and read at a checkpoint', async t => {
  const m = await mountWorkspace(t, smallTree)
  const ctx = { messages: [{ role: 'user', content: 'fix the bug' }], step: 3 }
  const cp = await m.client.mark({ label: 'with context', context: ctx })
  fs.writeFileSync(path.join(m.dir, 'src/lib/a.txt'), 'changed\n')
  t.same(await m.client.context({ id: cp.id }), ctx, 'context comes back')
  const st = await m.client.stat({ id: cp.id, path: 'src/lib/a.txt' })
  t.equal(st?.size, 6)
  t.equal(Buffer.from(await m.client.read({ id: cp.id, path: 'src/lib/a.txt' })).toString(), 'alpha\n', 'old content at the checkpoint')
  t.equal(fs.readFileSync(path.join(m.dir, 'src/lib/a.txt'), 'utf8'), 'changed\n', 'live content unchanged by reading the past')
  const diff = await m.client.diff({ a: cp.id })
  t.ok(diff.some(e => e.path === '/src/lib/a.txt' && e.change === 'modified'), 'diff names the modified file')
})
