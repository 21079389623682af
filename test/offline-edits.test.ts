/**
 * Edits to the workspace directory while it is not mounted. Once the daemon
 * is gone the directory is the user's again: files are rewritten, removed,
 * shortened, directories deleted, links retargeted. None of that may change
 * what an earlier checkpoint restores: unmount freezes every path the
 * directory holds into the store (fs/writeback.ts), after a write-back
 * and after a discard alike. Each checkpoint is compared with an independent
 * manifest (scripts/manifest.sh: path, type, mode, owner, size, mtime,
 * sha256, link target) taken when it was marked.
 */
import t from 'tap'
import fs from 'node:fs'
import path from 'node:path'
import crypto from 'node:crypto'
import { execFileSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { mountWorkspace } from './helpers/mount.js'
import { verifyStore } from '../fs/maint/verify.js'
import { StoreDb } from '../store/db.js'
import type { FrozenPath } from '../fs/lower.js'

const MANIFEST = fileURLToPath(new URL('../../scripts/manifest.sh', import.meta.url))
const manifest = (dir: string): string => execFileSync('bash', [MANIFEST, dir], { maxBuffer: 64 * 1024 * 1024 }).toString()

/**
 * The number of frozen copies in a stopped store, over all paths (`all`) or
 * all but the symlink and the directory holding it: reading a symlink sets its atime,
 * which write-back and freezing set back, so its ctime (in its directory's
 * listing) differs in every session.
 */
async function frozenCopies (store: string, all = false): Promise<number> {
  const db = await StoreDb.open(store)
  try {
    let n = 0
    for await (const e of db.iterate<FrozenPath[]>('lower')) if (all || (e.key !== '' && e.key !== 'link')) n += e.value.length
    return n
  } finally { await db.close() }
}

const m = await mountWorkspace(t, dir => {
  fs.writeFileSync(path.join(dir, 'a.txt'), 'original\n')
  fs.writeFileSync(path.join(dir, 'b.txt'), 'keep\n')
  fs.writeFileSync(path.join(dir, 'd.txt'), 'long-original-content\n')
  fs.mkdirSync(path.join(dir, 'sub/deep'), { recursive: true })
  fs.writeFileSync(path.join(dir, 'sub/deep/e.bin'), crypto.randomBytes(200 * 1024)) // across block boundaries
  fs.mkdirSync(path.join(dir, 'unlisted/inner'), { recursive: true }) // never listed through the mount
  fs.writeFileSync(path.join(dir, 'unlisted/inner/f.txt'), 'deep and never read\n')
  fs.mkdirSync(path.join(dir, 'empty'))
  fs.symlinkSync('a.txt', path.join(dir, 'link'))
})
const p = (r: string): string => path.join(m.dir, r)
const want = new Map<number, string>()
const first = (await m.client.log({}))[0]!.id
want.set(first, manifest(m.dir))
fs.writeFileSync(p('c.txt'), 'new in session 1\n')
fs.appendFileSync(p('a.txt'), 'appended through the mount\n')
const c2 = await m.client.mark({ label: 'session 1' })
want.set(c2.id, manifest(m.dir))

/** Edits the directory the way a user does between sessions (it is not mounted). */
function editOffline (dir: string): void {
  const q = (r: string): string => path.join(dir, r)
  fs.writeFileSync(q('a.txt'), 'CHANGED!\n')
  fs.rmSync(q('b.txt'))
  fs.writeFileSync(q('d.txt'), 'x') // shorter: a stale size would show zeros
  const e = fs.openSync(q('sub/deep/e.bin'), 'r+') // same size, other bytes in the middle
  fs.writeSync(e, crypto.randomBytes(4096), 0, 4096, 100 * 1024)
  fs.closeSync(e)
  fs.rmSync(q('unlisted'), { recursive: true })
  fs.rmdirSync(q('empty'))
  fs.rmSync(q('link')); fs.symlinkSync('c.txt', q('link'))
  fs.writeFileSync(q('offline.txt'), 'written while not mounted\n')
}

t.test('after a write-back, offline edits do not reach the checkpoints', async tt => {
  await m.unmount()
  const copiesOnce = await frozenCopies(m.store)
  tt.ok(copiesOnce > 0, `the unmount froze the directory (${copiesOnce} copies)`)
  editOffline(m.dir)
  const edited = manifest(m.dir)
  await m.remount()
  tt.equal(manifest(m.dir), edited, 'the new session shows the directory as edited')
  const c3 = (await m.client.log({}))[0]!
  want.set(c3.id, edited)
  for (const id of [first, c2.id, c3.id]) {
    await m.client.restore({ id })
    tt.equal(manifest(m.dir), want.get(id), `checkpoint #${id} restores exactly`)
  }
  const shown = await m.cli(['show', `${first}:b.txt`])
  tt.equal(shown.stdout, 'keep\n', `show ${first}:b.txt gives the removed file's content`)
})

t.test('after a discard, offline edits do not reach the checkpoints', async tt => {
  await m.client.restore({ id: c2.id })
  fs.writeFileSync(p('g.txt'), 'made in a discarded session\n')
  const c = await m.client.mark({ label: 'discarded session' })
  want.set(c.id, manifest(m.dir))
  const onDisk = (await m.client.log({})).find(x => x.label === 'mount' && x.id > c2.id)!
  await m.unmount(true)
  tt.equal(manifest(m.dir), want.get(onDisk.id), 'discard left the directory as the session found it')
  fs.writeFileSync(p('offline.txt'), 'edited again\n')
  fs.rmSync(p('sub'), { recursive: true })
  await m.remount()
  for (const id of [first, c2.id, onDisk.id, c.id]) {
    await m.client.restore({ id })
    tt.equal(manifest(m.dir), want.get(id), `checkpoint #${id} restores exactly`)
  }
})

t.test('unchanged paths share one frozen copy across sessions; verify is clean', async tt => {
  await m.client.restore({ id: c2.id })
  await m.unmount() // the write-back changes the directory: its paths get copies of this content
  await m.remount()
  await m.unmount() // a session that changed nothing, after one that did
  const before = await frozenCopies(m.store)
  await m.remount()
  await m.unmount() // and another one
  const after = await frozenCopies(m.store)
  tt.equal(after, before, `a session that changed nothing adds no frozen copy (${before} before, ${after} after)`)
  const v = await verifyStore(m.store)
  tt.same(v.problems, [], 'verify is clean')
  await m.remount()
  await m.client.restore({ id: first })
  tt.equal(manifest(m.dir), want.get(first), 'the first checkpoint still restores exactly')
})

t.test('gc drops the frozen copies of sessions no kept checkpoint refers to', async tt => {
  await m.unmount()
  const before = await frozenCopies(m.store, true)
  const r = await m.cli(['gc', '--store', m.store, '--keep-last', '0', '--abandoned-after', '0', '--run-idle', '0', '--json'])
  tt.equal(r.code, 0, `gc of the stopped store: ${r.stderr}`)
  const rep = JSON.parse(r.stdout)
  tt.ok(rep.checkpoints.removed.length > 0, `gc removed checkpoints #${rep.checkpoints.removed.join(', #')}`)
  tt.ok(rep.frozen > 0, `and ${rep.frozen} frozen copies of sessions only those referred to`)
  tt.equal(await frozenCopies(m.store, true), before - rep.frozen, 'the store holds that many fewer')
  const v = await verifyStore(m.store)
  tt.same(v.problems, [], 'verify is clean')
  await m.remount()
  const kept = (await m.client.log({ limit: 1000 })).map(c => c.id).filter(id => want.has(id))
  tt.ok(kept.includes(first), 'the first checkpoint is kept (the head descends from it)')
  for (const id of kept) {
    await m.client.restore({ id })
    tt.equal(manifest(m.dir), want.get(id), `kept checkpoint #${id} restores exactly`)
  }
})

t.test('after a crash, changes made to the directory before the next mount are named', async tt => {
  // a fresh session (the previous subtest ended mounted after a clean remount)
  fs.writeFileSync(p('through-mount.txt'), 'written through the mount\n')
  await m.client.mark({ label: 'before the crash' })
  const before = fs.readFileSync(path.join(m.home, 'daemon.log'), 'utf8').length
  await m.kill9()
  await m.remount()
  const quiet = fs.readFileSync(path.join(m.home, 'daemon.log'), 'utf8').slice(before)
  tt.match(quiet, /resumed from/, 'the mount after the kill resumes')
  tt.notMatch(quiet, /changed after this session started/, 'nothing changed in between: no warning')
  const mid = fs.readFileSync(path.join(m.home, 'daemon.log'), 'utf8').length
  await m.kill9()
  // files of the session's lower layer: what the directory holds now (the mount is gone)
  const files = fs.readdirSync(m.dir).filter(n => fs.lstatSync(path.join(m.dir, n)).isFile()).sort()
  tt.ok(files.length >= 2, `the directory holds files (${files.join(', ')})`)
  const [edited, removed] = files as [string, string]
  fs.appendFileSync(path.join(m.dir, edited), 'edited after the crash\n')
  await m.remount()
  const esc = (x: string): string => x.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
  const said = fs.readFileSync(path.join(m.home, 'daemon.log'), 'utf8').slice(mid)
  tt.match(said, new RegExp(`warning: 1 path in .* changed after this session started, outside the mount \\(${esc(edited)}\\): the workspace shows the store's version; copies: \\S+ \\(README "After a crash"\\)`), `the edited file is named (${edited})`)
  tt.ok(said.split('\n').every(l => l.length < 400), 'in short lines')
  const keptDir = /; copies: (\S+) \(README/.exec(said)?.[1]
  tt.ok(keptDir !== undefined && keptDir.startsWith(m.store), `the warning says where the edited file is kept (${keptDir})`)
  tt.match(fs.readFileSync(path.join(keptDir ?? '/nonexistent', edited), 'utf8'), /edited after the crash\n$/, 'the copy holds the edit')
  const mid2 = fs.readFileSync(path.join(m.home, 'daemon.log'), 'utf8').length
  await m.kill9()
  fs.rmSync(path.join(m.dir, removed))
  await m.remount()
  const said2 = fs.readFileSync(path.join(m.home, 'daemon.log'), 'utf8').slice(mid2)
  tt.match(said2, new RegExp(`warning: 2 paths in .* outside the mount \\(\\., ${esc(edited)}\\): the workspace shows the store's version; copies kept at an earlier mount`),
    `a removed file (${removed}) shows as its directory; the earlier edit is still named, and its copy is not made again`)
  tt.equal(fs.readdirSync(path.join(m.store, 'outside-edits')).filter(n => n !== 'kept.json').length, 1, 'one copy of the edit in outside-edits/')
})
