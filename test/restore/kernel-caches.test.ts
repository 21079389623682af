/**
 * What the kernel holds across a restore (60 s cache timeouts): no stale cached
 * names, attributes or pages after it, and what an open handle whose inode is gone gets.
 */
import t from 'tap'
import fs from 'node:fs'
import path from 'node:path'
import { execFile } from 'node:child_process'
import { mountWorkspace } from '../helpers/mount.js'
import { fuseLayer } from '../../fuse/layer.js'
import { smallTree } from '../helpers/small-tree.js'

t.test('no stale kernel caches after a restore (60 s timeouts)', async t => {
  const m = await mountWorkspace(t, smallTree)
  const f = path.join(m.dir, 'src/lib/a.txt')
  fs.statSync(f)
  const cp = await m.client.mark({})
  fs.chmodSync(f, 0o600)
  fs.writeFileSync(f, 'a much longer content\n')
  fs.writeFileSync(path.join(m.dir, 'gone.txt'), 'x')
  fs.statSync(path.join(m.dir, 'gone.txt'))
  const fd = fs.openSync(path.join(m.dir, 'README'), 'r')
  fs.writeFileSync(path.join(m.dir, 'README'), 'README changed in place\n')
  // a process whose cwd is inside the tree across the restore
  const shell = execFile('bash', ['-c', 'read x; stat -c "%a %s" lib/a.txt; cat lib/a.txt'], { cwd: path.join(m.dir, 'src') })
  let out = ''
  shell.stdout!.on('data', d => { out += d })
  const r = await m.client.restore({ id: cp.id })
  t.ok(r.changed >= 3, 'changed inodes counted')
  const st = fs.statSync(f)
  t.equal(st.mode & 0o777, 0o644, 'mode restored (attribute cache invalidated)')
  t.equal(st.size, 6, 'size restored')
  t.equal(fs.readFileSync(f, 'utf8'), 'alpha\n')
  t.throws(() => fs.statSync(path.join(m.dir, 'gone.txt')), { code: 'ENOENT' }, 'created file gone (entry invalidated)')
  const buf = Buffer.alloc(100)
  const n = fs.readSync(fd, buf, 0, 100, 0)
  // ll (issue 13): a restore acts like renaming the checkpoint's tree over the live one, so a descriptor keeps the
  // content its file had; hl: the handle follows its path's inode, which now holds the restored bytes
  if (fuseLayer() === 'll') t.equal(buf.subarray(0, n).toString(), 'README changed in place\n', 'an fd opened before the restore keeps the bytes its file had (ll)')
  else t.equal(buf.subarray(0, n).toString(), 'readme\n', 'an fd opened before the restore reads the restored bytes (hl)')
  t.equal(fs.readFileSync(path.join(m.dir, 'README'), 'utf8'), 'readme\n', 'a new open reads the restored bytes')
  fs.closeSync(fd)
  shell.stdin!.end('go\n')
  await new Promise(resolve => shell.on('exit', resolve))
  t.equal(out, '644 6\nalpha\n', 'a process with its cwd inside sees the restored state')
})

for (const layer of ['hl', 'll'] as const) {
  t.test(`${layer}: an open handle whose inode is gone after a restore ${layer === 'll' ? 'keeps its content, its writes private' : 'fails with ESTALE'}`, async t => {
    const m = await mountWorkspace(t, smallTree, { env: { REWINDFS_FUSE: layer } })
    const cp = await m.client.mark({})
    const fd = fs.openSync(path.join(m.dir, 'born-later.txt'), 'w+')
    fs.writeSync(fd, 'data')
    await m.client.restore({ id: cp.id })
    if (layer === 'hl') {
      // libfuse 2.9 knows the file by its name: ESTALE ("Stale file handle"; libuv has no name for it), or EIO once the kernel looked the name up again (README)
      const errnoOf = (f: () => unknown): number | undefined => { try { f(); return undefined } catch (e) { return (e as { errno?: number }).errno } }
      t.ok([-116, -5].includes(errnoOf(() => fs.readSync(fd, Buffer.alloc(4), 0, 4, 0)) ?? 0), 'read on the vanished inode fails with ESTALE or EIO')
      t.ok([-116, -5].includes(errnoOf(() => fs.writeSync(fd, 'more')) ?? 0), 'and so does write')
      try { fs.closeSync(fd) } catch {} // its flush may fail the same way
    } else {
      // issue 13: as if the checkpoint's tree had been renamed over the live one: the file lives on, unlinked, for its descriptor
      const b = Buffer.alloc(16)
      t.equal(b.subarray(0, fs.readSync(fd, b, 0, 16, 0)).toString(), 'data', 'read on the vanished inode gives the content it had')
      t.equal(fs.writeSync(fd, 'more'), 4, 'a write succeeds')
      t.equal(b.subarray(0, fs.readSync(fd, b, 0, 16, 0)).toString(), 'datamore', 'and is read back through the descriptor (a private copy)')
      t.equal(fs.fstatSync(fd).nlink, 0, 'fstat says nlink 0, as for an unlinked file')
      fs.closeSync(fd)
    }
    t.notOk(fs.existsSync(path.join(m.dir, 'born-later.txt')), 'the file is not in the restored state')
  })
}
