/**
 * Full disk: the store lives on a small tmpfs of its own.
 *
 * 1. Soft limit: once the store's filesystem would keep less than the
 *    reserve (REWINDFS_RESERVE) free, writers get ENOSPC, reads keep
 *    working, a checkpoint still succeeds (the reserve is for it), and when
 *    space returns (the tmpfs is grown) writes work again at once.
 * 2. Hard limit: the filesystem is filled to the last byte from outside, so
 *    even LevelDB cannot write: a checkpoint fails with E_NO_SPACE and
 *    changes nothing, reads keep working; when space returns the next
 *    checkpoint succeeds and survives a restart (LevelDB is reopened after
 *    a failed write: a write it accepts after one can otherwise vanish at
 *    the next recovery).
 * Then every checkpoint restores exactly, and after unmount verify is clean.
 * (test/disk-full/diskfull.test.ts: the same through the CLI, with the daemon's log on
 * the full disk, and mount / unmount / verify / repair while full.)
 *
 * Needs root (mount -t tmpfs); skipped with the reason otherwise.
 */
import t from 'tap'
import fs from 'node:fs'
import path from 'node:path'
import crypto from 'node:crypto'
import { execFileSync, spawnSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { mountWorkspace, storeTmpfs } from '../helpers/mount.js'
import { verifyStore } from '../../fs/maint/verify.js'

const MiB = 1024 * 1024
const MANIFEST = fileURLToPath(new URL('../../../scripts/manifest.sh', import.meta.url))

function manifest (dir: string): string {
  return execFileSync('bash', [MANIFEST, dir], { maxBuffer: 64 * MiB }).toString()
}

function sha (file: string): string {
  return crypto.createHash('sha256').update(fs.readFileSync(file)).digest('hex')
}

/** Writes `n` MiB of random bytes to `file` with dd; returns dd's exit status and stderr. */
function dd (file: string, n: number): { status: number, stderr: string } {
  const r = spawnSync('dd', ['if=/dev/urandom', `of=${file}`, 'bs=1M', `count=${n}`, 'status=none'], { encoding: 'utf8' })
  return { status: r.status ?? 1, stderr: r.stderr }
}

function freeBytes (dir: string): number {
  const s = fs.statfsSync(dir)
  return s.bavail * s.bsize
}

// a tmpfs for the store
const fsDir = storeTmpfs(t, '48m')
if (fsDir !== null) {
  process.env.REWINDFS_RESERVE = '8MB'
  const original = crypto.randomBytes(MiB)
  const m = await mountWorkspace(t, dir => { fs.writeFileSync(path.join(dir, 'keep.bin'), original) }, { store: () => path.join(fsDir, 'store') })
  const p = (r: string): string => path.join(m.dir, r)

  const a = crypto.randomBytes(4 * MiB)
  fs.writeFileSync(p('a.bin'), a)
  const cp1 = await m.client.mark({ label: 'a written' })
  const m1 = manifest(m.dir)

  await t.test('soft limit: ENOSPC below the reserve, reads and checkpoints work, writes return with space', async tt => {
    const r = dd(p('big.bin'), 100)
    tt.not(r.status, 0, 'dd of 100 MiB into a 48 MiB store fails')
    tt.match(r.stderr, /No space left on device/, 'with ENOSPC')
    const free = freeBytes(fsDir)
    tt.ok(free > 0, `the store's filesystem is not full to the last byte (${free} bytes free): the reserve held`)
    tt.equal(sha(p('keep.bin')), crypto.createHash('sha256').update(original).digest('hex'), 'a lower file reads back')
    tt.same(fs.readFileSync(p('a.bin')), a, 'a file in the store reads back')
    tt.not(dd(p('more.bin'), 1).status, 0, 'a 1 MiB write is refused while it would eat into the reserve')
    const cp2 = await m.client.mark({ label: 'while full' })
    tt.ok(cp2.id > cp1.id, 'a checkpoint succeeds in the reserve')
    const m2 = manifest(m.dir)

    // space returns: the tmpfs grows
    execFileSync('mount', ['-o', 'remount,size=400m', fsDir])
    fs.writeFileSync(p('c.txt'), 'written after space returned\n')
    tt.equal(fs.readFileSync(p('c.txt'), 'utf8'), 'written after space returned\n', 'writes work again at once')
    const cp3 = await m.client.mark({ label: 'space back' })
    const m3 = manifest(m.dir)
    await m.client.restore({ id: cp1.id })
    tt.equal(manifest(m.dir), m1, `checkpoint ${cp1.id} (before the disk filled) restores exactly`)
    await m.client.restore({ id: cp2.id })
    tt.equal(manifest(m.dir), m2, `checkpoint ${cp2.id} (taken while full, with the part of big.bin that fit) restores exactly`)
    await m.client.restore({ id: cp3.id })
    tt.equal(manifest(m.dir), m3)
  })

  await t.test('hard limit: LevelDB cannot write; a checkpoint fails and changes nothing; it works when space returns', async tt => {
    fs.rmSync(p('big.bin'), { force: true })
    fs.writeFileSync(p('d.txt'), 'unsaved change\n')
    // many new inodes and no data: the checkpoint's LevelDB batch (tens of KiB) needs new pages, its pack data none
    fs.mkdirSync(p('many'))
    for (let i = 0; i < 400; i++) fs.writeFileSync(p(`many/empty-${i}`), '')
    const before = await m.client.log({})
    // fill the filesystem to the last byte from outside rewindfs
    const filler = path.join(fsDir, 'filler')
    dd(filler, 1024)
    tt.equal(freeBytes(fsDir), 0, 'the store filesystem is full')
    const err = await m.client.mark({ label: 'cannot be written' }).then(() => null, (e: any) => e)
    tt.equal(err?.code, 'E_NO_SPACE', `the checkpoint fails with E_NO_SPACE: ${err?.message}`)
    tt.same((await m.client.log({})).map(c => c.id), before.map(c => c.id), 'no checkpoint was added')
    tt.equal(fs.readFileSync(p('d.txt'), 'utf8'), 'unsaved change\n', 'the unsaved change is still there')
    tt.same(fs.readFileSync(p('a.bin')), a, 'reads work')
    tt.not(dd(p('e.bin'), 1).status, 0, 'a write gets ENOSPC')
    fs.rmSync(filler)
    const cp = await m.client.mark({ label: 'after space returned' })
    tt.ok(!before.some(c => c.id === cp.id), 'the checkpoint succeeds once space is back')
    const want = manifest(m.dir)
    await m.kill9()
    await m.remount()
    const log = await m.client.log({})
    tt.ok(log.some(c => c.id === cp.id), `checkpoint ${cp.id}, written after the failed one, survives a restart`)
    await m.client.restore({ id: cp.id })
    tt.equal(manifest(m.dir), want, 'and restores exactly')
    await m.client.restore({ id: cp1.id })
    tt.equal(manifest(m.dir), m1, `checkpoint ${cp1.id} still restores exactly`)
  })

  await t.test('after unmount: verify is clean', async tt => {
    await m.unmount()
    const r = await verifyStore(m.store)
    tt.same(r.problems, [], 'no problems')
    tt.equal(r.ok, true)
  })
}
