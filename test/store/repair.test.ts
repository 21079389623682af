/**
 * A damaged store is detected at start with a clear message, never served,
 * and `rewindfs verify --repair` rebuilds what the packs still hold:
 *  1. the block index deleted from LevelDB: rebuilt from the BlockIds in
 *     the pack records; every checkpoint restores exactly afterwards;
 *  2. LevelDB's CURRENT file lost: the daemon refuses to start (it does not
 *     start an empty store over it); LevelDB's repair brings every record
 *     back;
 *  3. a truncated pack: the daemon refuses to start naming the pack; repair
 *     says which blocks and files are lost and exits 1, and the store mounts
 *     again: the files that lost data fail with EIO, the rest is exact;
 *  4. an overwritten pack header: verify and mount agree it is damaged;
 *     repair writes it again;
 *  5. a byte flipped under a running daemon, in a block it wrote itself: a
 *     read, an export and the write-back at unmount all refuse it.
 */
import t, { type Test } from 'tap'
import fs from 'node:fs'
import path from 'node:path'
import crypto from 'node:crypto'
import { execFileSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { mountWorkspace, type Mounted } from '../helpers/mount.js'
import { StoreDb } from '../../store/db.js'
import { verifyStore } from '../../fs/maint/verify.js'
import { flipByte } from '../helpers/damage.js'

const MiB = 1024 * 1024
const MANIFEST = fileURLToPath(new URL('../../../scripts/manifest.sh', import.meta.url))
const manifest = (dir: string): string => execFileSync('bash', [MANIFEST, dir], { maxBuffer: 64 * MiB }).toString()

/** A store with a few checkpoints over real content, unmounted; returns the manifests by checkpoint. */
async function history (tt: Test): Promise<{ m: Mounted, want: Map<number, string> }> {
  const m = await mountWorkspace(tt, dir => {
    fs.mkdirSync(path.join(dir, 'src'))
    fs.writeFileSync(path.join(dir, 'src/lower.txt'), 'from before the mount\n')
  })
  const want = new Map<number, string>()
  const p = (r: string): string => path.join(m.dir, r)
  fs.writeFileSync(p('a.bin'), crypto.randomBytes(MiB + 12345))
  fs.mkdirSync(p('dir/empty'), { recursive: true })
  fs.symlinkSync('../a.bin', p('dir/link'))
  let c = await m.client.mark({ label: 'one' })
  want.set(c.id, manifest(m.dir))
  fs.writeFileSync(p('b.bin'), crypto.randomBytes(300000))
  fs.appendFileSync(p('src/lower.txt'), 'changed\n')
  c = await m.client.mark({ label: 'two' })
  want.set(c.id, manifest(m.dir))
  await m.unmount()
  return { m, want }
}

async function restoresExactly (tt: Test, m: Mounted, want: Map<number, string>): Promise<void> {
  for (const [id, man] of want) {
    await m.client.restore({ id })
    tt.equal(manifest(m.dir), man, `checkpoint ${id} restores exactly`)
  }
}

t.test('the block index lost from LevelDB is rebuilt from the packs', async tt => {
  const { m, want } = await history(tt)
  const db = await StoreDb.open(m.store)
  const batch = db.batch()
  let n = 0
  for await (const k of db.keys('block')) { batch.del('block', k); n++ }
  batch.del('meta', 'nextBlockId')
  await batch.write()
  await db.close()
  tt.ok(n >= 18, `deleted ${n} block index records`)
  const broken = await verifyStore(m.store)
  tt.ok(broken.problems.filter(p => p.code === 'E_MISSING_BLOCK').length > 0, 'verify reports the missing blocks')
  const r = await m.cli(['verify', '--store', m.store, '--repair'])
  tt.equal(r.code, 0, r.code === 0 ? 'repair exits 0' : r.stdout + r.stderr)
  tt.match(r.stdout, /repaired: block \d+ was missing from the index; now points at its record in pack \d+/)
  tt.match(r.stdout, /nextBlockId raised from 1 to \d+/)
  tt.match(r.stdout, /^clean: /m)
  const backups = (): string[] => fs.readdirSync(m.store).filter(n => n.startsWith('meta.before-repair-'))
  tt.equal(backups().length, 1, 'the metadata database was copied before the repair')
  tt.match(r.stdout, new RegExp(`the metadata database as it was before the repair is kept in ${m.store}/meta\\.before-repair-\\d{8}T\\d{6}Z`), 'and the repair says where')
  fs.cpSync(path.join(m.store, backups()[0]!), path.join(m.root, 'backup-store', 'meta'), { recursive: true })
  const bdb = await StoreDb.open(path.join(m.root, 'backup-store'))
  let kept = 0
  for await (const _ of bdb.keys('block')) kept++
  await bdb.close()
  tt.equal(kept, 0, 'the backup holds the database as it was (without the block index)')
  tt.same((await verifyStore(m.store)).problems, [], 'verify is clean')
  const again = await m.cli(['verify', '--store', m.store, '--repair'])
  tt.match(again.stdout, /nothing to repair/)
  tt.equal(backups().length, 1, 'a repair that changed nothing leaves no backup')
  await m.remount()
  await restoresExactly(tt, m, want)
})

t.test('a lost CURRENT file: refused at start (no empty store over it), then LevelDB repair', async tt => {
  const { m, want } = await history(tt)
  fs.rmSync(path.join(m.store, 'meta', 'CURRENT'))
  const refused = await m.remount().then(() => null, (e: Error) => e)
  tt.ok(refused, 'the daemon does not start')
  tt.match(refused?.message, /store database .*meta cannot be opened .*rewindfs verify --repair/)
  tt.notOk(fs.existsSync(path.join(m.store, 'meta', 'CURRENT')), 'no new database was created over the old one')
  const v = await m.cli(['verify', '--store', m.store])
  tt.equal(v.code, 1)
  tt.match(v.stderr, /cannot open the store .*verify --repair/, 'plain verify says to repair')
  const r = await m.cli(['verify', '--store', m.store, '--repair'])
  tt.equal(r.code, 0, r.code === 0 ? 'repair exits 0' : r.stdout + r.stderr)
  tt.match(r.stdout, /repaired: the metadata database could not be opened .*LevelDB's repair rebuilt it/)
  const backup = fs.readdirSync(m.store).find(n => n.startsWith('meta.before-repair-'))
  tt.ok(backup, 'the metadata database was copied before LevelDB\'s repair')
  tt.notOk(fs.existsSync(path.join(m.store, backup!, 'CURRENT')), 'as it was (without CURRENT)')
  tt.ok(fs.readdirSync(path.join(m.store, backup!)).some(n => n.endsWith('.log') || n.endsWith('.ldb')), 'with its log and tables')
  await m.remount()
  await restoresExactly(tt, m, want)
})

t.test('a truncated pack: refused at start; repair names what is lost', async tt => {
  const { m, want } = await history(tt)
  const packs = fs.readdirSync(path.join(m.store, 'packs')).sort()
  const lastPack = path.join(m.store, 'packs', packs[packs.length - 1]!)
  fs.truncateSync(lastPack, fs.statSync(lastPack).size - 100000)
  const refused = await m.remount().then(() => null, (e: Error) => e)
  tt.match(refused?.message, /the store .* is damaged: pack .*\.pack is truncated: \d+ bytes, but its blocks end at byte \d+/, 'the daemon refuses to start and names the pack')
  tt.match(refused?.message, /Nothing was served from it\. Run `rewindfs verify --store .* --repair`/)
  const r = await m.cli(['verify', '--store', m.store, '--repair'])
  tt.equal(r.code, 1, 'repair exits 1: the lost blocks have no copy')
  tt.match(r.stdout, /have no intact copy in any pack/)
  tt.match(r.stdout, /could not be repaired/)
  tt.match(r.stdout, /E_MISSING_BLOCK: checkpoint \d+: \/b\.bin .*used by checkpoint \d+ \/b\.bin/, 'names the file that lost data')
  tt.match(r.stdout, /index records of \d+ blocks? whose bytes are gone .* were removed, so the store mounts again/)
  await m.remount()
  const last = [...want.keys()][1]!
  await m.client.restore({ id: last })
  tt.throws(() => fs.readFileSync(path.join(m.dir, 'b.bin')), { code: 'EIO' }, 'the file that lost blocks fails with EIO')
  const aHash = want.get(last)!.split('\n').find(l => l.startsWith('./a.bin '))!.split(' ').pop()
  tt.equal(crypto.createHash('sha256').update(fs.readFileSync(path.join(m.dir, 'a.bin'))).digest('hex'), aHash, 'a file whose blocks are intact reads back exactly')
  tt.ok(fs.statSync(path.join(m.dir, 'dir/empty')).isDirectory(), 'the tree is there')
})

t.test('an overwritten pack header: verify and mount agree; repair writes it again', async tt => {
  const { m, want } = await history(tt)
  const pack = path.join(m.store, 'packs', fs.readdirSync(path.join(m.store, 'packs')).sort()[0]!)
  const fd = fs.openSync(pack, 'r+')
  fs.writeSync(fd, Buffer.alloc(8), 0, 8, 0)
  fs.closeSync(fd)
  const v = await verifyStore(m.store)
  tt.ok(v.problems.some(p => p.code === 'E_PACK_DAMAGED' && /has no RWPACK02 header/.test(p.message)), 'verify reports the header')
  const refused = await m.remount().then(() => null, (e: Error) => e)
  tt.match(refused?.message, /has no RWPACK02 header/, 'mount refuses it too')
  const r = await m.cli(['verify', '--store', m.store, '--repair'])
  tt.equal(r.code, 0, r.code === 0 ? 'repair exits 0' : r.stdout + r.stderr)
  tt.match(r.stdout, /repaired: pack .* had no RWPACK02 header; it was written again/)
  await m.remount()
  await restoresExactly(tt, m, want)
})

t.test('a byte flipped under a running daemon is not read, exported or written back', async tt => {
  const m = await mountWorkspace(tt)
  const data = crypto.randomBytes(300000)
  fs.writeFileSync(path.join(m.dir, 'g.bin'), data)
  const c = await m.client.mark({ label: 'g' })
  const pack = path.join(m.store, 'packs', fs.readdirSync(path.join(m.store, 'packs')).sort().pop()!)
  flipByte(pack, 70000, 1)
  const exported = await m.cli(['export', String(c.id), path.join(m.root, 'out')])
  tt.not(exported.code, 0, 'export fails')
  tt.match(exported.stderr, /is corrupt: its bytes hash to/, 'saying the block is corrupt')
  fs.writeFileSync('/proc/sys/vm/drop_caches', '1')
  tt.throws(() => fs.readFileSync(path.join(m.dir, 'g.bin')), { code: 'EIO' }, 'a read of the file fails with EIO')
  await m.unmount()
  const outcome = JSON.parse(fs.readFileSync(path.join(m.store, 'unmount.json'), 'utf8'))
  tt.equal(outcome.ok, false, 'the unmount reports that write-back failed')
  tt.match(outcome.errors.join('\n'), /g\.bin/, 'for g.bin')
  tt.notOk(fs.existsSync(path.join(m.dir, 'g.bin')), 'the damaged file was not written into the directory')
})
