/**
 * unmount when the daemon dies before its write-back finished: it says so, and
 * the next mount resumes the final state.
 */
import t from 'tap'
import fs from 'node:fs'
import path from 'node:path'
import { mountWorkspace } from '../helpers/mount.js'
import { isMounted } from '../helpers/crash.js'

t.test('unmount says so when the daemon dies before its write-back finished', async t => {
  const m = await mountWorkspace(t, dir => { for (let i = 0; i < 3000; i++) fs.writeFileSync(path.join(dir, `f${i}`), `${i}\n`) })
  const c1 = await m.client.log({})
  fs.readdirSync(m.dir) // the listing becomes the daemon's
  await m.sh('rm -f f*')
  await m.client.mark({ label: 'all removed' })
  await m.client.close()
  // the write-back removes 3000 files; kill the daemon as soon as it starts (the kernel has let go of
  // the directory). Watched in /proc/mounts, not by listing the directory: a listing holds an fd
  // inside the mount, and unmount would refuse, naming this process as a user (seen under load)
  const pid = m.daemon.pid!
  const done = m.cli(['unmount'])
  for (let i = 0; i < 4000 && isMounted(m.dir); i++) await new Promise(resolve => setTimeout(resolve, 5))
  process.kill(pid, 'SIGKILL')
  const r = await done
  t.equal(r.code, 1, 'unmount exits 1')
  t.match(r.stderr, /exited before it finished unmounting .*Nothing is lost: rewindfs mount .* resumes from the store/, 'and says what happened and what to do')
  await new Promise(resolve => m.daemon.exitCode !== null || m.daemon.signalCode !== null ? resolve(null) : m.daemon.once('exit', resolve))
  await m.remount()
  t.same(fs.readdirSync(m.dir).filter(n => n.startsWith('f')), [], 'the next mount resumes the final state')
  await m.client.restore({ id: c1[0]!.id })
  t.equal(fs.readdirSync(m.dir).length, 3000, 'and the first checkpoint restores')
})
