/**
 * Undo of one segment and per-path history (issue 16), without FUSE:
 * undo reverts only the segment's paths when no later change touched them,
 * and applies nothing when one did (conflicts listed); the dry run changes
 * nothing. History follows a path across modifications, attribute
 * changes, renames (deleted here, added there, the rename named), deletes,
 * recreation, branches (lineage vs all) and a reopen of the store; for a
 * directory it reports changes below it.
 */
import t from 'tap'
import { tempRoot, open, write, read, me } from '../helpers/workspace.js'

const noInvalidate = async (): Promise<void> => {}

t.test('undo reverts one segment; a later change of the same path is a conflict and nothing is applied', async t => {
  const { root, lowerDir } = tempRoot(t, 'rewindfs-undo-')
  const { ws, gens, close } = await open(root, lowerDir)
  write(ws, '/a.txt', 'a1')
  write(ws, '/b.txt', 'b1')
  ws.mkdir('/src', 0o755, me)
  write(ws, '/src/keep.js', 'keep')
  const c1 = await gens.mark(ws, { label: 'base' })
  // the bad step: edits a, deletes b, adds src/bad.js
  write(ws, '/a.txt', 'a2 broken')
  ws.unlink('/b.txt')
  write(ws, '/src/bad.js', 'bad')
  const c2 = await gens.mark(ws, { label: 'bad step' })
  // a later, good step elsewhere
  write(ws, '/c.txt', 'c good')
  write(ws, '/src/keep.js', 'keep v2')
  const c3 = await gens.mark(ws, { label: 'good step' })

  const dry = await gens.undo(ws, c2.id, noInvalidate, true)
  t.equal(dry.from, c1.id)
  t.same(dry.conflicts, [])
  t.same(dry.segment.map(e => `${e.change} ${e.path}`), ['meta /', 'modified /a.txt', 'deleted /b.txt', 'meta /src', 'added /src/bad.js'])
  t.same(dry.skipped, ['/'], 'the root directory\'s attributes, changed again later, are left as they are')
  t.equal(dry.applied, false, 'a dry run applies nothing')
  t.same(dry.restore!.changes!.map(e => `${e.change} ${e.path}`), ['modified /a.txt', 'added /b.txt', 'meta /src', 'deleted /src/bad.js'], 'it lists what the undo would change')
  t.equal(read(ws, '/a.txt'), 'a2 broken', 'nothing changed')
  t.equal(gens.state.head, c3.id)

  const u = await gens.undo(ws, c2.id, noInvalidate, false)
  t.equal(u.applied, true)
  t.equal(read(ws, '/a.txt'), 'a1', 'the edit is reverted')
  t.equal(read(ws, '/b.txt'), 'b1', 'the deleted file is back')
  t.throws(() => ws.resolve('/src/bad.js'), { errno: 2 } as any, 'the added file is gone')
  t.equal(read(ws, '/c.txt'), 'c good', 'the later step is kept')
  t.equal(read(ws, '/src/keep.js'), 'keep v2', 'a later change in the same directory is kept')
  t.equal(gens.checkpoint(u.restore!.result!).label, `undo ${c2.id}`)
  t.equal(gens.checkpoint(u.restore!.result!).parent, c3.id, 'the undo continues the branch')

  // conflicts: a later step rewrote a path the undone step changed
  write(ws, '/x.txt', 'x1')
  const d1 = await gens.mark(ws, {})
  write(ws, '/x.txt', 'x2')
  write(ws, '/y.txt', 'y')
  const d2 = await gens.mark(ws, {})
  write(ws, '/x.txt', 'x3')
  const d3 = await gens.mark(ws, {})
  const n = gens.checkpoints.size
  const bad = await gens.undo(ws, d2.id, noInvalidate, false)
  t.equal(bad.applied, false, 'nothing applied')
  t.same(bad.conflicts.map(c => [c.path, c.by]), [['/x.txt', d3.id]], 'the conflict names the path and the later checkpoint')
  t.equal(read(ws, '/y.txt'), 'y', 'not even the path without conflict is reverted')
  t.equal(read(ws, '/x.txt'), 'x3')
  t.equal(gens.checkpoints.size, n, 'no checkpoint made')
  // unsaved changes count as later changes too
  write(ws, '/y.txt', 'y unsaved')
  const bad2 = await gens.undo(ws, d2.id, noInvalidate, true)
  t.same(bad2.conflicts.map(c => [c.path, c.by]), [['/x.txt', d3.id], ['/y.txt', null]])
  t.equal(d1.id + 1, d2.id)
  await t.rejects(gens.undo(ws, 1, noInvalidate, false), { code: 'E_BAD_REQUEST', message: /first checkpoint/ })
  await close()
})

t.test('history of a path: modifications, attributes, rename, delete, recreation, branches, reopen', async t => {
  const { root, lowerDir } = tempRoot(t, 'rewindfs-hist-')
  let s = await open(root, lowerDir)
  ws(s).mkdir('/d', 0o755, me)
  write(s.ws, '/d/f', 'one')
  const c1 = await s.gens.mark(s.ws, { label: 'create', meta: { tools: ['write'] } })
  write(s.ws, '/d/f', 'two!!')
  const c2 = await s.gens.mark(s.ws, { label: 'edit' })
  await s.gens.mark(s.ws, { label: 'nothing' })
  s.ws.chmod('/d/f', 0o600)
  const c4 = await s.gens.mark(s.ws, { label: 'chmod' })
  s.ws.rename('/d/f', '/g')
  const c5 = await s.gens.mark(s.ws, { label: 'rename' })
  write(s.ws, '/d/f', 'new')
  const c6 = await s.gens.mark(s.ws, { label: 'recreate' })
  s.ws.unlink('/d/f')
  const c7 = await s.gens.mark(s.ws, { label: 'delete' })
  await s.close()
  s = await open(root, lowerDir)
  const h = await s.gens.history(s.ws, 'd/f')
  t.same(h.map(e => [e.checkpoint, e.change, e.size, e.sizeBefore]), [
    [c7.id, 'deleted', null, 3],
    [c6.id, 'added', 3, null],
    [c5.id, 'deleted', null, 5],
    [c4.id, 'meta', 5, 5],
    [c2.id, 'modified', 5, 3],
    [c1.id, 'added', 3, null]
  ], 'newest first, each change once, with sizes; a checkpoint that changed nothing is absent')
  t.equal(h[2].to, 'g', 'the rename is named at the old path')
  const g = await s.gens.history(s.ws, 'g')
  t.same(g.map(e => [e.checkpoint, e.change, e.from]), [[c5.id, 'added', 'd/f']], 'and at the new one')
  const dir = await s.gens.history(s.ws, 'd')
  t.same(dir.map(e => [e.checkpoint, e.change]), [[c7.id, 'modified'], [c6.id, 'modified'], [c5.id, 'modified'], [c4.id, 'modified'], [c2.id, 'modified'], [c1.id, 'added']], 'a directory lists the changes below it')
  t.equal(dir[1].below, 1)
  t.same(await s.gens.history(s.ws, 'nope'), [])
  t.equal((await s.gens.history(s.ws, 'd/f', { limit: 2 })).length, 2, 'limit')
  t.notOk('meta' in h[5], 'no segment metadata unless asked')
  const withMeta = await s.gens.history(s.ws, 'd/f', { meta: true })
  t.same(withMeta[5].meta, { tools: ['write'] }, 'the segment metadata when asked')
  t.equal(withMeta[4].meta, null)
  // a branch: restore c2, change f there; lineage vs all
  await s.gens.restore(s.ws, c2.id, noInvalidate)
  write(s.ws, '/d/f', 'branch')
  const b1 = await s.gens.mark(s.ws, { label: 'on a branch' })
  const lin = await s.gens.history(s.ws, 'd/f')
  t.same(lin.map(e => e.checkpoint), [b1.id, c2.id, c1.id], 'the current lineage only')
  t.equal(lin[0].parent, c2.id, 'the branch compares with the checkpoint it started from')
  const all = await s.gens.history(s.ws, 'd/f', { all: true })
  t.same(all.map(e => e.checkpoint), [b1.id, c7.id, c6.id, c5.id, c4.id, c2.id, c1.id], 'every branch with all')
  t.equal(all[0].branch, s.gens.state.branch)
  await s.close()
})

function ws (s: { ws: import('../../fs/workspace.js').Workspace }): import('../../fs/workspace.js').Workspace { return s.ws }
