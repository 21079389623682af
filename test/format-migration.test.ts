/**
 * Store format 2 → 3 (issue 11, item 1: block lists with runs of holes).
 * test/fixtures/store-format2 was written by the code of 047e107
 * (test/fixtures/make-store-format2.sh): three checkpoints with a dense
 * file, a sparse one, a symlink, an empty directory, then an unmount that
 * wrote the final state back into its `ws/`. This version must open it,
 * mark it format 3, restore each checkpoint exactly (sha256 of every file,
 * computed from the fixture script's inputs), keep writing to it in the new
 * form, and verify clean.
 */
import t from 'tap'
import fs from 'node:fs'
import path from 'node:path'
import crypto from 'node:crypto'
import { spawnSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { tempRoot, CLI, forceUnmount } from './helpers/mount.js'
import { RewindClient } from '../client/client.js'
import { StoreDb, STORE_FORMAT } from '../store/db.js'
import { BlockList } from '../fs/blocklist.js'

const FIXTURE = fileURLToPath(new URL('../../test/fixtures/store-format2', import.meta.url))
const sha = (p: string): string => crypto.createHash('sha256').update(fs.readFileSync(p)).digest('hex')
const sparse = (): Buffer => { const b = Buffer.alloc(20 * 65536 + 7); b.write('start', 0); b.write('middle', 5 * 65536 + 10); return b }

t.test('BlockList: the persisted form round-trips and reads format 2', async t => {
  const dense = [5, 0, 0, 7, 0, 9]
  const l = BlockList.decode(dense)
  t.same([...l.entries()], [[0, 5], [3, 7], [5, 9]], 'a format-2 dense array decodes block by block')
  t.same(l.encode(), [5, -2, 7, 0, 9], 'and encodes with a run of holes')
  t.ok(BlockList.decode(l.encode()).equals(l), 'round trip')
  const far = BlockList.empty()
  far.set(2 ** 28 - 1, 3); far.set(0, 1); far.set(200, 2)
  t.same(far.encode(), [1, -199, 2, -(2 ** 28 - 202), 3], 'blocks far apart cost one entry each')
  t.equal(far.dataBlocks, 3)
  far.truncate(201)
  t.same([...far.entries()], [[0, 1], [200, 2]], 'truncate drops the blocks past the end')
  t.throws(() => BlockList.decode([1, 'x']), TypeError, 'a malformed list is refused')
  // random operations against a dense model
  let seed = 7
  const rnd = (n: number): number => { seed = (seed * 1103515245 + 12345) % 2147483648; return seed % n }
  const model: number[] = []
  const list = BlockList.empty()
  for (let i = 0; i < 3000; i++) {
    const op = rnd(10)
    if (op < 7) { const k = rnd(10) < 8 ? rnd(300) : rnd(5000); const id = rnd(4); while (model.length <= k) model.push(0); model[k] = id; list.set(k, id) } else { const c = rnd(400); model.length = Math.min(model.length, c); list.truncate(c) }
  }
  const want = model.map((id, k) => [k, id]).filter(e => e[1] !== 0)
  t.same([...list.entries()], want, 'the list equals a dense model after 3000 random sets and truncates')
  t.equal(list.dataBlocks, want.length, 'and counts its data blocks')
  t.ok(BlockList.decode(list.encode()).equals(list), 'and round-trips')
})

t.test('a format-2 store opens, migrates and restores every checkpoint exactly', async t => {
  const root = tempRoot()
  const ws = path.join(root, 'ws'); const store = path.join(root, 'store'); const home = path.join(root, 'home')
  fs.cpSync(path.join(FIXTURE, 'ws'), ws, { recursive: true, verbatimSymlinks: true })
  // git keeps no empty directory: the fixture's write-back left ws/empty, put it back
  fs.mkdirSync(path.join(ws, 'empty'), { recursive: true })
  fs.mkdirSync(store); fs.mkdirSync(home)
  for (const d of ['meta', 'packs']) fs.cpSync(path.join(FIXTURE, d), path.join(store, d), { recursive: true })
  const env = { ...process.env, REWINDFS_HOME: home }
  t.teardown(async () => { await forceUnmount(ws); fs.rmSync(root, { recursive: true, force: true }) })
  const cli = (...args: string[]): ReturnType<typeof spawnSync> => spawnSync(process.execPath, [CLI, ...args], { env, cwd: root, encoding: 'utf8', timeout: 120000 })
  const mount = cli('mount', ws, '--store', store)
  t.equal(mount.status, 0, `mount of the format-2 store succeeds (${String(mount.stderr)})`)
  const c = await RewindClient.connect({ storeDir: store, timeoutMs: 60000 })
  try {
    const log = await c.log({})
    t.same(log.map(x => x.id).sort(), [1, 2, 3, 4].slice(0, log.length), `its checkpoints are there (${log.length})`)
    await c.restore({ id: 2 })
    t.equal(fs.readFileSync(path.join(ws, 'a.txt'), 'utf8'), 'one\n', '#2: a.txt')
    t.equal(fs.readFileSync(path.join(ws, 'before.txt'), 'utf8'), 'hello\n', '#2: before.txt, from the frozen copy of the directory')
    t.equal(sha(path.join(ws, 'dense.bin')), crypto.createHash('sha256').update(Buffer.alloc(200000, 'x')).digest('hex'), '#2: dense.bin')
    t.ok(sparse().equals(fs.readFileSync(path.join(ws, 'sparse.bin'))), '#2: sparse.bin, holes and all')
    t.equal(fs.readlinkSync(path.join(ws, 'link')), 'a.txt', '#2: link')
    t.ok(fs.statSync(path.join(ws, 'empty')).isDirectory(), '#2: the empty directory')
    await c.restore({ id: 3 })
    t.equal(fs.readFileSync(path.join(ws, 'a.txt'), 'utf8'), 'two\n', '#3: a.txt')
    t.notOk(fs.existsSync(path.join(ws, 'before.txt')), '#3: before.txt removed')
    // new content in the new form: a run of holes
    const fd = fs.openSync(path.join(ws, 'sparse.bin'), 'r+'); fs.writeSync(fd, 'far', 9 * 2 ** 30); fs.closeSync(fd)
    const cp = await c.mark({ label: 'format 3' })
    await c.restore({ id: 2 })
    await c.restore({ id: cp.id })
    const b = Buffer.alloc(3); const fd2 = fs.openSync(path.join(ws, 'sparse.bin'), 'r'); fs.readSync(fd2, b, 0, 3, 9 * 2 ** 30); fs.closeSync(fd2)
    t.equal(b.toString(), 'far', 'a block written 9 GiB into the file restores')
  } finally { await c.close() }
  const um = cli('unmount', '-w', ws)
  t.equal(um.status, 0, `unmount (${String(um.stderr)})`)
  const db = await StoreDb.open(store)
  t.equal(await db.get('meta', 'format'), STORE_FORMAT, `the store is format ${STORE_FORMAT} now`)
  await db.close()
  const v = cli('verify', '--store', store)
  t.equal(v.status, 0, `verify is clean (${String(v.stdout)}${String(v.stderr)})`)
})
