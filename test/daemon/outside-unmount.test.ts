/**
 * An unmount from outside (issue 11, item 2): `fusermount -u DIR` or
 * `umount DIR` end the FUSE mount without asking the daemon. The daemon
 * notices (daemon/mount-watch.ts), seals what was not checkpointed, writes
 * the final state back into DIR and exits; the next mount starts normally.
 * SIGTERM ends the daemon the same clean way.
 */
import t from 'tap'
import fs from 'node:fs'
import path from 'node:path'
import { spawnSync } from 'node:child_process'
import { mountWorkspace, type Mounted } from '../helpers/mount.js'

const isMounted = (dir: string): boolean => fs.readFileSync('/proc/mounts', 'utf8').split('\n').some(l => l.split(' ')[1] === dir)

/** Waits up to `ms` for the daemon to exit; its exit code, or null when it still runs. */
async function exited (m: Mounted, ms: number): Promise<number | null> {
  const deadline = Date.now() + ms
  while (Date.now() < deadline && m.daemon.exitCode === null && m.daemon.signalCode === null) await new Promise(resolve => setTimeout(resolve, 50))
  return m.daemon.exitCode
}

for (const how of [['fusermount', '-u'], ['umount']]) {
  t.test(`${how.join(' ')} DIR: the daemon writes back and exits`, async t => {
    const m = await mountWorkspace(t, dir => fs.writeFileSync(path.join(dir, 'a.txt'), 'before\n'))
    fs.writeFileSync(path.join(m.dir, 'a.txt'), 'changed, never checkpointed\n')
    fs.writeFileSync(path.join(m.dir, 'new.txt'), 'new\n')
    await m.client.close()
    const r = spawnSync(how[0]!, [...how.slice(1), m.dir], { encoding: 'utf8' })
    t.equal(r.status, 0, `${how.join(' ')} succeeded (${r.stderr})`)
    t.equal(await exited(m, 20000), 0, 'the daemon exits, status 0')
    t.notOk(isMounted(m.dir), 'nothing is mounted')
    t.equal(fs.readFileSync(path.join(m.dir, 'a.txt'), 'utf8'), 'changed, never checkpointed\n', 'the unsaved change is written back')
    t.equal(fs.readFileSync(path.join(m.dir, 'new.txt'), 'utf8'), 'new\n')
    const log = fs.readFileSync(path.join(m.home, 'daemon.log'), 'utf8')
    t.match(log, /unmounted from outside/, 'the log says what happened')
    await m.remount()
    const cps = await m.client.log({})
    t.ok(cps.some(c => c.label === 'unmount'), 'the final checkpoint was sealed')
    t.equal(fs.readFileSync(path.join(m.dir, 'a.txt'), 'utf8'), 'changed, never checkpointed\n', 'the next mount shows it')
  })
}

t.test('SIGTERM: the daemon unmounts, writes back and exits', async t => {
  const m = await mountWorkspace(t)
  fs.writeFileSync(path.join(m.dir, 'b.txt'), 'unsaved\n')
  await m.client.close()
  m.daemon.kill('SIGTERM')
  t.equal(await exited(m, 20000), 0, 'the daemon exits, status 0')
  t.notOk(isMounted(m.dir), 'nothing is mounted')
  t.equal(fs.readFileSync(path.join(m.dir, 'b.txt'), 'utf8'), 'unsaved\n', 'written back')
})

t.test('umount -l DIR (lazy): the daemon writes back through the directory it opened and exits', async t => {
  const m = await mountWorkspace(t)
  fs.writeFileSync(path.join(m.dir, 'c.txt'), 'kept\n')
  await m.client.close()
  spawnSync('umount', ['-l', m.dir])
  t.equal(await exited(m, 20000), 0, 'the daemon exits')
  t.equal(fs.readFileSync(path.join(m.dir, 'c.txt'), 'utf8'), 'kept\n', 'written back')
})
