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
import { mountWorkspace } from '../helpers/mount.js'
import { verifyStore } from '../../fs/maint/verify.js'
import { StoreDb } from '../../store/db.js'
import type { FrozenPath } from '../../fs/lower.js'

const MANIFEST = fileURLToPath(new URL('../../../scripts/manifest.sh', import.meta.url))
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

t.test('after a crash, the directory wins for paths edited before the next mount, as a checkpoint of their own', async tt => {
  const logText = (): string => fs.readFileSync(path.join(m.home, 'daemon.log'), 'utf8')
  // a session whose lower layer holds edited.txt, keep.txt and gone.txt (written back by a clean unmount)
  fs.writeFileSync(p('edited.txt'), 'written back\n')
  fs.writeFileSync(p('keep.txt'), 'left alone\n')
  fs.writeFileSync(p('gone.txt'), 'removed outside\n')
  await m.unmount()
  await m.remount()
  // the session changes edited.txt and makes session-only.txt (both only in the store), then a fsync'd, unmarked write
  fs.writeFileSync(p('edited.txt'), 'session version\n')
  fs.writeFileSync(p('session-only.txt'), 'made in the session\n')
  const before = await m.client.mark({ label: 'before the crash' })
  const fd = fs.openSync(p('fsynced.txt'), 'w')
  fs.writeSync(fd, 'fsynced, not marked\n')
  fs.fsyncSync(fd)
  fs.closeSync(fd)
  const start = logText().length
  await m.kill9()
  await m.remount()
  const quiet = logText().slice(start)
  tt.match(quiet, /resumed from the state its last fsync made durable/, 'the mount after the kill resumes')
  tt.notMatch(quiet, /while not mounted/, 'nothing edited in between: nothing said, nothing recorded')
  const ids = (await m.client.log({ limit: 1000 })).map(c => c.id)
  tt.equal(ids[0], before.id, 'and no checkpoint made')
  await m.kill9()
  // the directory is the user's now: edit a path the session changed, remove one it only read, add one
  fs.writeFileSync(path.join(m.dir, 'edited.txt'), 'outside version\n')
  fs.rmSync(path.join(m.dir, 'gone.txt'))
  fs.writeFileSync(path.join(m.dir, 'offline-new.txt'), 'made while not mounted\n')
  const mid = logText().length
  await m.remount()
  const said = logText().slice(mid)
  const line = /rewindfs: 3 paths edited in \S+ while not mounted \(edited\.txt, gone\.txt, offline-new\.txt\): the directory's version wins, as checkpoint (\d+) "edits made while not mounted"; before them: checkpoint (\d+) \(README "After a crash"\)/.exec(said)
  tt.ok(line, `one line names the edits and the checkpoint:\n${said}`)
  tt.ok(said.split('\n').every(l => l.length < 300), 'every line is short')
  tt.notOk(fs.existsSync(path.join(m.store, 'outside-edits')), 'no copies: the checkpoint holds every edit')
  // the mounted view: the directory's version of each edited path, the session's work elsewhere
  tt.equal(fs.readFileSync(p('edited.txt'), 'utf8'), 'outside version\n', 'the mount shows the edit made outside')
  tt.notOk(fs.existsSync(p('gone.txt')), 'a file removed outside is gone')
  tt.equal(fs.readFileSync(p('offline-new.txt'), 'utf8'), 'made while not mounted\n', 'a file made outside is there')
  tt.equal(fs.readFileSync(p('session-only.txt'), 'utf8'), 'made in the session\n', 'work of the session the directory never had stays')
  tt.equal(fs.readFileSync(p('fsynced.txt'), 'utf8'), 'fsynced, not marked\n', 'and the fsync\'d write too')
  tt.equal(fs.readFileSync(p('keep.txt'), 'utf8'), 'left alone\n', 'a path nobody edited is as it was')
  // the checkpoints: the edits on top of the last acknowledged state, sealed first
  const log = await m.client.log({ limit: 1000 })
  const edits = log.find(c => c.id === Number(line?.[1]))
  const sealed = log.find(c => c.id === Number(line?.[2]))
  tt.equal(edits?.label, 'edits made while not mounted', 'the edits are a checkpoint of their own')
  tt.equal(sealed?.label, 'resumed after a crash', 'the fsync\'d state was sealed first')
  tt.equal(sealed?.parent, before.id, 'on top of the last checkpoint')
  tt.equal(edits?.parent, sealed?.id, 'the edits follow it')
  tt.equal(log[0]!.id, edits?.id, 'and are the head')
  await m.client.restore({ id: sealed!.id })
  tt.equal(fs.readFileSync(p('edited.txt'), 'utf8'), 'session version\n', 'the store\'s earlier version stays restorable')
  tt.equal(fs.readFileSync(p('fsynced.txt'), 'utf8'), 'fsynced, not marked\n', 'with the fsync\'d write')
  tt.notOk(fs.existsSync(p('offline-new.txt')), 'and without the edits')
  await m.client.restore({ id: edits!.id })
  // another crash without edits: the same edits are neither taken nor recorded again
  const count = (await m.client.log({ limit: 1000 })).length
  const mid2 = logText().length
  await m.kill9()
  await m.remount()
  tt.notMatch(logText().slice(mid2), /while not mounted/, 'a later resume does not find the same edits again')
  tt.equal((await m.client.log({ limit: 1000 })).length, count, 'and records no checkpoint')
  // the write-back agrees with the view
  const view = manifest(m.dir)
  await m.unmount()
  tt.equal(manifest(m.dir), view, 'the unmount writes back what the mount showed')
  tt.equal(fs.readFileSync(path.join(m.dir, 'edited.txt'), 'utf8'), 'outside version\n', 'the edit made outside is in the directory')
  tt.equal(fs.readFileSync(path.join(m.dir, 'session-only.txt'), 'utf8'), 'made in the session\n', 'beside the session\'s work')
  await m.remount()
})
