/**
 * Selective restore (issue 16) without FUSE: a file, a subtree, a path that
 * did not exist at the checkpoint (removed), a file renamed away since
 * (restored beside it), the rest byte-identical; the dry run changes
 * nothing; the restore is a new checkpoint on the same branch and is
 * undone by restoring the checkpoint before it; the invalidation plan
 * names the changed paths; bad input is refused with nothing changed.
 */
import t from 'tap'
import fs from 'node:fs'
import path from 'node:path'
import { tempRoot, open, write, read, me } from '../helpers/workspace.js'
import type { Workspace } from '../../fs/workspace.js'
import type { InvalidationPlan } from '../../fs/api.js'
import { isDir } from '../../fs/inode.js'
import { writeBack } from '../../fs/writeback.js'

const noInvalidate = async (): Promise<void> => {}

/** Every path with type and content (files: bytes; symlinks: target), sorted. */
function manifest (ws: Workspace, p = '/'): Map<string, string> {
  const out = new Map<string, string>()
  const walk = (dir: string): void => {
    const { names } = ws.readdir(dir)
    for (const n of names) {
      if (n === '.' || n === '..') continue
      const q = dir === '/' ? `/${n}` : `${dir}/${n}`
      const r = ws.get(ws.resolve(q))!
      if (isDir(r)) { out.set(q, `dir ${(r.mode & 0o7777).toString(8)}`); walk(q) } else if (r.target !== undefined) out.set(q, `link ${r.target}`)
      else out.set(q, `file ${(r.mode & 0o7777).toString(8)} ${read(ws, q)}`)
    }
  }
  walk(p)
  return out
}

function without (m: Map<string, string>, prefixes: string[]): Map<string, string> {
  return new Map([...m].filter(([k]) => !prefixes.some(p => k === p || k.startsWith(p + '/'))))
}

t.test('a file, a subtree and a path absent at the checkpoint go back; the rest is byte-identical', async t => {
  const { root, lowerDir } = tempRoot(t, 'rewindfs-sel-')
  fs.mkdirSync(path.join(lowerDir, 'src'))
  fs.writeFileSync(path.join(lowerDir, 'src/a.txt'), 'lower a\n')
  fs.writeFileSync(path.join(lowerDir, 'keep.txt'), 'keep v1\n')
  const { ws, gens, close } = await open(root, lowerDir)
  write(ws, '/notes.md', 'notes v1')
  ws.mkdir('/src/lib', 0o755, me)
  write(ws, '/src/lib/x.js', 'x v1')
  write(ws, '/src/lib/y.js', 'y v1')
  const c1 = await gens.mark(ws, { label: 'good' })
  // the damage, over two segments
  write(ws, '/notes.md', 'notes v2 (broken)')
  ws.chmod('/notes.md', 0o600)
  ws.unlink('/src/lib/x.js')
  write(ws, '/src/lib/y.js', 'y v2')
  write(ws, '/src/lib/z.js', 'z new')
  write(ws, '/keep.txt', 'keep v2\n')
  await gens.mark(ws, { label: 'bad' })
  write(ws, '/stray.tmp', 'stray')
  write(ws, '/src/a.txt', 'a v2 (unsaved)')
  const beforeAll = manifest(ws)
  const branch = gens.state.branch

  // dry run: lists, changes nothing
  const dry = await gens.restorePaths(ws, c1.id, [{ path: 'notes.md' }, { path: 'src/lib' }, { path: 'stray.tmp' }], noInvalidate, { dryRun: true })
  t.equal(dry.dryRun, true)
  t.equal(dry.result, null)
  t.same(dry.changes, [
    { path: '/notes.md', change: 'modified' },
    { path: '/src/lib', change: 'meta' },
    { path: '/src/lib/x.js', change: 'added' },
    { path: '/src/lib/y.js', change: 'modified' },
    { path: '/src/lib/z.js', change: 'deleted' },
    { path: '/stray.tmp', change: 'deleted' }
  ], 'the dry run lists what the restore changes, from the workspace to the checkpoint')
  t.same(manifest(ws), beforeAll, 'the dry run changed nothing')
  t.equal(gens.checkpoints.size, 2, 'and made no checkpoint')

  const plans: InvalidationPlan[] = []
  const r = await gens.restorePaths(ws, c1.id, [{ path: 'notes.md' }, { path: 'src/lib' }, { path: 'stray.tmp' }, { path: 'src/lib/y.js' }], async p => { plans.push(p) })
  t.same(r.paths, ['notes.md', 'src/lib', 'stray.tmp'], 'a path below another restored path is covered by it')
  t.equal(r.branch, branch, 'no new branch')
  t.equal(gens.state.branch, branch)
  t.ok(r.saved !== null, 'the unsaved changes were sealed first')
  t.equal(gens.checkpoints.get(r.saved!)!.label, `before restore of paths from ${c1.id}`)
  t.ok(typeof r.result === 'number' && r.result > r.saved!, 'the result is a new checkpoint')
  t.equal(gens.state.head, r.result, 'the head is the result')
  t.equal(gens.checkpoints.get(r.result!)!.parent, r.saved, 'it continues the current branch')
  t.equal(r.changed, 6)
  const after = manifest(ws)
  t.equal(after.get('/notes.md'), 'file 644 notes v1', 'a file: content and mode back')
  t.equal(after.get('/src/lib/x.js'), 'file 644 x v1', 'a deleted file in the subtree is back')
  t.equal(after.get('/src/lib/y.js'), 'file 644 y v1')
  t.notOk(after.has('/src/lib/z.js'), 'a file added to the subtree since is gone')
  t.notOk(after.has('/stray.tmp'), 'a path absent at the checkpoint is removed')
  t.same(without(after, ['/notes.md', '/src/lib', '/stray.tmp']), without(beforeAll, ['/notes.md', '/src/lib', '/stray.tmp']), 'every other path is byte-identical')
  t.equal(read(ws, '/src/a.txt'), 'a v2 (unsaved)', 'unsaved work elsewhere stays')
  t.equal(read(ws, '/keep.txt'), 'keep v2\n')
  t.equal(plans.length, 1, 'the kernel caches are invalidated once')
  t.ok(plans[0].entries.includes('/stray.tmp') && plans[0].entries.includes('/src/lib/z.js'), 'names that vanish are invalidated')
  t.ok(plans[0].inodes.includes('/notes.md'), 'a changed file is invalidated')
  t.notOk(plans[0].inodes.includes('/keep.txt'), 'an untouched file is not')
    t.equal(gens.liveInodes(ws), countInodes(ws), 'the inode count follows')

  // undoable: the checkpoint before it restores everything
  await gens.restore(ws, r.saved!, noInvalidate)
  t.same(manifest(ws), beforeAll, 'restoring the saved checkpoint undoes the selective restore')
  // and it survives a reopen
  await gens.restore(ws, r.result!, noInvalidate)
  t.equal(read(ws, '/notes.md'), 'notes v1')
  await close()
  const s = await open(root, lowerDir)
  t.equal(read(s.ws, '/src/lib/x.js'), 'x v1', 'the result checkpoint reloads from the store')
  await s.close()
})

t.test('a file renamed away since is restored beside it with its own inode; hard links outside keep theirs', async t => {
  const { root, lowerDir } = tempRoot(t, 'rewindfs-sel-')
  const { ws, gens, close } = await open(root, lowerDir)
  write(ws, '/a', 'a v1')
  write(ws, '/h', 'shared')
  ws.mkdir('/d', 0o755, me)
  ws.link('/h', '/d/h2')
  const c1 = await gens.mark(ws, {})
  ws.rename('/a', '/b')
  write(ws, '/b', 'b v2')
  write(ws, '/d/h2', 'SHARED')
  await gens.mark(ws, {})
  await gens.restorePaths(ws, c1.id, [{ path: 'a' }, { path: 'd' }], noInvalidate)
  t.equal(read(ws, '/a'), 'a v1', 'the old name holds the old bytes')
  t.equal(read(ws, '/b'), 'b v2', 'the renamed file keeps its bytes')
  t.not(ws.resolve('/a'), ws.resolve('/b'), 'two inodes')
  t.equal(read(ws, '/d/h2'), 'shared', 'the hard link inside the subtree is back')
  t.equal(read(ws, '/h'), 'SHARED', 'its name outside was not asked for and keeps the new bytes')
  t.not(ws.resolve('/h'), ws.resolve('/d/h2'))
  t.equal(ws.get(ws.resolve('/h'))!.links.length, 1, 'each has one name now')
  t.equal(ws.get(ws.resolve('/d/h2'))!.links.length, 1)
  // it can be written as a checkpoint and read back
  const c3 = await gens.mark(ws, {})
  await gens.restore(ws, c1.id, noInvalidate)
  await gens.restore(ws, c3.id, noInvalidate)
  t.equal(read(ws, '/a'), 'a v1')
  t.equal(read(ws, '/d/h2'), 'shared')
  await close()
})

t.test('bad input is refused and nothing changes', async t => {
  const { root, lowerDir } = tempRoot(t, 'rewindfs-sel-')
  const { ws, gens, close } = await open(root, lowerDir)
  ws.mkdir('/d', 0o755, me)
  write(ws, '/d/f', 'v1')
  const c1 = await gens.mark(ws, {})
  ws.unlink('/d/f')
  ws.rmdir('/d')
  await gens.mark(ws, {})
  await t.rejects(gens.restorePaths(ws, 99, [{ path: 'd' }], noInvalidate), { code: 'E_UNKNOWN_CHECKPOINT' })
  await t.rejects(gens.restorePaths(ws, c1.id, [{ path: '' }], noInvalidate), { code: 'E_BAD_REQUEST', message: /root/ })
  await t.rejects(gens.restorePaths(ws, c1.id, [], noInvalidate), { code: 'E_BAD_REQUEST' })
  const n = gens.checkpoints.size
  await t.rejects(gens.restorePaths(ws, c1.id, [{ path: 'd/f' }], noInvalidate), { code: 'E_NOT_FOUND', message: /restore \/d/ }, 'a missing parent says what to restore instead')
  t.equal(gens.checkpoints.size, n, 'no checkpoint was made')
  t.throws(() => ws.resolve('/d'), { errno: 2 } as any)
  const r = await gens.restorePaths(ws, c1.id, [{ path: 'd' }], noInvalidate)
  t.equal(read(ws, '/d/f'), 'v1', 'restoring the parent works')
  t.equal(r.changed, 2)
  const again = await gens.restorePaths(ws, c1.id, [{ path: 'd' }], noInvalidate)
  t.equal(again.result, null, 'restoring what is already there makes no checkpoint')
  t.equal(again.changed, 0)
  await close()
})

t.test('a file in a directory never listed at the checkpoint (still in the lower layer then) is restored from it', async t => {
  const { root, lowerDir } = tempRoot(t, 'rewindfs-sel-')
  fs.mkdirSync(path.join(lowerDir, 'big'))
  fs.writeFileSync(path.join(lowerDir, 'big/x.txt'), 'lower x\n')
  fs.writeFileSync(path.join(lowerDir, 'big/y.txt'), 'lower y\n')
  const { ws, gens, close } = await open(root, lowerDir)
  const c1 = await gens.mark(ws, {}) // big/ not listed yet: its entries are in the lower layer only
  write(ws, '/big/x.txt', 'changed x\n')
  write(ws, '/big/y.txt', 'changed y\n')
  await gens.mark(ws, {})
  const r = await gens.restorePaths(ws, c1.id, [{ path: 'big/x.txt' }], noInvalidate)
  t.same(r.changes, [{ path: '/big/x.txt', change: 'modified' }])
  t.equal(read(ws, '/big/x.txt'), 'lower x\n', 'the lower bytes are back')
  t.equal(read(ws, '/big/y.txt'), 'changed y\n', 'its sibling is left')
  const c3 = await gens.mark(ws, {})
  await gens.restore(ws, c1.id, noInvalidate)
  await gens.restore(ws, c3.id, noInvalidate)
  t.equal(read(ws, '/big/x.txt'), 'lower x\n', 'and it is checkpointed')
  await close()
})

function countInodes (ws: Workspace): number {
  let n = 1
  const walk = (dir: string): void => {
    for (const name of ws.readdir(dir).names) {
      if (name === '.' || name === '..') continue
      const q = dir === '/' ? `/${name}` : `${dir}/${name}`
      n++
      if (isDir(ws.get(ws.resolve(q))!)) walk(q)
    }
  }
  walk('/')
  return n
}

t.test('one name of a hard link of the directory restored alone: two files after, also on disk after write-back', async t => {
  const { root, lowerDir } = tempRoot(t, 'rewindfs-sel-')
  fs.writeFileSync(path.join(lowerDir, 'a'), 'orig\n')
  fs.linkSync(path.join(lowerDir, 'a'), path.join(lowerDir, 'b'))
  const { ws, gens, db, blocks, close } = await open(root, lowerDir)
  const c1 = await gens.mark(ws, {})
  write(ws, '/a', 'broken\n') // through one name: both names show it
  t.equal(read(ws, '/b'), 'broken\n')
  await gens.mark(ws, {})
  await gens.restorePaths(ws, c1.id, [{ path: 'a' }], noInvalidate)
  t.equal(read(ws, '/a'), 'orig\n', 'the restored name has the checkpoint\'s bytes')
  t.equal(read(ws, '/b'), 'broken\n', 'the other name keeps the live bytes')
  t.equal(ws.getattr('/a').nlink, 1, 'the restored name is a file of its own')
  t.equal(ws.getattr('/b').nlink, 1, 'and so is the other')
  t.not(ws.getattr('/a').ino, ws.getattr('/b').ino)
  await gens.mark(ws, {})
  const dirFd = fs.openSync(lowerDir, fs.constants.O_RDONLY | fs.constants.O_DIRECTORY)
  let r
  try { r = await writeBack({ ws, gens, db, blocks, dir: lowerDir, dirFd, log: () => {} }) } finally { fs.closeSync(dirFd) }
  t.same(r.errors, [])
  t.equal(fs.readFileSync(path.join(lowerDir, 'a'), 'utf8'), 'orig\n', 'on disk: the restored bytes')
  t.equal(fs.readFileSync(path.join(lowerDir, 'b'), 'utf8'), 'broken\n', 'on disk: the other name\'s bytes')
  t.equal(fs.statSync(path.join(lowerDir, 'a')).nlink, 1, 'on disk: the link is broken, as in the workspace')
  await close()
})
