/**
 * Generations without FUSE: a Workspace over a real store and lower
 * directory, driven through its POSIX calls. Checkpoint seals only what
 * changed, restore swaps exactly and starts a branch, unsaved work is kept
 * as a checkpoint, the cut is consistent, and checkpoints survive a reopen.
 */
import t from 'tap'
import fs from 'node:fs'
import path from 'node:path'
import { tempRoot, open, write, read, me } from '../helpers/workspace.js'

const noInvalidate = async (): Promise<void> => {}

t.test('checkpoint seals only what changed; restore swaps exactly and branches', async t => {
  const { root, lowerDir } = tempRoot(t, 'rewindfs-gen-')
  fs.mkdirSync(path.join(lowerDir, 'src'))
  fs.writeFileSync(path.join(lowerDir, 'src/a.txt'), 'lower a\n')
  const { ws, gens, close } = await open(root, lowerDir)
  const c1 = await gens.mark(ws, { label: 'one' })
  write(ws, '/src/a.txt', 'changed a\n')
  ws.mkdir('/empty', 0o755, me)
  write(ws, '/big.bin', Buffer.alloc(200000, 9))
  const c2 = await gens.mark(ws, { label: 'two' })
  t.equal(c2.dirtyBytes, 10 + 200000, 'dirtyBytes counts bytes written since the last checkpoint')
  t.equal(c2.parent, c1.id)
  const c3 = await gens.mark(ws, { label: 'three (nothing changed)' })
  t.equal(c3.dirtyBytes, 0)
  t.equal(c3.inodes, c2.inodes, 'an empty checkpoint keeps the inode count')
  t.equal(c3.parent, c2.id)

  ws.unlink('/big.bin')
  write(ws, '/unsaved.txt', 'unsaved')
  const r = await gens.restore(ws, c1.id, noInvalidate)
  t.equal(r.checkpoint, c1.id)
  t.not(r.branch, 'main', 'restore starts a new branch')
  t.equal(read(ws, '/src/a.txt'), 'lower a\n', 'content back')
  t.throws(() => ws.resolve('/empty'), { errno: 2 } as any, 'directory created later is gone')
  const log = [...gens.checkpoints.values()]
  const saved = log.find(c => c.label === `before restore to ${c1.id}`)
  t.ok(saved, 'unsaved work was kept as a checkpoint on the abandoned branch')
  await gens.restore(ws, saved!.id, noInvalidate)
  t.equal(read(ws, '/unsaved.txt'), 'unsaved', 'the abandoned branch restores')
  t.throws(() => ws.resolve('/big.bin'), { errno: 2 } as any)
  await gens.restore(ws, c2.id, noInvalidate)
  t.equal(read(ws, '/big.bin').length, 200000)
  t.equal(read(ws, '/src/a.txt'), 'changed a\n')
  await t.rejects(gens.restore(ws, 9999, noInvalidate), { code: 'E_UNKNOWN_CHECKPOINT' }, 'unknown checkpoint refused')
  t.equal(read(ws, '/src/a.txt'), 'changed a\n', 'and nothing changed')
  await close()
})

t.test('the cut is consistent: writes after the mark starts are not in it', async t => {
  const { root, lowerDir } = tempRoot(t, 'rewindfs-gen-')
  const { ws, gens, close } = await open(root, lowerDir)
  write(ws, '/f', 'before')
  const pending = gens.mark(ws, {})
  // the cut is taken when the mark runs (before it first waits); FUSE requests are
  // separate event-loop tasks, so one that completes after that is not in it
  await new Promise(resolve => setImmediate(resolve))
  write(ws, '/f', 'after!') // lands while the mark waits for its fsync
  const cp = await pending
  await gens.mark(ws, {})
  await gens.restore(ws, cp.id, noInvalidate)
  t.equal(read(ws, '/f'), 'before', 'the checkpoint holds the state at the moment of the mark')
  await close()
})

t.test('checkpoints survive closing and reopening the store', async t => {
  const { root, lowerDir } = tempRoot(t, 'rewindfs-gen-')
  let s = await open(root, lowerDir)
  write(s.ws, '/keep', 'v1')
  const c1 = await s.gens.mark(s.ws, { label: 'v1', context: { messages: ['hi'] } })
  write(s.ws, '/keep', 'v2')
  await s.gens.mark(s.ws, { label: 'v2' })
  await s.close()
  s = await open(root, lowerDir)
  t.equal(read(s.ws, '/keep'), 'v2', 'the head is loaded')
  await s.gens.restore(s.ws, c1.id, noInvalidate)
  t.equal(read(s.ws, '/keep'), 'v1', 'an older checkpoint restores from the store')
  t.same(await s.gens.context(c1.id), { messages: ['hi'] }, 'its context is stored with it')
  await s.close()
})

t.test('restore journal: a crash after the intent completes the restore at the next start; before it, nothing happened', async t => {
  for (const crash of ['after the intent', 'before the intent'] as const) {
    const { root, lowerDir } = tempRoot(t, 'rewindfs-gen-')
    let s = await open(root, lowerDir)
    write(s.ws, '/f', 'one')
    const c1 = await s.gens.mark(s.ws, { label: 'one' })
    write(s.ws, '/f', 'two')
    const c2 = await s.gens.mark(s.ws, { label: 'two' })
    // the "crash": from the chosen write on, nothing reaches the store
    const db = s.db as unknown as { writeOps: (...a: unknown[]) => Promise<void> }
    const real = db.writeOps.bind(s.db)
    let writes = 0
    db.writeOps = async (...a: unknown[]) => {
      writes++
      if (crash === 'before the intent' || writes > 1) throw new Error('the daemon died here')
      return await real(...a)
    }
    const r = await s.gens.restore(s.ws, c1.id, noInvalidate).then(() => 'resolved', (e: Error) => e.message)
    t.equal(r, crash === 'after the intent' ? 'resolved' : 'the daemon died here',
      crash === 'after the intent' ? 'the restore is acknowledged once its intent is durable' : 'a restore whose intent is not written fails')
    db.writeOps = real
    await s.close()
    s = await open(root, lowerDir)
    t.equal(s.gens.state.head, c2.id, `${crash}: the stored head is still checkpoint ${c2.id}`)
    const done = await s.gens.completeInterruptedRestore()
    await s.close()
    s = await open(root, lowerDir)
    if (crash === 'after the intent') {
      t.equal(done?.to, c1.id, 'the start finds the journaled restore and completes it')
      t.equal(s.gens.state.head, c1.id, `the head is checkpoint ${c1.id}`)
      t.equal(read(s.ws, '/f'), 'one', 'the workspace is the restored checkpoint')
      t.equal(s.gens.branches.get(s.gens.state.branch)?.base, c1.id, 'on a new branch from it')
    } else {
      t.equal(done, null, 'no journal: nothing to complete')
      t.equal(read(s.ws, '/f'), 'two', 'the workspace is as before the restore')
    }
    t.equal(await s.db.get('meta', 'restore'), undefined, 'the journal is empty')
    await s.close()
  }
})
