/**
 * A restore during concurrent writes (issue 11, item 7): writes that
 * complete while the restore waits on its store writes are sealed as more
 * "before restore to N" checkpoints; the reply must name every one it
 * recorded (`savedAll`, oldest first, `saved` the newest), and each must be
 * in the log with that label.
 */
import t from 'tap'
import fs from 'node:fs'
import path from 'node:path'
import { spawn, type ChildProcess } from 'node:child_process'
import { mountWorkspace } from '../helpers/mount.js'

t.test('every "before restore" checkpoint is named in the reply', async t => {
  const m = await mountWorkspace(t, dir => { for (let i = 0; i < 20; i++) fs.writeFileSync(path.join(dir, `f${i}`), `${i}\n`) })
  const target = await m.client.mark({ label: 'target' })
  const writers: ChildProcess[] = []
  t.teardown(() => { for (const w of writers) try { process.kill(-w.pid!, 'SIGKILL') } catch {} })
  for (let k = 0; k < 3; k++) {
    writers.push(spawn('bash', ['-c', `while :; do head -c $((RANDOM * 4)) /dev/urandom > w${k}-$((RANDOM % 30)) 2>/dev/null; done`], { cwd: m.dir, detached: true, stdio: 'ignore' }))
  }
  await new Promise(resolve => setTimeout(resolve, 500))
  let seen = 0
  let several = 0
  for (let round = 0; round < 6; round++) {
    const before = Math.max(...(await m.client.log({ limit: 1000 })).map(c => c.id))
    const r = await m.client.restore({ id: target.id })
    const made = (await m.client.log({ limit: 1000 })).filter(c => c.id > before && c.label === `before restore to ${target.id}`).map(c => c.id).sort((a, b) => a - b)
    t.same(r.savedAll, made, `round ${round}: the reply names the ${made.length} "before restore" checkpoint(s) in the log`)
    t.equal(r.saved, made.at(-1) ?? null, 'and saved is the newest of them')
    seen += made.length
    if (made.length > 1) several++
    await new Promise(resolve => setTimeout(resolve, 300))
  }
  for (const w of writers) try { process.kill(-w.pid!, 'SIGKILL') } catch {}
  t.ok(seen > 0, 'the writers left unsaved changes to checkpoint')
  t.comment(`restore-writes: ${seen} "before restore" checkpoints over 6 restores, ${several} restore(s) recorded more than one`)
})
