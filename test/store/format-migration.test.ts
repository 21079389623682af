/**
 * Store format 2 → 3 (issue 11, item 1: block lists with runs of holes).
 * test/fixtures/store-format2 was written by the code of 047e107
 * (test/fixtures/make-store-format2.sh): three checkpoints with a dense
 * file, a sparse one, a symlink, an empty directory, then an unmount that
 * wrote the final state back into its `ws/`. This version must open it,
 * migrate it step by step (2 -> 3 -> 4 -> 5, store/migrate.ts), restore each
 * checkpoint exactly (sha256 of every file, computed from the fixture
 * script's inputs), keep writing to it in the new form, and verify clean.
 *
 * Store format 3 → 4 (issue 15: the effect ledger). test/fixtures/store-format3
 * was written by the code of 90515e9 (test/fixtures/make-store-format3.sh):
 * three checkpoints on two branches, a file with a run of holes 3 GiB long.
 * This version must open it, create its effect ledger (a genesis entry
 * `{format: 4, migratedFrom: 3}`), restore each checkpoint exactly, record
 * effects in it, and verify clean.
 */
import t from 'tap'
import fs from 'node:fs'
import path from 'node:path'
import crypto from 'node:crypto'
import { spawnSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { tempRoot, CLI, forceUnmount } from '../helpers/mount.js'
import { RewindClient } from '../../client/client.js'
import { StoreDb, STORE_FORMAT } from '../../store/db.js'
import { BlockList } from '../../fs/blocklist.js'
import { MIGRATIONS, migrationPath } from '../../store/migrate.js'
import { LEDGER_FILE, parseLedger } from '../../store/effect-chain.js'

const FIXTURE = fileURLToPath(new URL('../../../test/fixtures/store-format2', import.meta.url))
const FIXTURE3 = fileURLToPath(new URL('../../../test/fixtures/store-format3', import.meta.url))
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

t.test('the migrations are one chain: every older format reaches STORE_FORMAT, nothing else does', async t => {
  t.equal(STORE_FORMAT, 5)
  t.same(migrationPath(2, STORE_FORMAT)?.map(s => s.to), [3, 4, 5], '2 -> 3 -> 4 -> 5')
  t.same(migrationPath(3, STORE_FORMAT)?.map(s => s.to), [4, 5], '3 -> 4 -> 5')
  t.same(migrationPath(4, STORE_FORMAT)?.map(s => s.to), [5], '4 -> 5 (test/checkpoint/history-index.test.ts opens the format-4 fixture)')
  t.same(migrationPath(STORE_FORMAT, STORE_FORMAT), [], 'the current format: nothing to do')
  t.equal(migrationPath(1, STORE_FORMAT), null, 'format 1 is refused')
  t.equal(migrationPath(STORE_FORMAT + 1, STORE_FORMAT), null, 'a newer format is refused')
  for (const [from, step] of Object.entries(MIGRATIONS)) t.equal(step.to, Number(from) + 1, `the step from ${from} goes to the next format`)
  // a newer store is refused with E_FORMAT, and left as it was
  const root = tempRoot()
  t.teardown(() => fs.rmSync(root, { recursive: true, force: true }))
  const db = await StoreDb.open(root)
  t.ok(fs.existsSync(path.join(root, LEDGER_FILE)), 'a new store gets its effect ledger')
  await db.batch().put('meta', 'format', STORE_FORMAT + 1).write({ sync: true })
  await db.close()
  await t.rejects(StoreDb.open(root), { code: 'E_FORMAT' }, 'a store of a newer format is refused')
})

t.test('a format-3 store opens, gets its effect ledger, restores every checkpoint exactly and records effects', async t => {
  const root = tempRoot()
  const ws = path.join(root, 'ws'); const store = path.join(root, 'store'); const home = path.join(root, 'home')
  fs.cpSync(path.join(FIXTURE3, 'ws'), ws, { recursive: true, verbatimSymlinks: true })
  // the fixture keeps no 3 GiB sparse file in git: put back what the write-back left
  const fd0 = fs.openSync(path.join(ws, 'sparse.bin'), 'w'); fs.writeSync(fd0, 'start', 0); fs.writeSync(fd0, 'far', 3 * 2 ** 30); fs.closeSync(fd0)
  fs.mkdirSync(store); fs.mkdirSync(home)
  for (const d of ['meta', 'packs']) fs.cpSync(path.join(FIXTURE3, d), path.join(store, d), { recursive: true })
  t.notOk(fs.existsSync(path.join(store, LEDGER_FILE)), 'the fixture has no effect ledger')
  const env = { ...process.env, REWINDFS_HOME: home }
  t.teardown(async () => { await forceUnmount(ws); fs.rmSync(root, { recursive: true, force: true }) })
  const cli = (...args: string[]): ReturnType<typeof spawnSync> => spawnSync(process.execPath, [CLI, ...args], { env, cwd: root, encoding: 'utf8', timeout: 120000 })
  const mount = cli('mount', ws, '--store', store)
  t.equal(mount.status, 0, `mount of the format-3 store succeeds (${String(mount.stderr)})`)
  const ledger = parseLedger(fs.readFileSync(path.join(store, LEDGER_FILE), 'utf8'))
  t.same(ledger.problems, [], 'the new ledger verifies')
  t.match(ledger.entries[0], { seq: 1, kind: 'genesis', format: 4, migratedFrom: 3 }, 'its first entry says it was made by the 3 -> 4 migration')
  const c = await RewindClient.connect({ storeDir: store, timeoutMs: 60000 })
  const readAt = (p: string, off: number, n: number): string => { const b = Buffer.alloc(n); const fd = fs.openSync(p, 'r'); fs.readSync(fd, b, 0, n, off); fs.closeSync(fd); return b.toString() }
  try {
    const ids = (await c.log({})).map(x => x.id)
    for (const id of [1, 2, 3, 4]) t.ok(ids.includes(id), `checkpoint #${id} is there`)
    await c.restore({ id: 3 })
    t.equal(fs.readFileSync(path.join(ws, 'a.txt'), 'utf8'), 'two\n', '#3: a.txt')
    t.notOk(fs.existsSync(path.join(ws, 'b.txt')), '#3: no b.txt (it is on the other branch)')
    t.equal(fs.statSync(path.join(ws, 'sparse.bin')).size, 3 * 2 ** 30 + 3, '#3: sparse.bin keeps its size')
    t.equal(readAt(path.join(ws, 'sparse.bin'), 3 * 2 ** 30, 3), 'far', '#3: the block past the run of holes')
    t.equal(readAt(path.join(ws, 'sparse.bin'), 0, 5), 'start', '#3: the first block')
    t.equal(readAt(path.join(ws, 'sparse.bin'), 2 ** 30, 4), '\0\0\0\0', '#3: a hole reads as zeros')
    t.equal(fs.readlinkSync(path.join(ws, 'link')), 'a.txt', '#3: link')
    await c.restore({ id: 4 })
    t.equal(fs.readFileSync(path.join(ws, 'a.txt'), 'utf8'), 'one\n', '#4: a.txt')
    t.equal(fs.readFileSync(path.join(ws, 'b.txt'), 'utf8'), 'three\n', '#4: b.txt')
    t.equal(fs.readFileSync(path.join(ws, 'before.txt'), 'utf8'), 'hello\n', '#4: before.txt')
    // the migrated store records effects
    await c.effectRegister({ tool: 'ticket', class: 'compensable' })
    const b = await c.effectBegin({ tool: 'ticket', target: 'http://127.0.0.1/tickets', identity: 'k1' })
    await c.effectComplete({ occurrence: b.occurrence, status: 'confirmed', evidence: { id: 18446744073709551615n } })
    const list = await c.effectList({})
    t.equal(list[0]?.status, 'confirmed', 'an effect recorded in the migrated store')
    t.same(list[0]?.history.at(-1)?.evidence, { id: 18446744073709551615n }, 'its evidence keeps an integer of 2^64-1 exactly')
  } finally { await c.close() }
  const um = cli('unmount', '-w', ws)
  t.equal(um.status, 0, `unmount (${String(um.stderr)})`)
  const db = await StoreDb.open(store)
  t.equal(await db.get('meta', 'format'), STORE_FORMAT, `the store is format ${STORE_FORMAT} now`)
  await db.close()
  const v = cli('verify', '--store', store)
  t.equal(v.status, 0, `verify is clean (${String(v.stdout)}${String(v.stderr)})`)
  t.match(String(v.stdout), /[1-9][0-9]* effect ledger entries checked/, 'verify read the ledger')
})
