/**
 * Write-back without FUSE (issue 9): the final state of a live workspace
 * written into its directory (fs/writeback.ts) matches what the workspace
 * showed, path by path (bytes, modes, symlinks, hard links, empty
 * directories, sparse files, removed paths), and the directory is untouched
 * when the unmount discards. (diff without FUSE: test/diff/diff-unit.test.ts.)
 */
import t from 'tap'
import fs from 'node:fs'
import path from 'node:path'
import { tempRoot, open, write, me } from '../helpers/workspace.js'
import { writeBack } from '../../fs/writeback.js'
import { manifestOf as fullManifest } from '../helpers/fuzz.js'

/** The directory's manifest without atimes (taking a manifest reads every file, which itself moves atimes under relatime). */
const manifestOf = (dir: string): unknown => [...fullManifest(dir)].map(([p, e]) => [p, { ...e, st: { ...e.st, atime: undefined } }])

/** A directory with a bit of everything, as a user's project would be before the mount. */
function seed (dir: string): void {
  fs.mkdirSync(path.join(dir, 'src'))
  fs.writeFileSync(path.join(dir, 'src/keep.txt'), 'kept as it is\n')
  fs.writeFileSync(path.join(dir, 'src/edit.txt'), 'before\n')
  fs.writeFileSync(path.join(dir, 'gone.txt'), 'removed in the session\n')
  fs.mkdirSync(path.join(dir, 'old-empty'))
  fs.symlinkSync('src/keep.txt', path.join(dir, 'ln'))
}

/** A seeded directory, its manifest before the mount, and a workspace over it. */
async function seeded (t: Parameters<typeof tempRoot>[0]): Promise<{ lowerDir: string, before: unknown } & Awaited<ReturnType<typeof open>>> {
  const { root, lowerDir } = tempRoot(t, 'rewindfs-wbu-')
  seed(lowerDir)
  const before = manifestOf(lowerDir)
  return { lowerDir, before, ...await open(root, lowerDir) }
}

/** Runs write-back of the workspace into its directory (apply false: a discarding unmount). */
async function writeBackInto (o: Awaited<ReturnType<typeof seeded>>, apply = true): ReturnType<typeof writeBack> {
  const dirFd = fs.openSync(o.lowerDir, fs.constants.O_RDONLY | fs.constants.O_DIRECTORY)
  try { return await writeBack({ ws: o.ws, gens: o.gens, db: o.db, blocks: o.blocks, dir: o.lowerDir, dirFd, log: () => {}, apply }) } finally { fs.closeSync(dirFd) }
}

t.test('write-back makes the directory what the workspace showed', async t => {
  const o = await seeded(t)
  const { lowerDir, before, ws, gens, close } = o
  write(ws, '/src/edit.txt', 'after, and longer\n')
  ws.unlink('/gone.txt')
  ws.rmdir('/old-empty')
  ws.mkdir('/new-empty', 0o700, me)
  write(ws, '/script.sh', '#!/bin/sh\necho hi\n')
  ws.chmod('/script.sh', 0o755)
  ws.link('/script.sh', '/src/script-link.sh')
  ws.unlink('/ln')
  ws.symlink('/absolute/target', '/ln', me)
  write(ws, '/sparse.bin', 'tail', 3 * 1024 * 1024)
  ws.utimens('/src/keep.txt', 1_500_000_000_000_000_000n, 1_500_000_000_000_000_000n)
  await gens.mark(ws, { label: 'final' })
  t.same(manifestOf(lowerDir), before, 'nothing reached the directory before write-back')

  const r = await writeBackInto(o)
  t.same(r.errors, [], 'no errors')
  t.ok(r.written > 0 && r.removed >= 2, `paths written (${r.written}) and removed (${r.removed})`)

  const p = (rel: string): string => path.join(lowerDir, rel)
  t.equal(fs.readFileSync(p('src/edit.txt'), 'utf8'), 'after, and longer\n')
  t.notOk(fs.existsSync(p('gone.txt')), 'a removed file is removed')
  t.notOk(fs.existsSync(p('old-empty')), 'a removed empty directory is removed')
  t.ok(fs.statSync(p('new-empty')).isDirectory(), 'a new empty directory exists')
  t.equal(fs.statSync(p('new-empty')).mode & 0o7777, 0o700)
  t.equal(fs.statSync(p('script.sh')).mode & 0o7777, 0o755, 'mode bits')
  t.equal(fs.statSync(p('script.sh')).ino, fs.statSync(p('src/script-link.sh')).ino, 'a hard link stays one inode')
  t.equal(fs.readlinkSync(p('ln')), '/absolute/target', 'the symlink\'s new target')
  const sp = fs.statSync(p('sparse.bin'))
  t.equal(sp.size, 3 * 1024 * 1024 + 4)
  t.ok(sp.blocks * 512 < 1024 * 1024, `the hole stays a hole (${sp.blocks * 512} bytes allocated)`)
  t.equal(fs.statSync(p('src/keep.txt'), { bigint: true }).mtimeNs, 1_500_000_000_000_000_000n, 'times to the nanosecond')
  t.equal(fs.readFileSync(p('src/keep.txt'), 'utf8'), 'kept as it is\n')
  await close()
})

t.test('a discarding unmount (apply: false) changes nothing in the directory', async t => {
  const o = await seeded(t)
  const { lowerDir, before, ws, gens, close } = o
  write(ws, '/src/edit.txt', 'discarded\n')
  ws.unlink('/gone.txt')
  await gens.mark(ws, {})
  const r = await writeBackInto(o, false)
  t.same(r.errors, [])
  t.equal(r.written, 0, 'nothing written')
  t.same(manifestOf(lowerDir), before, 'the directory is as it was')
  await close()
})
