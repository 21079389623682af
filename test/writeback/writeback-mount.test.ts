/**
 * Write-back at unmount through the daemon: the final state written back or
 * discarded, a path it cannot write fails loudly and loses nothing, an xattr
 * the directory cannot hold is skipped.
 */
import t from 'tap'
import fs from 'node:fs'
import path from 'node:path'
import { mountWorkspace } from '../helpers/mount.js'
import { smallTree, shellManifest } from '../helpers/small-tree.js'

t.test('unmount writes the final state back; --discard keeps the original', async t => {
  const m = await mountWorkspace(t, smallTree)
  fs.writeFileSync(path.join(m.dir, 'src/lib/a.txt'), 'final\n')
  fs.rmSync(path.join(m.dir, 'README'))
  fs.mkdirSync(path.join(m.dir, 'added/deeper'), { recursive: true })
  fs.chmodSync(path.join(m.dir, 'src'), 0o700)
  const final = await shellManifest(m.dir)
  const cp = (await m.client.log({}))[0]
  await m.unmount(false)
  const onDisk = await shellManifest(m.dir)
  t.equal(onDisk, final, 'the directory holds the final state (the manifest has times to the nanosecond)')
  await m.remount()
  fs.writeFileSync(path.join(m.dir, 'scratch'), 'x')
  await m.unmount(true)
  t.equal(await shellManifest(m.dir), final, '--discard leaves the directory as it was at mount')
  await m.remount()
  const first = (await m.client.log({})).at(-1)!
  t.equal(first.label, 'mount')
  await m.client.restore({ id: first.id })
  t.equal(fs.readFileSync(path.join(m.dir, 'src/lib/a.txt'), 'utf8'), 'alpha\n', 'a checkpoint from before the write-back still restores its original content')
  t.equal(fs.readFileSync(path.join(m.dir, 'README'), 'utf8'), 'readme\n')
  t.ok((await m.client.log({})).some(c => c.id === cp.id), 'the checkpoint from before the unmount is still in the log after a remount')
})

t.test('a write-back that cannot write a path fails loudly and loses nothing', async t => {
  const m = await mountWorkspace(t, smallTree)
  // a path longer than PATH_MAX (4096): made with relative steps inside the mount
  const comp = 'd'.repeat(200)
  const deep = await m.sh(`for i in $(seq 22); do mkdir ${comp} && cd ${comp} || exit 1; done; echo deep > deepfile`)
  t.equal(deep.code, 0, deep.stderr)
  fs.writeFileSync(path.join(m.dir, 'after.txt'), 'written after the deep tree\n')
  await m.client.close()
  const u = await m.cli(['unmount'])
  t.equal(u.code, 1, 'unmount exits 1')
  t.match(u.stderr, /writing the final state back failed/, 'says write-back failed')
  t.match(u.stderr, /Nothing is lost/, 'and that nothing is lost')
  t.ok(fs.existsSync(path.join(m.dir, 'after.txt')), 'siblings of the failing path were still written')
  await new Promise(resolve => m.daemon.exitCode !== null || m.daemon.signalCode !== null ? resolve(null) : m.daemon.once('exit', resolve))
  await m.remount()
  const back = await m.sh(`for i in $(seq 22); do cd ${comp} || exit 1; done; cat deepfile`)
  t.equal(back.stdout, 'deep\n', 'the next mount resumes with the deep file')
  await m.sh(`rm -rf ${comp}`)
  await m.unmount(false)
  t.equal(fs.readFileSync(path.join(m.dir, 'after.txt'), 'utf8'), 'written after the deep tree\n')
  t.notOk(fs.existsSync(path.join(m.dir, comp)), 'after removing it, write-back completes')
})

t.test('write-back skips an xattr the directory cannot hold (too large) and still completes', async t => {
  const m = await mountWorkspace(t, smallTree)
  const f = path.join(m.dir, 'README')
  const py = fs.existsSync('/usr/bin/python3') ? '/usr/bin/python3' : 'python3'
  const set = await m.sh(`${py} -c "import os; os.setxattr('${f}', 'user.small', b'ok'); os.setxattr('${f}', 'user.big', b'x' * 60000)"`)
  t.equal(set.code, 0, set.stderr)
  await m.unmount(false)
  const got = await m.sh(`${py} -c "import os; print(os.getxattr('${f}', 'user.small').decode())"`)
  t.equal(got.stdout, 'ok\n', 'the xattr the filesystem can hold is written back')
  const outcome = JSON.parse(fs.readFileSync(path.join(m.store, 'unmount.json'), 'utf8'))
  t.same([outcome.ok, outcome.errors], [true, []], 'the unmount reports a complete write-back')
})
