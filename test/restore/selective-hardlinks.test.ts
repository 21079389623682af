/**
 * Selective restore, undo and hard links (issue 16; a newcomer's data bug):
 * a directory restored from a checkpoint at which it was never listed
 * (still in the lower layer) must show its files as they were at the
 * checkpoint, not joined to the live inode of a hard link whose other name
 * lies outside it and was written since; names of one inode at the
 * checkpoint that are all restored stay one inode. Without FUSE, through
 * write-back for the bytes on disk.
 */
import t from 'tap'
import fs from 'node:fs'
import path from 'node:path'
import { tempRoot, open, write, read } from '../helpers/workspace.js'
import { writeBack } from '../../fs/writeback.js'
import { TreeView } from '../../fs/tree.js'
import { diffCheckpoints } from '../../fs/history/diff.js'

const noInvalidate = async (): Promise<void> => {}

t.test('a directory never listed at the checkpoint, holding one name of a hard link written since through its other name', async t => {
  const { root, lowerDir } = tempRoot(t, 'rewindfs-selhl-')
  fs.mkdirSync(path.join(lowerDir, 'dir'))
  fs.writeFileSync(path.join(lowerDir, 'dir/c.txt'), 'c\n')
  fs.linkSync(path.join(lowerDir, 'dir/c.txt'), path.join(lowerDir, 'c-link'))
  const { ws, gens, db, blocks, close } = await open(root, lowerDir)
  const c1 = await gens.mark(ws, { label: 'mount' }) // nothing listed yet
  write(ws, '/c-link', 'c\nzz\n')
  t.equal(read(ws, '/dir/c.txt'), 'c\nzz\n', 'one file: the other name shows the write')
  const c2 = await gens.mark(ws, { label: 'app' })
  // the checkpoint's own view is right
  const v1 = new TreeView(gens, ws, await gens.tableOf(c1.id))
  const at1 = await v1.at('dir/c.txt')
  t.ok(at1, 'checkpoint 1 has dir/c.txt')
  const buf = Buffer.alloc(16)
  t.equal(buf.subarray(0, v1.read(at1!, buf, 16, 0)).toString(), 'c\n', 'show 1:dir/c.txt reads the bytes of checkpoint 1')
  t.same((await diffCheckpoints(gens, ws, c1.id, c2.id)).map(e => `${e.change} ${e.path}`).filter(s => s.includes('c')),
    ['modified /c-link', 'modified /dir/c.txt'], 'diff 1 2 lists both names as modified')

  const r = await gens.restorePaths(ws, c1.id, [{ path: 'dir' }], noInvalidate)
  t.same(r.changes!.map(e => `${e.change} ${e.path}`), ['modified /dir/c.txt'], 'the restore reports the file')
  t.equal(read(ws, '/dir/c.txt'), 'c\n', 'the restored name has the bytes of checkpoint 1')
  t.equal(read(ws, '/c-link'), 'c\nzz\n', 'the other name, outside the directory, keeps the live bytes')
  t.not(ws.getattr('/dir/c.txt').ino, ws.getattr('/c-link').ino, 'two files now')
  t.equal(ws.getattr('/c-link').nlink, 1)
  t.equal(ws.getattr('/dir/c.txt').nlink, 1)
  const c3 = await gens.mark(ws, {})
  // after a full restore there and back the restore is still what it was
  await gens.restore(ws, c2.id, noInvalidate)
  await gens.restore(ws, c3.id, noInvalidate)
  t.equal(read(ws, '/dir/c.txt'), 'c\n', 'checkpointed')
  t.equal(read(ws, '/c-link'), 'c\nzz\n')
  const dirFd = fs.openSync(lowerDir, fs.constants.O_RDONLY | fs.constants.O_DIRECTORY)
  let wb
  try { wb = await writeBack({ ws, gens, db, blocks, dir: lowerDir, dirFd, log: () => {} }) } finally { fs.closeSync(dirFd) }
  t.same(wb.errors, [])
  t.equal(fs.readFileSync(path.join(lowerDir, 'dir/c.txt'), 'utf8'), 'c\n', 'on disk after write-back: the restored bytes')
  t.equal(fs.readFileSync(path.join(lowerDir, 'c-link'), 'utf8'), 'c\nzz\n', 'on disk: the other name\'s bytes')
  await close()
})

t.test('the same, restoring a file below a never-listed subdirectory, and a full restore of the checkpoint', async t => {
  const { root, lowerDir } = tempRoot(t, 'rewindfs-selhl-')
  fs.mkdirSync(path.join(lowerDir, 'dir/sub'), { recursive: true })
  fs.writeFileSync(path.join(lowerDir, 'dir/sub/c.txt'), 'c\n')
  fs.writeFileSync(path.join(lowerDir, 'dir/other.txt'), 'o\n')
  fs.linkSync(path.join(lowerDir, 'dir/sub/c.txt'), path.join(lowerDir, 'c-link'))
  const { ws, gens, close } = await open(root, lowerDir)
  const c1 = await gens.mark(ws, {})
  write(ws, '/c-link', 'c\nzz\n')
  write(ws, '/dir/other.txt', 'o2\n')
  await gens.mark(ws, {})
  await gens.restorePaths(ws, c1.id, [{ path: 'dir' }], noInvalidate)
  t.equal(read(ws, '/dir/sub/c.txt'), 'c\n', 'the name two levels down has the bytes of checkpoint 1')
  t.equal(read(ws, '/dir/other.txt'), 'o\n')
  t.equal(read(ws, '/c-link'), 'c\nzz\n')
  t.equal(ws.getattr('/c-link').nlink, 1, 'the live inode lost the name the restore replaced (its link count)')
  await gens.restore(ws, c1.id, noInvalidate)
  t.equal(read(ws, '/dir/sub/c.txt'), 'c\n', 'full restore: checkpoint 1\'s bytes')
  t.equal(read(ws, '/c-link'), 'c\n')
  t.equal(ws.getattr('/c-link').ino, ws.getattr('/dir/sub/c.txt').ino, 'full restore: one file again')
  await close()
})

t.test('one file below a directory never listed in the workspace, named directly', async t => {
  const { root, lowerDir } = tempRoot(t, 'rewindfs-selhl-')
  fs.mkdirSync(path.join(lowerDir, 'dir/sub'), { recursive: true })
  fs.writeFileSync(path.join(lowerDir, 'dir/sub/c.txt'), 'c\n')
  fs.writeFileSync(path.join(lowerDir, 'dir/sub/d.txt'), 'd\n')
  fs.linkSync(path.join(lowerDir, 'dir/sub/c.txt'), path.join(lowerDir, 'c-link'))
  const { ws, gens, close } = await open(root, lowerDir)
  const c1 = await gens.mark(ws, {})
  write(ws, '/c-link', 'c\nzz\n')
  await gens.mark(ws, {})
  const r = await gens.restorePaths(ws, c1.id, [{ path: 'dir/sub/c.txt' }], noInvalidate)
  t.same(r.changes!.map(e => `${e.change} ${e.path}`), ['modified /dir/sub/c.txt'])
  t.equal(read(ws, '/dir/sub/c.txt'), 'c\n', 'the restored name has the bytes of checkpoint 1')
  t.equal(read(ws, '/dir/sub/d.txt'), 'd\n', 'its sibling, listed by the restore, is there')
  t.equal(read(ws, '/c-link'), 'c\nzz\n')
  t.equal(ws.getattr('/c-link').nlink, 1)
  const c3 = await gens.mark(ws, {})
  await gens.restore(ws, c1.id, noInvalidate)
  await gens.restore(ws, c3.id, noInvalidate)
  t.equal(read(ws, '/dir/sub/d.txt'), 'd\n', 'and the checkpoint holds it')
  t.equal(read(ws, '/dir/sub/c.txt'), 'c\n')
  await close()
})

t.test('names of one inode at the checkpoint, all restored, stay one inode (selective restore and undo)', async t => {
  const { root, lowerDir } = tempRoot(t, 'rewindfs-selhl-')
  const { ws, gens, close } = await open(root, lowerDir)
  ws.mkdir('/a', 0o755, { uid: 0, gid: 0 })
  ws.mkdir('/b', 0o755, { uid: 0, gid: 0 })
  write(ws, '/a/x', 'v1\n')
  ws.link('/a/x', '/b/y')
  ws.link('/a/x', '/a/z')
  const c1 = await gens.mark(ws, {})
  write(ws, '/a/x', 'v2\n')
  const c2 = await gens.mark(ws, {})
  // two paths restored, each holding names of the inode
  await gens.restorePaths(ws, c1.id, [{ path: 'a' }, { path: 'b/y' }], noInvalidate)
  t.equal(read(ws, '/a/x'), 'v1\n')
  t.equal(ws.getattr('/a/x').ino, ws.getattr('/b/y').ino, 'a/x and b/y are one inode again')
  t.equal(ws.getattr('/a/x').ino, ws.getattr('/a/z').ino, 'and a/z')
  t.equal(ws.getattr('/b/y').nlink, 3, 'with three names')
  write(ws, '/b/y', 'v3\n')
  t.equal(read(ws, '/a/z'), 'v3\n', 'a write through one name shows through the others')
  // undo of the segment that wrote v2: every name reverted, one inode
  await gens.restore(ws, c2.id, noInvalidate)
  const u = await gens.undo(ws, c2.id, noInvalidate, false)
  t.equal(u.applied, true, JSON.stringify(u.conflicts))
  t.equal(read(ws, '/a/x'), 'v1\n', 'undo reverted the bytes')
  t.equal(ws.getattr('/a/x').ino, ws.getattr('/b/y').ino, 'undo keeps the names one inode')
  t.equal(ws.getattr('/a/x').ino, ws.getattr('/a/z').ino)
  t.equal(ws.getattr('/a/x').nlink, 3)
  await close()
})

t.test('a path at neither the checkpoint nor now is refused; a restore that changes nothing makes no checkpoint', async t => {
  const { root, lowerDir } = tempRoot(t, 'rewindfs-selhl-')
  const { ws, gens, close } = await open(root, lowerDir)
  write(ws, '/a.txt', 'v1')
  const c1 = await gens.mark(ws, {})
  write(ws, '/b.txt', 'unsaved elsewhere')
  const n = gens.checkpoints.size
  await t.rejects(gens.restorePaths(ws, c1.id, [{ path: 'no-such.txt' }], noInvalidate),
    { code: 'E_NOT_FOUND', message: /no-such\.txt: no such path at checkpoint 1 nor in the workspace.*nothing was changed/ })
  await t.rejects(gens.restorePaths(ws, c1.id, [{ path: 'a.txt' }, { path: 'gone/x' }], noInvalidate, { dryRun: true }),
    { code: 'E_NOT_FOUND', message: /^gone\/x: / }, 'a dry run is refused the same way')
  t.equal(gens.checkpoints.size, n, 'no checkpoint was made (the unsaved change was not sealed)')
  t.equal(read(ws, '/b.txt'), 'unsaved elsewhere')
  const same = await gens.restorePaths(ws, c1.id, [{ path: 'a.txt' }], noInvalidate)
  t.equal(same.result, null, 'a.txt is as at checkpoint 1: nothing restored')
  t.equal(same.saved, null, 'and the unsaved change elsewhere was not sealed for it')
  t.equal(gens.checkpoints.size, n, 'no checkpoint at all')
  // the undo messages name undo
  await t.rejects(gens.undo(ws, c1.id, noInvalidate, false), { code: 'E_BAD_REQUEST', message: /^undo 1: checkpoint 1 is the first checkpoint/ })
  await close()
})
