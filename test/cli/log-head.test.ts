/**
 * What `log`, `checkpoint` and `status` say (issue 11, items 5 and 8):
 * `log` marks the head (`*`) and names the current branch, mounted or not;
 * the inode counts are named for what they count ("recorded": inodes with
 * a record in the store, not paths of the tree) and defined in the CLI's
 * words; `status` shows live values (unsaved inodes and bytes, requests).
 */
import t from 'tap'
import fs from 'node:fs'
import path from 'node:path'
import { mountWorkspace } from '../helpers/mount.js'

t.test('log marks the head and branch; counts say what they count', async t => {
  const m = await mountWorkspace(t, dir => { for (let i = 0; i < 30; i++) fs.writeFileSync(path.join(dir, `f${i}`), `${i}\n`) })
  fs.writeFileSync(path.join(m.dir, 'new'), 'x\n')
  const cp = await m.cli(['checkpoint', '-m', 'two'])
  t.match(cp.stdout, /^checkpoint #2 \(\d+ inodes? recorded, /, `checkpoint names its count: ${cp.stdout}`)
  let log = await m.cli(['log'])
  t.match(log.stdout, /^on branch main, at #2 \(\*\); "recorded": inodes recorded in the store: created, changed or listed through the mount/, `log names the branch and head: ${log.stdout}`)
  t.match(log.stdout, /^\* #2 .* recorded .*two$/m, 'and marks the head')
  t.match(log.stdout, /^ {2}#1 /m, 'and no other')
  t.equal((await m.cli(['restore', '1'])).code, 0)
  log = await m.cli(['log'])
  t.match(log.stdout, /^on branch b1, at #1 \(\*\)/, `after a restore: the new branch and its head: ${log.stdout}`)
  t.match(log.stdout, /^\* #1 /m, 'the restored checkpoint is marked')
  t.notMatch(log.stdout, /^\* #2 /m)
  fs.writeFileSync(path.join(m.dir, 'f1'), 'changed\n')
  const st = await m.cli(['status'])
  t.match(st.stdout, /^inodes +\d+ recorded now \(inodes recorded in the store/m, `status defines its count: ${st.stdout}`)
  t.match(st.stdout, /^unsaved +1 paths changed since the head \([1-9]\d* inodes recorded or changed, 8 bytes written\)/m, 'and shows unsaved inodes and bytes')
  t.match(st.stdout, /protocol \d+, [1-9]\d* FUSE requests served$/m, 'and requests served')
  await m.unmount()
  log = await m.cli(['log'])
  t.match(log.stdout, /^on branch b1, at #\d+ \(\*\) \(not mounted: the next mount goes on from there\)/, `a stopped store says the same: ${log.stdout}`)
  t.match(log.stdout, /^\* #\d+ .*unmount$/m, 'the unmount checkpoint is the head')
})

t.test('a remount continues the branch it left', async t => {
  const m = await mountWorkspace(t, dir => fs.writeFileSync(path.join(dir, 'a'), 'a\n'))
  fs.writeFileSync(path.join(m.dir, 'a'), 'b\n')
  const two = await m.client.mark({ label: 'two' })
  await m.client.restore({ id: 1 })
  const branch = (await m.client.status()).branch
  t.not(branch, 'main', `a restore starts a branch (${branch})`)
  await m.unmount()
  // the head the unmount left, as log on the stopped store says (the newest id is #2, on main)
  const head = { id: Number(/^on branch \S+, at #(\d+) /.exec((await m.cli(['log'])).stdout)?.[1]) }
  await m.remount()
  const after = await m.client.log({})
  const mount = after[0]
  t.equal(mount.label, 'mount', 'the remount made its checkpoint')
  t.equal(mount.branch, branch, 'on the branch the unmount left (the directory is unchanged)')
  t.equal(mount.parent, head.id, `after the last checkpoint of that session (#${head.id})`)
  t.equal((await m.client.status()).branch, branch, 'and the workspace goes on on it')
  t.equal(new Set(after.map(c => c.branch)).size, 2, `no branch but main and ${branch} (${two.branch} held #${two.id})`)
  const log = await m.cli(['log'])
  t.match(log.stdout, new RegExp(`^on branch ${branch}, at #${mount.id} \\(\\*\\)`), 'log says so')
})
