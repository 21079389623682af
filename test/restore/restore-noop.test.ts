/**
 * A full restore of the head checkpoint with nothing unsaved and no external
 * effect begun since has nothing to do (daemon/service.ts): nothing changes,
 * no branch starts, no checkpoint is made, the reply names the current
 * branch. With unsaved changes, or with an effect begun since the head, it is
 * a restore as any other (a new branch; the effect is listed as abandoned).
 * FUSE-free: the daemon's Service over a Workspace and a real store
 * (test/helpers/workspace.ts).
 */
import t from 'tap'
import fs from 'node:fs'
import path from 'node:path'
import { tempRoot, open, write, read } from '../helpers/workspace.js'
import { Service } from '../../daemon/service.js'
import { Ledger } from '../../effects/ledger.js'
import { createLedgerSync } from '../../store/effect-chain.js'

t.test('a restore of the head with nothing unsaved is a no-op', async t => {
  const { root, lowerDir } = tempRoot(t, 'rewindfs-restore-noop-')
  fs.writeFileSync(path.join(lowerDir, 'a'), 'a\n')
  const { ws, gens, close, store } = await open(root, lowerDir)
  createLedgerSync(store, { format: 3 })
  const ledger = await Ledger.open(store, { actor: () => ({ checkpoint: gens.state.head, generation: gens.state.generation, branch: gens.state.branch }) })
  const svc = new Service({
    workspace: ws, generations: gens, workspacePath: lowerDir, storePath: store, protocol: 1, ledger,
    invalidate: async () => {},
    exportTo: async () => ({ files: 0, bytes: 0 }),
    unmount: async () => {},
    gc: async () => { throw new Error('no gc in this test') }
  })
  const c1 = await svc.mark({ label: 'one' })
  const branch = gens.state.branch
  const count = gens.checkpoints.size
  const r = await svc.restore({ id: c1.id })
  t.equal(r.branch, branch, 'the reply names the current branch')
  t.equal(gens.state.branch, branch, 'no branch starts')
  t.equal(gens.state.head, c1.id, 'the head stays')
  t.equal(gens.checkpoints.size, count, 'no checkpoint is made')
  t.same([r.changed, r.saved, r.savedAll, r.changes], [0, null, [], []], 'nothing changed, nothing saved')
  t.equal(r.recovery?.effects, 'none', 'no effect abandoned')
  t.equal(read(ws, '/a'), 'a\n')

  write(ws, '/a', 'changed\n')
  const r2 = await svc.restore({ id: c1.id })
  t.not(r2.branch, branch, 'with unsaved changes it starts a branch')
  t.not(r2.saved, null, 'and keeps them as a checkpoint')
  t.equal(read(ws, '/a'), 'a\n', 'the file is back')

  const b2 = gens.state.branch
  await ledger.register({ tool: 'ticket', class: 'compensable' })
  const e = await ledger.begin({ tool: 'ticket', target: 'http://tracker.invalid/tickets', request: { method: 'POST', body: { n: 1 } } })
  const r3 = await svc.restore({ id: c1.id })
  t.not(r3.branch, b2, 'nothing unsaved but an effect begun since the head: a restore as any other')
  t.same(r3.recovery?.abandoned.map(x => x.occurrence), [e.occurrence], 'which lists the effect as abandoned')
  await ledger.close()
  await close()
})
