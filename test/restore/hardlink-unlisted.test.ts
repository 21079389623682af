/**
 * A hard link of the directory whose other name lies in a directory never
 * listed through the mount (issue 11, the newcomer's data-exactness bug):
 * after a write through one name, every checkpoint, export, restore and the
 * unmount's write-back must show the new content under the other name too,
 * and keep the two names one file.
 */
import t from 'tap'
import fs from 'node:fs'
import path from 'node:path'
import { mountWorkspace } from '../helpers/mount.js'

const populate = (dir: string): void => {
  fs.mkdirSync(path.join(dir, 'd'))
  fs.writeFileSync(path.join(dir, 'f'), 'a\n')
  fs.linkSync(path.join(dir, 'f'), path.join(dir, 'd', 'g'))
}

t.test('the other name of a written hard link, in a directory never listed', async t => {
  const m = await mountWorkspace(t, populate)
  fs.writeFileSync(path.join(m.dir, 'f'), 'b\n')
  const cp = await m.cli(['checkpoint', '--json'])
  t.equal(cp.code, 0, cp.stderr)
  const id = JSON.parse(cp.stdout).id as number
  const show = await m.cli(['show', `${id}:d/g`])
  t.equal(show.stdout, 'b\n', 'show ID:d/g prints the content written through f')
  const out = path.join(m.root, 'exported')
  const ex = await m.cli(['export', String(id), out])
  t.equal(ex.code, 0, ex.stderr)
  t.equal(fs.readFileSync(path.join(out, 'd', 'g'), 'utf8'), 'b\n', 'export writes it under d/g')
  t.equal(fs.statSync(path.join(out, 'd', 'g')).ino, fs.statSync(path.join(out, 'f')).ino, 'and keeps f and d/g one file')
  const first = await m.cli(['show', '1:d/g'])
  t.equal(first.stdout, 'a\n', 'checkpoint 1 still shows the old content')
  t.equal((await m.cli(['restore', '1'])).code, 0)
  t.equal(fs.readFileSync(path.join(m.dir, 'd', 'g'), 'utf8'), 'a\n', 'restore 1: d/g holds a')
  t.equal((await m.cli(['restore', String(id)])).code, 0)
  t.equal(fs.readFileSync(path.join(m.dir, 'd', 'g'), 'utf8'), 'b\n', `restore ${id} after 1: d/g holds b`)
  t.equal(fs.readFileSync(path.join(m.dir, 'f'), 'utf8'), 'b\n', 'and f too')
  await m.unmount()
  t.equal(fs.readFileSync(path.join(m.dir, 'd', 'g'), 'utf8'), 'b\n', 'the write-back leaves b under d/g')
  t.equal(fs.statSync(path.join(m.dir, 'd', 'g')).ino, fs.statSync(path.join(m.dir, 'f')).ino, 'and f and d/g one file')
})

t.test('after a remount, an earlier session\'s checkpoint still joins the names', async t => {
  const m = await mountWorkspace(t, populate)
  fs.writeFileSync(path.join(m.dir, 'f'), 'b\n')
  const cp = await m.cli(['checkpoint', '--json'])
  const id = JSON.parse(cp.stdout).id as number
  await m.unmount()
  await m.remount()
  const show = await m.cli(['show', `${id}:d/g`])
  t.equal(show.stdout, 'b\n', `show ${id}:d/g in the next session prints b (${show.stderr})`)
})
