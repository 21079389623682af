/**
 * The newcomer's data bug through a real mount and the CLI: selective
 * restore of a directory holding one name of a hard link whose other name
 * lies outside it and was written through the mount after a checkpoint at
 * which the directory was never listed. The restored name must show the
 * checkpoint's bytes through the mount and on disk after unmount, the other
 * name its own. Also: a path at neither the checkpoint nor now fails and
 * changes nothing.
 */
import t from 'tap'
import fs from 'node:fs'
import path from 'node:path'
import { mountWorkspace } from '../helpers/mount.js'

const populate = (dir: string): void => {
  fs.mkdirSync(path.join(dir, 'dir'))
  fs.writeFileSync(path.join(dir, 'dir', 'c.txt'), 'c\n')
  fs.linkSync(path.join(dir, 'dir', 'c.txt'), path.join(dir, 'c-link'))
}

t.test('restore 1 -- dir puts back dir/c.txt while c-link keeps its bytes, through the mount and after unmount', async t => {
  const m = await mountWorkspace(t, populate)
  fs.appendFileSync(path.join(m.dir, 'c-link'), 'zz\n')
  const cp = await m.cli(['checkpoint', '-m', 'app', '--json'])
  t.equal(cp.code, 0, cp.stderr)
  const r = await m.cli(['restore', '1', '--', path.join(m.dir, 'dir')])
  t.equal(r.code, 0, r.stderr)
  t.match(r.stdout, /^M \/dir\/c\.txt$/m, 'the restore lists the file')
  t.equal(fs.readFileSync(path.join(m.dir, 'dir', 'c.txt'), 'utf8'), 'c\n', 'through the mount: the bytes of checkpoint 1')
  t.equal(fs.readFileSync(path.join(m.dir, 'c-link'), 'utf8'), 'c\nzz\n', 'the other name keeps the bytes written through it')
  t.equal(fs.statSync(path.join(m.dir, 'c-link')).nlink, 1, 'two files now')
  const show = await m.cli(['show', '1:dir/c.txt'])
  t.equal(show.stdout, 'c\n', 'show 1:dir/c.txt')
  // a path at neither checkpoint 1 nor now: refused, nothing changed
  const before = (await m.cli(['log', '--json'])).stdout
  const bad = await m.cli(['restore', '1', '--', path.join(m.dir, 'no-such-file')])
  t.equal(bad.code, 1, 'exit status 1')
  t.match(bad.stderr, /no-such-file: no such path at checkpoint 1 nor in the workspace/)
  t.equal((await m.cli(['log', '--json'])).stdout, before, 'no checkpoint was made')
  await m.unmount()
  t.equal(fs.readFileSync(path.join(m.dir, 'dir', 'c.txt'), 'utf8'), 'c\n', 'on disk after unmount: the restored bytes')
  t.equal(fs.readFileSync(path.join(m.dir, 'c-link'), 'utf8'), 'c\nzz\n', 'on disk: the other name\'s bytes')
})
