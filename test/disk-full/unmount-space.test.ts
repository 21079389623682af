/**
 * Unmount freezes the whole directory into the store (fs/writeback.ts).
 * When the store has no room for copies of the files the session did not
 * change, the unmount still writes back (the paths it changes are frozen
 * first, they are small) and warns that this session's checkpoints read the
 * unchanged files from the directory; mounting and unmounting again once
 * space is back freezes them. The store lives on a small tmpfs (needs root).
 */
import t from 'tap'
import fs from 'node:fs'
import path from 'node:path'
import crypto from 'node:crypto'
import { execFileSync } from 'node:child_process'
import { mountWorkspace, storeTmpfs } from '../helpers/mount.js'

const MiB = 1024 * 1024
const fsDir = storeTmpfs(t, '24m')
if (fsDir !== null) {
  process.env.REWINDFS_RESERVE = '4MB'
  const big = crypto.randomBytes(30 * MiB) // more than the store's filesystem holds
  const m = await mountWorkspace(t, dir => {
    fs.writeFileSync(path.join(dir, 'big.bin'), big)
    fs.writeFileSync(path.join(dir, 'small.txt'), 'small\n')
  }, { store: () => path.join(fsDir, 'store') })
  const log = (): string => fs.readFileSync(path.join(m.home, 'daemon.log'), 'utf8')

  await t.test('a store too small to freeze the unchanged files: the unmount writes back and warns', async tt => {
    fs.writeFileSync(path.join(m.dir, 'small.txt'), 'changed through the mount\n')
    await m.client.mark({ label: 'small changed' })
    await m.client.close()
    const u = await m.cli(['unmount'])
    tt.equal(u.code, 0, `rewindfs unmount succeeds: ${u.stderr}`)
    tt.match(u.stderr, /warning: the store had no space to keep a copy of the files the unmount did not change/, 'rewindfs unmount prints the warning')
    await new Promise(resolve => m.daemon.exitCode !== null || m.daemon.signalCode !== null ? resolve(null) : m.daemon.once('exit', resolve))
    tt.equal(fs.readFileSync(path.join(m.dir, 'small.txt'), 'utf8'), 'changed through the mount\n', 'the write-back happened')
    tt.same(fs.readFileSync(path.join(m.dir, 'big.bin')), big, 'the unchanged file is as it was')
    tt.match(log(), /wrote the final state back/, 'the daemon says it wrote back')
    tt.match(log(), /warning: the store had no space to keep a copy of the files the unmount did not change/, 'and warns that the unchanged files were not frozen')
  })

  await t.test('with space back, a mount and an unmount freeze them', async tt => {
    execFileSync('mount', ['-o', 'remount,size=200m', fsDir])
    const before = log().length
    await m.remount()
    await m.unmount()
    const after = log().slice(before)
    tt.match(after, /wrote the final state back/, 'the second unmount wrote back')
    tt.notMatch(after, /warning: the store had no space/, 'without the warning')
    // the copy is in the store now: the directory can change without touching the first session's checkpoints
    fs.writeFileSync(path.join(m.dir, 'big.bin'), 'replaced while not mounted\n')
    await m.remount()
    const first = (await m.client.log({ limit: 1000 })).at(-1)!
    await m.client.restore({ id: first.id })
    tt.same(fs.readFileSync(path.join(m.dir, 'big.bin')), big, `checkpoint #${first.id} restores the original big.bin`)
    tt.equal(fs.readFileSync(path.join(m.dir, 'small.txt'), 'utf8'), 'small\n', 'and the original small.txt')
  })
}
