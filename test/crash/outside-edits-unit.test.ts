/**
 * Crash resume's rule for edits made to the directory while not mounted
 * (fs/outside-edits.ts), without FUSE: for every path edited in the
 * directory after the session started, the live workspace takes the
 * directory's version; the session's work elsewhere stays.
 */
import t from 'tap'
import fs from 'node:fs'
import path from 'node:path'
import { tempRoot, open, write, read } from '../helpers/workspace.js'
import { changedOutside } from '../../fs/lower.js'
import { adoptOutsideEdits } from '../../fs/outside-edits.js'

const tick = async (): Promise<void> => await new Promise(resolve => setTimeout(resolve, 20))
const exists = (ws: { resolve: (p: string) => number }, p: string): boolean => { try { ws.resolve(p); return true } catch { return false } }

t.test('the directory wins for edited paths, the session keeps the rest', async tt => {
  const { root, lowerDir } = tempRoot(tt, 'rewindfs-outside-edits-')
  const q = (r: string): string => path.join(lowerDir, r)
  fs.writeFileSync(q('edited.txt'), 'before the session\n')
  fs.writeFileSync(q('read-only.txt'), 'only read\n')
  fs.writeFileSync(q('gone.txt'), 'removed outside\n')
  fs.writeFileSync(q('keep.txt'), 'nobody edits it\n')
  fs.mkdirSync(q('d'))
  fs.writeFileSync(q('d/f.txt'), 'in a directory the session removes\n')
  fs.mkdirSync(q('lazy'))
  fs.writeFileSync(q('lazy/x.txt'), 'in a directory never listed\n')
  await tick()
  const s = await open(root, lowerDir)
  tt.teardown(s.close)
  const started = Date.now()
  await tick()
  // the session: changes edited.txt, makes only-store.txt, removes d/ (all only in the store)
  s.ws.readdir('')
  write(s.ws, 'edited.txt', 'the session\'s version\n')
  write(s.ws, 'only-store.txt', 'made in the session\n')
  s.ws.unlink('d/f.txt')
  s.ws.rmdir('d')
  tt.equal(read(s.ws, 'read-only.txt'), 'only read\n')
  // after the crash: the directory is edited
  await tick()
  fs.writeFileSync(q('edited.txt'), 'outside version\n')
  fs.writeFileSync(q('read-only.txt'), 'outside, longer than before\n')
  fs.rmSync(q('gone.txt'))
  fs.writeFileSync(q('new.txt'), 'made outside\n')
  fs.mkdirSync(q('newdir'))
  fs.writeFileSync(q('newdir/inner.txt'), 'a new tree\n')
  fs.writeFileSync(q('d/f.txt'), 'edited outside\n')
  fs.writeFileSync(q('lazy/x.txt'), 'edited under a directory never listed\n')
  const changed = changedOutside(s.ws.lower, lowerDir, started)
  tt.same(changed, ['', 'd/f.txt', 'edited.txt', 'lazy/x.txt', 'new.txt', 'newdir', 'newdir/inner.txt', 'read-only.txt'], 'the edited paths, by ctime')
  const r = adoptOutsideEdits(s.ws, changed)
  tt.same(r.failed, [], 'nothing failed')
  tt.same(r.removed, ['gone.txt'], 'a name read from the directory and removed there is removed')
  tt.same([...r.taken].sort(), ['d', 'edited.txt', 'new.txt', 'newdir', 'read-only.txt'], 'the others are taken (lazy/ shows through; d/, which the session removed, and newdir/ are taken whole)')
  tt.equal(read(s.ws, 'edited.txt'), 'outside version\n', 'a path the session changed: the directory wins')
  tt.equal(read(s.ws, 'read-only.txt'), 'outside, longer than before\n', 'a path the session read: the whole new content, not the old size')
  tt.notOk(exists(s.ws, 'gone.txt'), 'removed outside: gone')
  tt.equal(read(s.ws, 'new.txt'), 'made outside\n', 'made outside: there')
  tt.equal(read(s.ws, 'newdir/inner.txt'), 'a new tree\n', 'a new tree: there')
  tt.equal(read(s.ws, 'd/f.txt'), 'edited outside\n', 'edited below a directory the session removed: the directory is made again')
  tt.equal(read(s.ws, 'lazy/x.txt'), 'edited under a directory never listed\n', 'below a directory never listed: the directory shows through')
  tt.equal(read(s.ws, 'only-store.txt'), 'made in the session\n', 'the session\'s own file stays')
  tt.equal(read(s.ws, 'keep.txt'), 'nobody edits it\n', 'an unedited path is as it was')
  const cp = await s.gens.mark(s.ws, { label: 'edits made while not mounted' })
  tt.ok(cp.id > 0, 'the result can be marked as a checkpoint')
  tt.same(adoptOutsideEdits(s.ws, []), { taken: [], removed: [], failed: [] }, 'nothing changed: nothing done')
})

t.test('a path that cannot be taken is named and keeps the store\'s version', async tt => {
  const { root, lowerDir } = tempRoot(tt, 'rewindfs-outside-edits-')
  const s = await open(root, lowerDir)
  tt.teardown(s.close)
  write(s.ws, 'sub', 'a file in the store\n')
  fs.mkdirSync(path.join(lowerDir, 'sub'))
  fs.writeFileSync(path.join(lowerDir, 'sub/x'), 'below a name the live state has as a file\n')
  const r = adoptOutsideEdits(s.ws, ['gone-again.txt', 'sub/x'])
  tt.same(r.taken, [], 'nothing taken')
  tt.equal(r.failed.length, 1, 'one path failed (a path gone again since the scan is skipped)')
  tt.equal(r.failed[0]?.path, 'sub/x', 'named')
  tt.match(r.failed[0]?.reason, /not a directory/, 'with the reason')
  tt.equal(read(s.ws, 'sub'), 'a file in the store\n', 'the store\'s version stays')
})
