/**
 * diff and restore across mount sessions: every mount session reads the
 * directory as a new lower layer, so records of two sessions name their
 * content by different (session, path) references although it is the same.
 * After mount → checkpoint → unmount → mount, `diff` must list nothing for
 * unchanged paths and exactly the changed ones (M, m, A, D) otherwise.
 */
import t from 'tap'
import fs from 'node:fs'
import path from 'node:path'
import { mountWorkspace, type Mounted } from '../helpers/mount.js'
import type { DiffEntry } from '../../proto/messages.js'

function populate (dir: string): void {
  fs.writeFileSync(path.join(dir, 'a.txt'), 'alpha\n')
  fs.writeFileSync(path.join(dir, 'b.txt'), 'bravo\n')
  fs.writeFileSync(path.join(dir, 'c.txt'), 'charlie\n')
  fs.mkdirSync(path.join(dir, 'sub/deep'), { recursive: true })
  fs.writeFileSync(path.join(dir, 'sub/deep/d.txt'), 'delta\n')
  fs.writeFileSync(path.join(dir, 'sub/e.txt'), 'echo\n')
  fs.symlinkSync('a.txt', path.join(dir, 'link'))
}

/** diff through the CLI, as a user sees it: its lines. */
async function cliDiff (m: Mounted, a: number, b?: number): Promise<string[]> {
  const r = await m.cli(['diff', String(a), ...(b === undefined ? [] : [String(b)])])
  if (r.code !== 0) throw new Error(`rewindfs diff failed: ${r.stderr}`)
  return r.stdout.split('\n').filter(l => l !== '')
}

const byPath = (d: DiffEntry[]): string[] => d.map(e => `${e.change} ${e.path}`)

/** mtime of a path in ns as `touch -d` takes it (@seconds.nanoseconds). */
function mtimeArg (p: string): string {
  const ns = fs.statSync(p, { bigint: true }).mtimeNs
  return `@${ns / 1000000000n}.${String(ns % 1000000000n).padStart(9, '0')}`
}

t.test('nothing changed: diff across an unmount and a remount is empty', async t => {
  const m = await mountWorkspace(t, populate)
  // read the root listing (and one subdirectory) in the first session only
  t.same(fs.readdirSync(m.dir).sort(), ['a.txt', 'b.txt', 'c.txt', 'link', 'sub'])
  t.equal(fs.readFileSync(path.join(m.dir, 'a.txt'), 'utf8'), 'alpha\n')
  fs.readdirSync(path.join(m.dir, 'sub'))
  const cp = await m.client.mark({ label: 'before' })
  await m.unmount(false)
  await m.remount()
  t.same(await cliDiff(m, cp.id), [], 'nothing listed before anything is read in the new session')
  // list everything in the new session: the records are the new session's now
  const all = await m.sh('find . -exec stat -c "%n %s %Y" {} + >/dev/null && cat a.txt sub/deep/d.txt')
  t.equal(all.code, 0, all.stderr)
  t.same(await cliDiff(m, cp.id), [], 'nothing listed once every directory was listed again')
  const mounted = (await m.client.log({}))[0]
  t.equal(mounted.label, 'mount', 'the new session begins with its mount checkpoint')
  t.same(await m.client.diff({ a: cp.id, b: mounted.id }), [], 'between the checkpoint and the next session\'s mount checkpoint')
  t.same(await m.client.diff({ a: mounted.id, b: cp.id }), [], 'and the other way round')
  // a third session that reads nothing
  await m.unmount(false)
  await m.remount()
  t.same(await cliDiff(m, cp.id), [], 'two sessions later')
  t.same(await cliDiff(m, mounted.id), [], 'from the second session')
})

t.test('real changes across the sessions are listed, exactly', async t => {
  const m = await mountWorkspace(t, dir => {
    populate(dir)
    fs.writeFileSync(path.join(dir, 'f.txt'), 'foxtrot\n')
    fs.writeFileSync(path.join(dir, 'g.txt'), 'golf\n')
  })
  const c1 = await m.client.mark({ label: 'c1' })
  // session 1: b.txt changes (written back at unmount), g.txt changes and changes back
  fs.writeFileSync(path.join(m.dir, 'b.txt'), 'BRAVO, longer\n')
  const gm = mtimeArg(path.join(m.dir, 'g.txt'))
  fs.writeFileSync(path.join(m.dir, 'g.txt'), 'GOLF\n')
  fs.writeFileSync(path.join(m.dir, 'g.txt'), 'golf\n')
  t.equal((await m.sh(`touch -m -d ${gm} g.txt`)).code, 0)
  const c2 = await m.client.mark({ label: 'c2' })
  t.same(byPath(await m.client.diff({ a: c1.id, b: c2.id })), ['modified /b.txt'], 'in session 1: b.txt; g.txt has its bytes and mtime back')
  await m.unmount(false)
  await m.remount()
  t.same(await cliDiff(m, c1.id), ['M /b.txt'], 'after the remount: b.txt only')
  t.same(await cliDiff(m, c2.id), [], 'nothing since c2 (b.txt was written back unchanged)')
  // session 2: content edited, same size other bytes with the mtime set back, added, deleted, chmod, symlink retargeted
  fs.writeFileSync(path.join(m.dir, 'a.txt'), 'ALPHA edited\n')
  const cPath = path.join(m.dir, 'c.txt')
  const cm = mtimeArg(cPath)
  const cmNs = fs.statSync(cPath, { bigint: true }).mtimeNs
  fs.writeFileSync(cPath, 'CHARLIE\n')
  t.not(fs.statSync(cPath, { bigint: true }).mtimeNs, cmNs, 'the write moved the mtime')
  t.equal((await m.sh(`touch -m -d ${cm} c.txt`)).code, 0)
  t.equal(fs.statSync(cPath, { bigint: true }).mtimeNs, cmNs, 'touch -d set it back to the nanosecond')
  fs.writeFileSync(path.join(m.dir, 'sub/new.txt'), 'new\n')
  fs.rmSync(path.join(m.dir, 'sub/deep/d.txt'))
  fs.chmodSync(path.join(m.dir, 'f.txt'), 0o600)
  fs.rmSync(path.join(m.dir, 'link')); fs.symlinkSync('b.txt', path.join(m.dir, 'link'))
  // the directories' own mtimes changed with their entries: /, /sub, /sub/deep
  const expected = ['m /', 'M /a.txt', 'M /b.txt', 'M /c.txt', 'm /f.txt', 'M /link', 'm /sub', 'm /sub/deep', 'D /sub/deep/d.txt', 'A /sub/new.txt']
  t.same(await cliDiff(m, c1.id), expected, 'every change of both sessions, nothing else, in path order')
  const c3 = await m.client.mark({ label: 'c3' })
  t.same(byPath(await m.client.diff({ a: c2.id, b: c3.id })),
    ['meta /', 'modified /a.txt', 'modified /c.txt', 'meta /f.txt', 'modified /link', 'meta /sub', 'meta /sub/deep', 'deleted /sub/deep/d.txt', 'added /sub/new.txt'], 'between checkpoints of the two sessions: all but b.txt')
  // the same changes after one more unmount: now all on disk, read as the third session's lower layer
  await m.unmount(false)
  await m.remount()
  t.same(await cliDiff(m, c3.id), [], 'nothing since c3 after its write-back')
  t.same(await cliDiff(m, c1.id), expected, 'c1 against the third session: the same changes')
  t.equal(fs.readFileSync(path.join(m.dir, 'c.txt'), 'utf8'), 'CHARLIE\n')
})

t.test('restore across sessions: nothing to save and no inode counted when only listings were read', async t => {
  const m = await mountWorkspace(t, populate)
  const cp = await m.client.mark({ label: 'before' })
  await m.unmount(false)
  await m.remount()
  const all = await m.sh('find . >/dev/null && cat a.txt')
  t.equal(all.code, 0, all.stderr)
  const headBefore = (await m.client.log({}))[0]
  const r = await m.client.restore({ id: cp.id })
  t.equal(r.saved, null, 'no "before restore" checkpoint: listing directories changed nothing')
  t.equal(r.changed, 0, 'no inode changed')
  t.equal((await m.client.log({}))[0].id, headBefore.id, 'no checkpoint was added')
  t.equal(fs.readFileSync(path.join(m.dir, 'a.txt'), 'utf8'), 'alpha\n')
  t.same(await m.client.diff({ a: cp.id }), [])
  // a real change is still saved first
  fs.writeFileSync(path.join(m.dir, 'b.txt'), 'changed\n')
  const r2 = await m.client.restore({ id: cp.id })
  t.not(r2.saved, null, 'a real change is saved before the restore')
  t.ok(r2.changed > 0, 'and counted')
  t.equal(fs.readFileSync(path.join(m.dir, 'b.txt'), 'utf8'), 'bravo\n')
  t.same(byPath(await m.client.diff({ a: cp.id, b: r2.saved! })), ['modified /b.txt'])
})
