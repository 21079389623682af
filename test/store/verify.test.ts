/**
 * `rewindfs verify` on a store built through a real mount: clean after
 * ordinary use (files, a multi-block file, a hard link, contexts, a restore,
 * a write-back that freezes lower paths), refused while the daemon runs, and
 * then two corruptions it must report: a flipped byte in a pack (the block,
 * exit status 1 through the CLI) and a node record deleted from LevelDB (the
 * missing record, by checkpoint).
 */
import t from 'tap'
import fs from 'node:fs'
import path from 'node:path'
import { mountWorkspace } from '../helpers/mount.js'
import { verifyStore } from '../../fs/maint/verify.js'
import { StoreDb } from '../../store/db.js'
import type { BlockRecord } from '../../store/blocks.js'
import type { CheckpointRecord } from '../../fs/history/generations.js'
import { packFileName, PACKS_DIR, PACK_HEADER_SIZE, RECORD_HEADER_SIZE } from '../../store/pack.js'
import { flipByte } from '../helpers/damage.js'

/** Offset of the bytes of a pack's first block record. */
const FIRST = PACK_HEADER_SIZE + RECORD_HEADER_SIZE

function populate (dir: string): void {
  fs.mkdirSync(path.join(dir, 'src'))
  fs.writeFileSync(path.join(dir, 'src/orig.txt'), 'original content\n')
  fs.writeFileSync(path.join(dir, 'keep.txt'), 'kept\n')
}

/** Every [ino, recordId] of a checkpoint's table, read from the persisted nodes. */
async function recordIds (db: StoreDb, root: number): Promise<Array<[number, number]>> {
  const out: Array<[number, number]> = []
  const walk = async (id: number, level: number, prefix: number): Promise<void> => {
    const n = await db.get<{ l: number, k: [number, number][] }>('node', id)
    for (const [s, cid] of n!.k) {
      const p = ((prefix << 8) | s) >>> 0
      if (level < 3) await walk(cid, level + 1, p)
      else out.push([p, cid])
    }
  }
  await walk(root, 0, 0)
  return out
}

t.test('verify: clean store, refused while mounted, then a flipped pack byte and a deleted record', async t => {
  const m = await mountWorkspace(t, populate)
  const big = Buffer.alloc(3 * 65536 + 1000)
  for (let i = 0; i < big.length; i++) big[i] = (i * 7 + (i >> 16)) & 255
  fs.writeFileSync(path.join(m.dir, 'big.bin'), big)
  fs.writeFileSync(path.join(m.dir, 'small.txt'), 'small file\n')
  fs.linkSync(path.join(m.dir, 'small.txt'), path.join(m.dir, 'hard.txt'))
  fs.mkdirSync(path.join(m.dir, 'dir/sub'), { recursive: true })
  fs.writeFileSync(path.join(m.dir, 'dir/sub/deep.txt'), 'deep\n')
  const c1 = await m.client.mark({ label: 'one', context: { messages: ['hello'] } })
  fs.appendFileSync(path.join(m.dir, 'src/orig.txt'), 'changed in the mount\n')
  fs.rmSync(path.join(m.dir, 'dir/sub/deep.txt'))
  const c2 = await m.client.mark({ label: 'two', context: { messages: ['hello', 'again'] } })
  fs.writeFileSync(path.join(m.dir, 'after.txt'), 'after two\n')
  await m.client.restore({ id: c1.id })
  fs.writeFileSync(path.join(m.dir, 'branch.txt'), 'on the new branch\n')
  await m.client.mark({ label: 'three' })

  const running = await m.cli(['verify'])
  t.equal(running.code, 1, 'refused while the daemon runs')
  t.match(running.stderr, /the daemon for this workspace is running \(pid \d+\) and holds the store/)
  t.match(running.stderr, /rewindfs unmount/)
  await t.rejects(verifyStore(m.store), { code: 'E_LOCKED', message: /held by a running daemon/ }, 'verifyStore refuses a store the daemon holds')

  await m.unmount(false)
  t.equal(fs.readFileSync(path.join(m.dir, 'src/orig.txt'), 'utf8'), 'original content\n', 'write-back happened (restored to #1)')

  const clean = await verifyStore(m.store)
  t.same(clean.problems, [], 'no problems')
  t.equal(clean.ok, true)
  t.ok(clean.counts.checkpoints >= 4, `checkpoints counted (${clean.counts.checkpoints})`)
  t.ok(clean.counts.tables >= clean.counts.checkpoints, `every checkpoint's table walked (${clean.counts.tables})`)
  t.ok(clean.counts.records >= 8, `records counted (${clean.counts.records})`)
  t.ok(clean.counts.blocks >= 5, `blocks counted (${clean.counts.blocks})`)
  t.ok(clean.counts.bytes >= big.length, `bytes counted (${clean.counts.bytes})`)
  t.ok(clean.counts.frozen >= 1, `frozen lower paths counted (${clean.counts.frozen})`)

  const ok = await m.cli(['verify'])
  t.equal(ok.code, 0, 'CLI exits 0 when clean')
  t.match(ok.stdout, /^clean: \d+ checkpoints/m)
  const okJson = await m.cli(['verify', '--json'])
  t.equal(okJson.code, 0)
  t.equal(JSON.parse(okJson.stdout).ok, true, '--json prints the report')

  // corruption 1: flip one byte of the first block record's bytes in a pack
  const db0 = await StoreDb.open(m.store)
  let victim: { id: number, rec: BlockRecord } | undefined
  for await (const e of db0.iterate<BlockRecord>('block')) {
    if (e.value.offset === FIRST) { victim = { id: parseInt(e.key, 16), rec: e.value }; break }
  }
  await db0.close()
  t.ok(victim, 'found the first block of a pack')
  const packFile = path.join(m.store, PACKS_DIR, packFileName(victim!.rec.pack))
  flipByte(packFile, FIRST + Math.floor(victim!.rec.length / 2))

  const flipped = await m.cli(['verify'])
  t.equal(flipped.code, 1, 'CLI exits 1 on a corrupt block')
  t.match(flipped.stdout, new RegExp(`E_BLOCK_HASH: block ${victim!.id} \\(pack ${victim!.rec.pack}, offset ${FIRST}`), 'names the block and where it is')
  t.match(flipped.stdout, /used by checkpoint \d+ \//, 'says which file uses it')
  t.match(flipped.stdout, /^1 problem: /m, 'counts one problem')

  // corruption 2: delete the record of small.txt (and hard.txt) at checkpoint c2
  const db = await StoreDb.open(m.store)
  const cp = await db.get<CheckpointRecord>('checkpoint', c2.id)
  let target: [number, number] | undefined
  for (const [ino, id] of await recordIds(db, cp!.root)) {
    const r = await db.get<{ links: [number, string][] }>('node', id)
    if (r!.links.some(l => l[1] === 'small.txt')) target = [ino, id]
  }
  t.ok(target, 'found the record of small.txt at checkpoint two')
  await db.batch().del('node', target![1]).write({ sync: true })
  await db.close()

  const broken = await verifyStore(m.store)
  t.equal(broken.ok, false)
  const missing = broken.problems.filter(p => p.code === 'E_MISSING_RECORD')
  t.ok(missing.some(p => p.checkpoint === c2.id && p.ino === target![0]), 'reports the missing record at checkpoint two')
  const msg = missing.find(p => p.checkpoint === c2.id)!.message
  t.match(msg, new RegExp(`checkpoint ${c2.id}: inode record ${target![1]} \\(ino ${target![0]}, /(hard|small)\\.txt`), 'names the checkpoint, record, ino and paths')
  t.ok(broken.problems.some(p => p.code === 'E_BLOCK_HASH'), 'the flipped block is still reported')
  const cli = await m.cli(['verify', '--json'])
  t.equal(cli.code, 1)
  t.ok(JSON.parse(cli.stdout).problems.length >= 2, '--json lists the problems')
})
