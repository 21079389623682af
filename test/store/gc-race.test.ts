/**
 * Garbage collection against writers, without FUSE and deterministic: the
 * content of a removed checkpoint is written again (a dedup hit on a block
 * gc is about to delete)
 *  - while gc marks (after its snapshot), then checkpointed, so the record
 *    that holds the block is in a table gc never walks (the block store's
 *    tracking of taken blocks protects it), and
 *  - before gc starts, unsaved, then checkpointed while gc marks (gc made
 *    the live state durable first, so it walks that table).
 * Either way the block must survive gc, a restart, and verify.
 */
import t from 'tap'
import crypto from 'node:crypto'
import { tempRoot, open, write, read } from '../helpers/workspace.js'
import { collectGarbage } from '../../fs/maint/gc.js'
import { verifyStore } from '../../fs/maint/verify.js'

const noInvalidate = async (): Promise<void> => {}
const BLOCK = 64 * 1024

for (const when of ['during the mark', 'before gc, checkpointed during the mark'] as const) {
  t.test(`a removed checkpoint's content written again ${when} survives`, async tt => {
    const { root, lowerDir } = tempRoot(tt, 'rewindfs-test-gcrace-')
    const content = crypto.randomBytes(3 * BLOCK).toString('base64').slice(0, 3 * BLOCK) // whole blocks, text for read()
    let s = await open(root, lowerDir)
    const c0 = await s.gens.mark(s.ws, { label: 'empty' })
    write(s.ws, '/x', content)
    const c1 = await s.gens.mark(s.ws, { label: 'x, on a branch that will be abandoned' })
    await s.gens.restore(s.ws, c0.id, noInvalidate)
    if (when !== 'during the mark') write(s.ws, '/y', content) // unsaved: in the live generation's dirty records
    const report = await collectGarbage({
      db: s.db,
      blocks: s.blocks,
      gens: s.gens,
      ws: s.ws,
      storeDir: s.store,
      beforeMark: async () => {
        // a dedup hit on blocks gc has not decided on yet
        if (when === 'during the mark') write(s.ws, '/y', content)
        // checkpointed: the record holding them is now in a table gc does not walk
        await s.gens.mark(s.ws, { label: 'y checkpointed while gc marks' })
      }
    }, { keepLast: 0, abandonedAfterMs: 0 })
    tt.same(report.checkpoints.removed, [c1.id], `checkpoint ${c1.id} is removed`)
    tt.equal(read(s.ws, '/y'), content, 'y reads back after gc')
    const c2 = await s.gens.mark(s.ws, { label: 'after gc' })
    await s.close()
    const v = await verifyStore(s.store)
    tt.same(v.problems, [], 'verify is clean: no record names a deleted block')
    s = await open(root, lowerDir)
    tt.teardown(() => s.close())
    tt.equal(s.gens.state.head, c2.id)
    tt.equal(read(s.ws, '/y'), content, 'y reads back after a restart')
  })
}

t.test('a gc that fails while deleting block records leaves memory and the index in agreement; the next gc finishes the job', async tt => {
  const { root, lowerDir } = tempRoot(tt, 'rewindfs-test-gcfail-')
  const s = await open(root, lowerDir)
  const c0 = await s.gens.mark(s.ws, { label: 'empty' })
  write(s.ws, '/big', crypto.randomBytes(40 * BLOCK).toString('base64').slice(0, 40 * BLOCK))
  const c1 = await s.gens.mark(s.ws, { label: 'abandoned' })
  await s.gens.restore(s.ws, c0.id, noInvalidate)
  write(s.ws, '/small', 'kept')
  await s.gens.mark(s.ws, { label: 'kept' })
  // the store fails the batch that deletes block records (as a full disk does)
  const db = s.db as unknown as { writeOps: (ops: Array<{ type: string, key: string }>, sync: boolean) => Promise<void> }
  const real = db.writeOps.bind(s.db)
  db.writeOps = async (ops, sync) => {
    if (ops.some(o => o.type === 'del' && o.key.startsWith('!block!'))) throw Object.assign(new Error('no space left (simulated)'), { code: 'E_NO_SPACE' })
    return await real(ops, sync)
  }
  const failed = await collectGarbage({ db: s.db, blocks: s.blocks, gens: s.gens, ws: s.ws, storeDir: s.store }, { keepLast: 0, abandonedAfterMs: 0 }).then(() => null, (e: Error & { code?: string }) => e)
  tt.equal(failed?.code, 'E_NO_SPACE', 'the failure keeps its code')
  tt.match(failed?.message, new RegExp(`gc removed checkpoint #${c1.id} and then stopped: .*run rewindfs gc again`), 'and says what was done and what to do')
  db.writeOps = real
  const again = await collectGarbage({ db: s.db, blocks: s.blocks, gens: s.gens, ws: s.ws, storeDir: s.store }, { keepLast: 0, abandonedAfterMs: 0 })
  tt.ok(again.blocks.removed >= 40, `the next gc removes the blocks (${again.blocks.removed})`)
  tt.ok(again.packs.compacted + again.packs.deleted > 0, 'and compacts')
  await s.close()
  const v = await verifyStore(s.store)
  tt.same(v.problems, [], 'verify is clean: no index record points into a deleted pack')
})
