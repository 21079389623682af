/**
 * diff without FUSE (issue 9): diff (fs/history/diff.ts) between two
 * checkpoints of a live workspace over a real store and directory
 * (test/helpers/workspace.ts) names exactly the paths whose content,
 * attributes or type changed; a checkpoint against itself and the live
 * workspace right after a checkpoint show nothing.
 */
import t from 'tap'
import fs from 'node:fs'
import path from 'node:path'
import { tempRoot, open, write } from '../helpers/workspace.js'

const byPath = (d: Array<{ change: string, path: string }>): string[] => d.map(e => `${e.change} ${e.path}`).sort()

/** A directory with a bit of everything, as a user's project would be before the mount. */
function seed (dir: string): void {
  fs.mkdirSync(path.join(dir, 'src'))
  fs.writeFileSync(path.join(dir, 'src/keep.txt'), 'kept as it is\n')
  fs.writeFileSync(path.join(dir, 'src/edit.txt'), 'before\n')
  fs.writeFileSync(path.join(dir, 'gone.txt'), 'removed in the session\n')
  fs.mkdirSync(path.join(dir, 'old-empty'))
  fs.symlinkSync('src/keep.txt', path.join(dir, 'ln'))
}

t.test('diff between checkpoints: A, D, M for bytes, m for attributes only, T for type', async t => {
  const { root, lowerDir } = tempRoot(t, 'rewindfs-wbu-')
  seed(lowerDir)
  const { ws, gens, close } = await open(root, lowerDir)
  ws.readdir('/') // list the root, as any tool would
  ws.readdir('/src')
  const c1 = await gens.mark(ws, {})
  write(ws, '/src/edit.txt', 'other!\n') // same size, other bytes
  ws.chmod('/src/keep.txt', 0o600)
  ws.unlink('/gone.txt')
  write(ws, '/added.txt', 'new')
  ws.rmdir('/old-empty')
  write(ws, '/old-empty', 'now a file')
  const c2 = await gens.mark(ws, {})
  const d = await gens.diff(ws, c1.id, c2.id)
  const lines = byPath(d).filter(l => !l.endsWith(' /') && !l.endsWith(' /src'))
  t.same(lines, ['A /added.txt', 'D /gone.txt', 'M /src/edit.txt', 'T /old-empty', 'm /src/keep.txt'].sort().map(l => l
    .replace(/^A /, 'added ').replace(/^D /, 'deleted ').replace(/^M /, 'modified ').replace(/^m /, 'meta ').replace(/^T /, 'type ')).sort())
  t.same(await gens.diff(ws, c2.id, c2.id), [], 'a checkpoint against itself: nothing')
  t.same(byPath(await gens.diff(ws, c2.id)).filter(l => !l.endsWith(' /')), [], 'the live workspace right after a checkpoint: nothing')
  await close()
})
