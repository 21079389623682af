/**
 * kill -9 of the daemon: no hung mount point, every acknowledged checkpoint and
 * fsync'ed byte survives, and the next mount clears a dead mount and resumes.
 */
import t from 'tap'
import fs from 'node:fs'
import path from 'node:path'
import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import { mountWorkspace, CLI } from '../helpers/mount.js'
import { killLeavingDeadMount } from '../helpers/crash.js'
import { smallTree, shellManifest } from '../helpers/small-tree.js'

const run = promisify(execFile)

t.test('kill -9: no hung mount point; every acknowledged checkpoint restores exactly', async t => {
  const m = await mountWorkspace(t, smallTree)
  fs.writeFileSync(path.join(m.dir, 'kept.bin'), Buffer.alloc(300000, 7))
  fs.mkdirSync(path.join(m.dir, 'newdir'))
  const acked = await shellManifest(m.dir)
  const cp = await m.client.mark({ label: 'acked' })
  fs.writeFileSync(path.join(m.dir, 'unacked.txt'), 'lost with the daemon')
  await m.kill9()
  t.doesNotThrow(() => fs.readdirSync(m.dir), 'the mount point is usable (no ENOTCONN)')
  await m.remount()
  t.equal(await shellManifest(m.dir), acked, 'the live state after remount is the last acknowledged checkpoint')
  fs.rmSync(path.join(m.dir, 'kept.bin'))
  await m.client.restore({ id: cp.id })
  t.equal(await shellManifest(m.dir), acked, 'and it restores exactly')
})

t.test('kill -9: data acknowledged by fsync survives', async t => {
  const m = await mountWorkspace(t, smallTree)
  const cp = await m.client.mark({ label: 'before' })
  const f = path.join(m.dir, 'src/journal.db')
  const fd = fs.openSync(f, 'w')
  fs.writeSync(fd, Buffer.alloc(200000, 3))
  fs.fsyncSync(fd)
  fs.closeSync(fd)
  fs.writeFileSync(path.join(m.dir, 'src/lib/a.txt'), 'fsynced edit\n')
  const d = fs.openSync(path.join(m.dir, 'src/lib/a.txt'), 'r')
  fs.fsyncSync(d)
  fs.closeSync(d)
  const durable = await shellManifest(m.dir)
  await m.kill9()
  await m.remount()
  t.equal(await shellManifest(m.dir), durable, 'the state the last fsync made durable is back after kill -9')
  t.equal(fs.readFileSync(f).length, 200000)
  const log = await m.client.log({})
  t.ok(log.some(c => c.id === cp.id), 'checkpoints are still there')
  await m.client.restore({ id: cp.id })
  t.notOk(fs.existsSync(f), 'and an earlier checkpoint restores without it')
  const back = log.find(c => c.label?.startsWith('before restore'))
  t.equal(back, undefined, 'no checkpoint was made by fsync')
})

t.test('a kill that leaves a dead mount: rewindfs mount DIR clears it and resumes', async t => {
  // the fusermount helper (auto_unmount) killed with the daemon, as a container or OOM kill does:
  // the mount point stays, dead ("Transport endpoint is not connected")
  for (const cached of [false, true]) {
    await t.test(cached ? 'with the root\'s attributes in the kernel cache' : 'with nothing cached', async t => {
      const m = await mountWorkspace(t, smallTree)
      fs.writeFileSync(path.join(m.dir, 'kept.txt'), 'kept\n')
      await m.client.mark({ label: 'before the kill' })
      // stat answered from the attribute cache made the dead mount look alive
      if (cached) { fs.statSync(m.dir); fs.readdirSync(m.dir); fs.statSync(m.dir) } else fs.rmSync(path.join(m.dir, 'README'))
      const helper = await killLeavingDeadMount(m)
      t.ok(helper, 'the daemon had a fusermount helper')
      t.throws(() => fs.readdirSync(m.dir), { code: 'ENOTCONN' }, 'the mount point is dead')
      const r = await run(process.execPath, [CLI, 'mount', m.dir, '--store', m.store], { env: { ...process.env, REWINDFS_HOME: m.home }, timeout: 60000 }).catch(e => e)
      t.match(r.stdout, /^mounted /m, `the CLI mounts (${r.stderr ?? ''})`)
      t.match(r.stdout, /clearing a stale mount/, 'and says it cleared the dead mount')
      t.match(r.stdout, /resumed from checkpoint/, 'and that it resumed')
      t.equal(fs.readFileSync(path.join(m.dir, 'kept.txt'), 'utf8'), 'kept\n', 'the last checkpoint is back')
      const u = await m.cli(['unmount', '--discard'])
      t.equal(u.code, 0, u.stderr)
    })
  }
})
