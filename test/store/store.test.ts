/**
 * Tests of store/: StoreDb, PackWriter, BlockStore. Each test uses its
 * own mkdtemp store directory, removed at teardown.
 */

import t from 'tap'
import * as fs from 'node:fs'
import * as os from 'node:os'
import * as path from 'node:path'
import { createHash } from 'node:crypto'
import { ClassicLevel } from 'classic-level'
import { unpack } from 'msgpackr'
import xxhash from 'xxhash-wasm'
import { BLOCK_SIZE } from '../../base/types.js'
import { StoreDb, intKey, parseIntKey, STORE_FORMAT } from '../../store/db.js'
import { BlockStore } from '../../store/blocks.js'
import type { BlockStoreOptions } from '../../store/blocks.js'
import { PackWriter, PACK_HEADER_SIZE, RECORD_HEADER_SIZE, packFileName, writeRecord } from '../../store/pack.js'
import { CorruptStoreError, StoreError } from '../../store/errors.js'

/** The one part of a tap test the helpers need. */
interface Test { teardown: (fn: () => unknown) => void }

/** A fresh store directory removed after the test. */
function tmpStore (tt: Test): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rewindfs-store-'))
  tt.teardown(() => fs.rmSync(dir, { recursive: true, force: true }))
  return dir
}

/** Deterministic pseudo-random bytes (seeded by `seed`). */
function bytes (n: number, seed: number): Buffer {
  const out = Buffer.alloc(n)
  let off = 0
  let i = 0
  while (off < n) {
    const h = createHash('sha256').update(`${seed}:${i++}`).digest()
    off += h.copy(out, off)
  }
  return out
}

interface Opened { db: StoreDb, blocks: BlockStore }

async function openStore (tt: Test, dir: string, opts?: BlockStoreOptions): Promise<Opened> {
  const db = await StoreDb.open(dir)
  const blocks = await BlockStore.open(dir, db, opts)
  let closed = false
  const close = async (): Promise<void> => {
    if (closed) return
    closed = true
    blocks.close()
    await db.close()
  }
  tt.teardown(close)
  return { db, blocks, close } as Opened & { close: () => Promise<void> }
}

async function closeStore (s: Opened): Promise<void> {
  await (s as Opened & { close: () => Promise<void> }).close()
}

/** The commit order: sync pack bytes, then write the index batch. */
async function commit (s: Opened): Promise<void> {
  await s.blocks.sync()
  const batch = s.db.batch()
  s.blocks.commitTo(batch)
  await batch.write({ sync: true })
}

function packSizes (dir: string): Record<string, number> {
  const out: Record<string, number> = {}
  for (const name of fs.readdirSync(path.join(dir, 'packs')).sort()) out[name] = fs.statSync(path.join(dir, 'packs', name)).size
  return out
}

t.test('intKey orders numerically and round-trips', async tt => {
  tt.equal(intKey(255), '00000000000000ff')
  tt.equal(parseIntKey(intKey(2 ** 53 - 1)), 2 ** 53 - 1)
  tt.throws(() => intKey(-1), RangeError)
  tt.throws(() => intKey(1.5), RangeError)
  tt.ok(intKey(9) < intKey(10) && intKey(255) < intKey(256))
})

t.test('StoreDb: absence is undefined, batches, iterate in numeric order within a kind', async tt => {
  const dir = tmpStore(tt)
  const db = await StoreDb.open(dir)
  tt.teardown(() => db.close())
  tt.equal(await db.get('node', 1), undefined)
  tt.equal(await db.get('meta', 'format'), STORE_FORMAT)
  const b = db.batch()
  for (const n of [10, 2, 300, 1]) b.put('gen', n, { n })
  b.put('node', 5, { other: true })
  b.put('checkpoint', 'x', 'y')
  let written = false
  b.onWritten(() => { written = true })
  await b.write({ sync: true })
  tt.ok(written)
  const seen: number[] = []
  for await (const e of db.iterate<{ n: number }>('gen')) seen.push(parseIntKey(e.key), e.value.n)
  tt.same(seen, [1, 1, 2, 2, 10, 10, 300, 300])
  const ranged: number[] = []
  for await (const e of db.iterate('gen', { gte: 2, lt: 300, reverse: true })) ranged.push(parseIntKey(e.key))
  tt.same(ranged, [10, 2])
  await db.batch().del('gen', 10).write()
  tt.equal(await db.get('gen', 10), undefined)
  tt.same(await db.get('node', 5), { other: true })
})

t.test('StoreDb: a locked or corrupt database gives a clear typed error naming the path', async tt => {
  const dir = tmpStore(tt)
  const db = await StoreDb.open(dir)
  await tt.rejects(StoreDb.open(dir), { code: 'E_LOCKED' })
  await db.close()
  fs.writeFileSync(path.join(dir, 'meta', 'CURRENT'), 'garbage-without-newline')
  const err = await StoreDb.open(dir).then(() => undefined, (e: unknown) => e)
  tt.type(err, CorruptStoreError)
  tt.equal((err as StoreError).code, 'E_CORRUPT')
  tt.match((err as Error).message, path.join(dir, 'meta'))
  tt.match((err as Error).message, /verify --repair/)
})

t.test('StoreDb: an unknown format is refused; closed objects say so', async tt => {
  const dir = tmpStore(tt)
  const db = await StoreDb.open(dir)
  await db.batch().put('meta', 'format', STORE_FORMAT + 1).write()
  await db.close()
  await tt.rejects(db.get('meta', 'format'), { code: 'E_CLOSED' })
  await tt.rejects(StoreDb.open(dir), { code: 'E_FORMAT' })
  const s = await openStore(tt, tmpStore(tt))
  const b = s.db.batch()
  await b.write()
  await tt.rejects(b.write(), { code: 'E_CLOSED' })
})

t.test('put/read round-trip for 1, 4095 and 65536 bytes; readInto ranges', async tt => {
  const dir = tmpStore(tt)
  const s = await openStore(tt, dir)
  for (const n of [1, 4095, BLOCK_SIZE]) {
    const data = bytes(n, n)
    const id = s.blocks.put(data)
    tt.ok(s.blocks.has(id))
    tt.equal(s.blocks.length(id), n)
    tt.same(s.blocks.read(id), data, `read ${n}`)
    const target = Buffer.alloc(n + 10, 0xee)
    tt.equal(s.blocks.readInto(id, target, 5, 0, n), n)
    tt.same(target.subarray(5, 5 + n), data)
    tt.equal(target[4], 0xee)
    tt.equal(target[5 + n], 0xee)
  }
  const data = bytes(BLOCK_SIZE, 7)
  const id = s.blocks.put(data)
  const part = Buffer.alloc(100)
  tt.equal(s.blocks.readInto(id, part, 0, 1000, 100), 100)
  tt.same(part, data.subarray(1000, 1100))
  tt.equal(s.blocks.readInto(id, part, 0, BLOCK_SIZE - 30, 100), 30, 'clamped to block end')
  tt.same(part.subarray(0, 30), data.subarray(BLOCK_SIZE - 30))
  tt.equal(s.blocks.readInto(id, part, 0, BLOCK_SIZE, 10), 0)
  tt.throws(() => s.blocks.put(new Uint8Array(0)), RangeError)
  tt.throws(() => s.blocks.put(new Uint8Array(BLOCK_SIZE + 1)), RangeError)
})

t.test('dedup returns the same id and does not grow the pack; subarray input works', async tt => {
  const dir = tmpStore(tt)
  const s = await openStore(tt, dir)
  const data = bytes(5000, 1)
  const id = s.blocks.put(data)
  const before = packSizes(dir)
  const copy = Buffer.concat([Buffer.from('xx'), data, Buffer.from('yy')]).subarray(2, 2 + data.length)
  tt.equal(s.blocks.put(copy), id)
  tt.equal(s.blocks.put(Uint8Array.from(data)), id)
  tt.same(packSizes(dir), before)
  tt.equal(s.blocks.size, 1)
  const other = s.blocks.put(bytes(5000, 2))
  tt.not(other, id)
})

t.test('a forced hash collision stores two blocks under two ids and reads back each', async tt => {
  const dir = tmpStore(tt)
  const opts = { hash: () => 1n }
  const s = await openStore(tt, dir, opts)
  const a = bytes(4096, 10)
  const b = bytes(4096, 11) // same length: only the byte compare tells them apart
  const c = bytes(100, 12)
  const ia = s.blocks.put(a)
  const ib = s.blocks.put(b)
  const ic = s.blocks.put(c)
  tt.equal(new Set([ia, ib, ic]).size, 3)
  tt.same(s.blocks.read(ia), a)
  tt.same(s.blocks.read(ib), b)
  tt.same(s.blocks.read(ic), c)
  tt.equal(s.blocks.put(b), ib)
  tt.equal(s.blocks.put(a), ia)
  tt.equal(s.blocks.put(c), ic)
  await commit(s)
  await closeStore(s)
  const s2 = await openStore(tt, dir, opts)
  tt.equal(s2.blocks.put(b), ib, 'collision chain survives reopen')
  tt.equal(s2.blocks.put(a), ia)
  tt.same(s2.blocks.read(ib), b)
  tt.same([...await collect(s2.blocks.verifyAll())], [])
})

t.test('reopen after commit returns the same bytes and ids; ids are not reused', async tt => {
  const dir = tmpStore(tt)
  const s = await openStore(tt, dir)
  const datas = [bytes(1, 1), bytes(4095, 2), bytes(BLOCK_SIZE, 3)]
  const ids = datas.map(d => s.blocks.put(d))
  tt.equal(s.blocks.pendingCount, 3)
  await commit(s)
  tt.equal(s.blocks.pendingCount, 0)
  await closeStore(s)
  const s2 = await openStore(tt, dir)
  tt.equal(s2.blocks.size, 3)
  ids.forEach((id, i) => tt.same(s2.blocks.read(id), datas[i]))
  tt.same(datas.map(d => s2.blocks.put(d)), ids, 'dedup against committed blocks')
  const fresh = s2.blocks.put(bytes(10, 99))
  tt.ok(fresh > Math.max(...ids))
  tt.equal(Object.keys(packSizes(dir)).length, 2, 'a new pack per open')
})

t.test('the on-disk format: pack bytes and LevelDB keys/values as FORMAT.md says', async tt => {
  const dir = tmpStore(tt)
  const s = await openStore(tt, dir)
  const data = Buffer.from('hello, rewindfs')
  const id = s.blocks.put(data)
  const loc = s.blocks.location(id)
  tt.same(loc, { pack: 1, offset: PACK_HEADER_SIZE + RECORD_HEADER_SIZE, length: data.length })
  await commit(s)
  await closeStore(s)
  const pack = fs.readFileSync(path.join(dir, 'packs', packFileName(1)))
  tt.equal(packFileName(1), '00000001.pack')
  tt.equal(pack.subarray(0, 8).toString('ascii'), 'RWPACK02')
  tt.same(pack.subarray(8, 16), Buffer.alloc(8))
  tt.equal(pack.readUInt32LE(16), data.length)
  const { h64Raw } = await xxhash()
  tt.equal(pack.readBigUInt64LE(20), h64Raw(data))
  tt.equal(pack.readBigUInt64LE(28), BigInt(id), 'the record carries its BlockId')
  tt.same(pack.subarray(36), data)
  const level = new ClassicLevel<string, Uint8Array>(path.join(dir, 'meta'), { keyEncoding: 'utf8', valueEncoding: 'view' })
  await level.open()
  tt.teardown(() => level.close())
  const keys: string[] = []
  for await (const k of level.keys()) keys.push(k)
  tt.same(keys.sort(), ['!block!0000000000000001', '!meta!format', '!meta!nextBlockId'])
  const rec = unpack(await level.get('!block!0000000000000001') as Uint8Array)
  tt.same(rec, { pack: 1, offset: 36, length: data.length, hash: h64Raw(data).toString(16).padStart(16, '0') })
  tt.equal(unpack(await level.get('!meta!nextBlockId') as Uint8Array), 2)
  tt.equal(unpack(await level.get('!meta!format') as Uint8Array), STORE_FORMAT)
})

t.test('uncommitted blocks are absent after a crash; puts work after a garbage tail', async tt => {
  const dir = tmpStore(tt)
  const s = await openStore(tt, dir)
  const a = bytes(3000, 1)
  const b = bytes(3000, 2)
  const ia = s.blocks.put(a)
  await commit(s)
  const ib = s.blocks.put(b)
  await s.blocks.sync() // durable bytes, but no index batch: still uncommitted
  await closeStore(s) // "crash": close without commit
  // plus a torn record: a header promising more bytes than the file has
  fs.appendFileSync(path.join(dir, 'packs', packFileName(1)), Buffer.from([0xff, 0x10, 0, 0, 1, 2, 3]))
  const s2 = await openStore(tt, dir)
  tt.ok(s2.blocks.has(ia))
  tt.notOk(s2.blocks.has(ib), 'uncommitted block is absent')
  tt.equal(s2.blocks.size, 1)
  tt.same(s2.blocks.read(ia), a)
  const ib2 = s2.blocks.put(b)
  tt.same(s2.blocks.read(ib2), b)
  const ic = s2.blocks.put(bytes(BLOCK_SIZE, 3))
  await commit(s2)
  await closeStore(s2)
  const s3 = await openStore(tt, dir)
  tt.same(s3.blocks.read(ib2), b)
  tt.same(s3.blocks.read(ic), bytes(BLOCK_SIZE, 3))
  tt.same(s3.blocks.read(ia), a)
  tt.same([...await collect(s3.blocks.verifyAll())], [])
  // a scan of the crashed pack stops at the torn tail; the new pack scans whole
  const pw = await PackWriter.open(dir)
  tt.teardown(() => pw.close())
  tt.equal([...pw.scanPack(1)].length, 2, 'a and the uncommitted b, then the torn record')
  tt.equal([...pw.scanPack(2)].length, 2)
})

t.test('a record is one pwritev; a short pwritev is finished with pwrites (the header cut, or the data cut)', async tt => {
  // pwritev may write fewer bytes than asked (a signal, a filesystem near full): the rest must follow at the right offsets
  const dir = tmpStore(tt)
  const file = path.join(dir, 'records')
  const fd = fs.openSync(file, 'w+')
  tt.teardown(() => fs.closeSync(fd))
  const header = (d: Buffer, i: number): Buffer => { const h = Buffer.alloc(RECORD_HEADER_SIZE); h.writeUInt32LE(d.length, 0); h.writeBigUInt64LE(BigInt(i), 4); h.writeBigUInt64LE(BigInt(i), 12); return h }
  const data = [bytes(5000, 1), bytes(BLOCK_SIZE, 2), bytes(1, 3), bytes(777, 4), bytes(300, 5)]
  const cuts = [5, RECORD_HEADER_SIZE + 100, 0, RECORD_HEADER_SIZE, Infinity]
  let calls = 0
  let pos = 0
  const want: Buffer[] = []
  for (const [i, d] of data.entries()) {
    const h = header(d, i)
    // a pwritev that writes only the first cuts[i] bytes of what it was asked
    writeRecord(fd, h, d, pos, (f, bufs, p) => { calls++; const all = Buffer.concat(bufs); return fs.writeSync(f, all, 0, Math.min(cuts[i], all.length), p) })
    want.push(h, d)
    pos += h.length + d.length
  }
  tt.equal(calls, data.length, 'one pwritev per record')
  tt.ok(fs.readFileSync(file).equals(Buffer.concat(want)), 'every record is on disk whole, at its place, whatever the cut')
})

t.test('a block put while sync() runs stays pending until the next sync', async tt => {
  const dir = tmpStore(tt)
  const s = await openStore(tt, dir)
  const ia = s.blocks.put(bytes(100, 1))
  const syncing = s.blocks.sync()
  const ib = s.blocks.put(bytes(100, 2))
  await syncing
  const batch = s.db.batch()
  s.blocks.commitTo(batch)
  await batch.write()
  tt.equal(s.blocks.pendingCount, 1)
  await closeStore(s)
  const s2 = await openStore(tt, dir)
  tt.ok(s2.blocks.has(ia))
  tt.notOk(s2.blocks.has(ib))
  tt.ok(s2.blocks.put(bytes(100, 3)) > ib, 'nextBlockId counted ib: ids of pending blocks are never reused')
})

t.test('unknown id and truncated pack raise CorruptStoreError', async tt => {
  const dir = tmpStore(tt)
  const s = await openStore(tt, dir)
  const ia = s.blocks.put(bytes(2000, 1))
  const ib = s.blocks.put(bytes(2000, 2))
  tt.throws(() => s.blocks.read(999), { code: 'E_CORRUPT', context: { blockId: 999 } })
  tt.throws(() => s.blocks.length(999), CorruptStoreError)
  tt.throws(() => s.blocks.readInto(999, Buffer.alloc(1), 0, 0, 1), CorruptStoreError)
  await commit(s)
  await closeStore(s)
  const file = path.join(dir, 'packs', packFileName(1))
  fs.truncateSync(file, fs.statSync(file).size - 500)
  // a default open refuses the damaged store and says what to run
  const refused = await StoreDb.open(dir).then(async db => {
    try { await BlockStore.open(dir, db); return null } catch (e) { return e as CorruptStoreError } finally { await db.close() }
  })
  tt.equal(refused?.code, 'E_CORRUPT', 'open refuses a truncated pack')
  tt.match(refused?.message, /pack .*00000001\.pack is truncated: \d+ bytes, but its blocks end at byte \d+ \(2 indexed blocks in it\)/)
  tt.match(refused?.message, /rewindfs verify --store .* --repair/)
  const s2 = await openStore(tt, dir, { checkPacks: false })
  tt.same(s2.blocks.read(ia), bytes(2000, 1))
  tt.throws(() => s2.blocks.read(ib), { code: 'E_CORRUPT', context: { pack: 1 } })
  const problems = await collect(s2.blocks.verifyAll())
  tt.same(problems.map(p => [p.code, p.blockId]), [['E_BLOCK_UNREADABLE', ib]])
  tt.equal(s2.blocks.packProblems().length, 1)
  await closeStore(s2)
  fs.rmSync(file)
  const s3 = await openStore(tt, dir, { checkPacks: false })
  tt.match(s3.blocks.packProblems(), [/00000001\.pack is missing \(2 indexed blocks in it\)/])
  tt.throws(() => s3.blocks.read(ia), { code: 'E_CORRUPT', context: { pack: 1 } }, 'a missing pack')
  await closeStore(s3)
  fs.writeFileSync(file, Buffer.alloc(8000))
  const s4 = await openStore(tt, dir, { checkPacks: false })
  tt.match(s4.blocks.packProblems(), [/00000001\.pack has no RWPACK02 header/])
})

t.test('a flipped byte is never served: the first read of a block checks its hash', async tt => {
  const dir = tmpStore(tt)
  const s = await openStore(tt, dir)
  const good = s.blocks.put(bytes(BLOCK_SIZE, 7))
  const bad = s.blocks.put(bytes(BLOCK_SIZE, 8))
  await commit(s)
  await closeStore(s)
  const s2 = await openStore(tt, dir)
  const loc = s2.blocks.location(bad)
  const fd = fs.openSync(path.join(dir, 'packs', packFileName(loc.pack)), 'r+')
  fs.writeSync(fd, Buffer.from([0xee]), 0, 1, loc.offset + 60000)
  fs.closeSync(fd)
  const out = Buffer.alloc(100)
  tt.equal(s2.blocks.readInto(good, out, 0, 100, 100), 100)
  tt.same(out, bytes(BLOCK_SIZE, 7).subarray(100, 200), 'a partial read of a good block returns its bytes')
  tt.throws(() => s2.blocks.readInto(bad, out, 0, 0, 10), { code: 'E_CORRUPT', context: { blockId: bad } },
    'a read of the first bytes of the damaged block fails, although those bytes are intact')
  tt.throws(() => s2.blocks.read(bad), /is corrupt: its bytes hash to [0-9a-f]{16}, the index says [0-9a-f]{16}/)
})

t.test('verifyAll detects a flipped byte', async tt => {
  const dir = tmpStore(tt)
  const s = await openStore(tt, dir)
  const ids = [bytes(BLOCK_SIZE, 1), bytes(BLOCK_SIZE, 2), bytes(10, 3)].map(d => s.blocks.put(d))
  await commit(s)
  tt.same(await collect(s.blocks.verifyAll()), [])
  const loc = s.blocks.location(ids[1] as number)
  const fd = fs.openSync(path.join(dir, 'packs', packFileName(loc.pack)), 'r+')
  const one = Buffer.alloc(1)
  fs.readSync(fd, one, 0, 1, loc.offset + 1234)
  one[0] = (one[0] as number) ^ 0x01
  fs.writeSync(fd, one, 0, 1, loc.offset + 1234)
  fs.closeSync(fd)
  const problems = await collect(s.blocks.verifyAll())
  tt.equal(problems.length, 1)
  tt.equal(problems[0]?.code, 'E_BLOCK_HASH')
  tt.equal(problems[0]?.blockId, ids[1])
  tt.match(problems[0]?.message, /block \d+ \(pack 1/)
})

t.test('packs roll at the configured size', async tt => {
  const dir = tmpStore(tt)
  const s = await openStore(tt, dir, { packSize: 3 * (BLOCK_SIZE + RECORD_HEADER_SIZE) })
  const datas = Array.from({ length: 7 }, (_, i) => bytes(BLOCK_SIZE, i))
  const ids = datas.map(d => s.blocks.put(d))
  tt.same(ids.map(id => s.blocks.location(id).pack), [1, 1, 1, 2, 2, 2, 3])
  await commit(s)
  await closeStore(s)
  const s2 = await openStore(tt, dir, { maxOpenPacks: 2 })
  ids.forEach((id, i) => tt.same(s2.blocks.read(id), datas[i]))
  ids.forEach((id, i) => tt.same(s2.blocks.read(id), datas[i]), 'again, through the fd LRU')
})

async function collect<T> (it: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = []
  for await (const x of it) out.push(x)
  return out
}
