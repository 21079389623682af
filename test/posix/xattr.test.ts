/**
 * xattrs of files that were in the directory before the mount (the lower
 * layer): visible through the mount, kept by checkpoint/restore, written by
 * export, kept by write-back after changes through the mount, and still in
 * the frozen copies old checkpoints restore from after write-back changed
 * the directory. Every xattr is read in a python3 child process (Node has
 * no xattr API; the daemon must never read its own mount itself).
 */
import t from 'tap'
import fs from 'node:fs'
import path from 'node:path'
import { spawnSync } from 'node:child_process'
import { mountWorkspace, tempRoot } from '../helpers/mount.js'
import { lxattrs, lsetxattr, lremovexattr } from '../../fuse/xattr.js'

/** All xattrs of each path (no symlink followed) as name → hex, read by python3; null for a path that does not exist. */
function xattrsOf (...paths: string[]): Array<Record<string, string> | null> {
  const script = 'import os,sys,json\n' +
    'def one(p):\n' +
    ' if not os.path.lexists(p): return None\n' +
    ' return {n: os.getxattr(p, n, follow_symlinks=False).hex() for n in sorted(os.listxattr(p, follow_symlinks=False)) if n.startswith(("user.", "trusted."))}\n' +
    'print(json.dumps([one(p) for p in sys.argv[1:]]))'
  const r = spawnSync('python3', ['-c', script, ...paths], { encoding: 'utf8', timeout: 60000 })
  if (r.status !== 0) throw new Error(`python3 failed: ${r.stderr}`)
  return JSON.parse(r.stdout)
}

/** Sets xattrs with python3 (through the mount, or on plain files). */
function setX (p: string, name: string, value: Buffer | null): void {
  const script = 'import os,sys\np,n,v=sys.argv[1:]\nif v == "-": os.removexattr(p, n)\nelse: os.setxattr(p, n, bytes.fromhex(v))'
  const r = spawnSync('python3', ['-c', script, p, name, value === null ? '-' : value.toString('hex')], { encoding: 'utf8', timeout: 60000 })
  if (r.status !== 0) throw new Error(`python3 failed: ${r.stderr}`)
}

const hex = (s: string | Buffer): string => Buffer.from(s).toString('hex')
const BIN = Buffer.from(Array.from({ length: 256 }, (_, i) => i))
const BIG = Buffer.alloc(3000, 0xab)

/** Paths of the test tree, workspace-relative. */
const FILES = ['', 'a.txt', 'ro.txt', 'd', 'd/deep.txt', 'u/f', 'plain.txt', 'link']

function populate (dir: string): void {
  const p = (r: string): string => path.join(dir, r)
  fs.writeFileSync(p('a.txt'), 'alpha\n')
  fs.writeFileSync(p('ro.txt'), 'read only\n')
  fs.mkdirSync(p('d'))
  fs.writeFileSync(p('d/deep.txt'), 'deep\n')
  fs.mkdirSync(p('u'))
  fs.writeFileSync(p('u/f'), 'in a directory never listed\n')
  fs.writeFileSync(p('plain.txt'), 'no xattrs\n')
  fs.symlinkSync('a.txt', p('link'))
  setX(dir, 'user.root', Buffer.from('the workspace itself'))
  setX(p('a.txt'), 'user.one', Buffer.from('1'))
  setX(p('a.txt'), 'user.bin', BIN)
  setX(p('a.txt'), 'user.empty', Buffer.alloc(0))
  setX(p('a.txt'), 'trusted.t', Buffer.from('tt'))
  setX(p('ro.txt'), 'user.big', BIG)
  fs.chmodSync(p('ro.txt'), 0o444)
  setX(p('d'), 'user.dir', Buffer.from('D'))
  setX(p('d/deep.txt'), 'user.deep', Buffer.from('deep'))
  setX(p('u/f'), 'user.u', Buffer.from('u'))
}

/** The xattrs populate() sets, by path. */
const ORIGINAL: Record<string, Record<string, string>> = {
  '': { 'user.root': hex('the workspace itself') },
  'a.txt': { 'trusted.t': hex('tt'), 'user.bin': BIN.toString('hex'), 'user.empty': '', 'user.one': hex('1') },
  'ro.txt': { 'user.big': BIG.toString('hex') },
  d: { 'user.dir': hex('D') },
  'd/deep.txt': { 'user.deep': hex('deep') },
  'u/f': { 'user.u': hex('u') },
  'plain.txt': {},
  link: {}
}

function all (dir: string): Record<string, Record<string, string> | null> {
  const got = xattrsOf(...FILES.map(f => path.join(dir, f)))
  return Object.fromEntries(FILES.map((f, i) => [f, got[i]]))
}

t.test('the native calls of fuse/xattr.ts on a plain file', async t => {
  const root = tempRoot()
  t.teardown(() => fs.rmSync(root, { recursive: true, force: true }))
  const f = path.join(root, 'f')
  fs.writeFileSync(f, 'x')
  t.equal(lxattrs(f), null, 'no xattrs: null')
  lsetxattr(f, 'user.a', Buffer.from('A'))
  lsetxattr(f, 'user.z', new Uint8Array(0))
  t.same(Object.fromEntries(Object.entries(lxattrs(f)!).map(([k, v]) => [k, hex(v)])), { 'user.a': hex('A'), 'user.z': '' }, 'set and read back (empty value too)')
  t.same(xattrsOf(f)[0], { 'user.a': hex('A'), 'user.z': '' }, 'python sees the same')
  lremovexattr(f, 'user.z')
  t.same(Object.keys(lxattrs(f)!), ['user.a'], 'removed')
  t.throws(() => lremovexattr(f, 'user.z'), { code: 'ENODATA' }, 'removing an absent xattr: ENODATA')
  t.throws(() => lxattrs(path.join(root, 'missing')), { code: 'ENOENT' }, 'missing path: ENOENT')
  t.throws(() => lsetxattr(path.join(root, 'missing'), 'user.a', Buffer.from('x')), { code: 'ENOENT' })
  fs.symlinkSync('f', path.join(root, 'l'))
  t.equal(lxattrs(path.join(root, 'l')), null, 'a symlink: its own xattrs, not its target\'s')
})

t.test('lower-layer xattrs: mount, checkpoint/restore, export, write-back, frozen copies', async t => {
  const m = await mountWorkspace(t, populate)
  const outside = tempRoot()
  t.teardown(() => fs.rmSync(outside, { recursive: true, force: true }))

  // ---- visible through the mount (u/ is not listed: only getxattr of u/f lists it) ----
  t.same(all(m.dir), ORIGINAL, 'every lower xattr reads through the mount as on disk before the mount')
  const mountCp = (await m.client.log({})).at(-1)!
  t.equal(mountCp.label, 'mount', 'the mount checkpoint')

  // ---- checkpoint / restore ----
  const cp1 = await m.client.mark({ label: 'lower xattrs' })
  setX(path.join(m.dir, 'a.txt'), 'user.one', Buffer.from('changed'))
  setX(path.join(m.dir, 'a.txt'), 'user.bin', null)
  setX(path.join(m.dir, 'plain.txt'), 'user.added', Buffer.from('+'))
  setX(path.join(m.dir, 'd'), 'user.dir', null)
  const changed = {
    ...ORIGINAL,
    'a.txt': { 'trusted.t': hex('tt'), 'user.empty': '', 'user.one': hex('changed') },
    'plain.txt': { 'user.added': hex('+') },
    d: {}
  }
  t.same(all(m.dir), changed, 'changes through the mount')
  const cp2 = await m.client.mark({ label: 'changed xattrs' })
  await m.client.restore({ id: cp1.id })
  t.same(all(m.dir), ORIGINAL, 'restore brings the lower xattrs back')
  await m.client.restore({ id: cp2.id })
  t.same(all(m.dir), changed, 'and restore forward the changed ones')

  // ---- export ----
  const e1 = path.join(outside, 'at-cp1')
  const r1 = await m.cli(['export', String(cp1.id), e1])
  t.equal(r1.code, 0, `export cp1: ${r1.stderr}`)
  t.same(all(e1), ORIGINAL, 'export writes the lower xattrs (root, files, a read-only file, directories)')
  const e2 = path.join(outside, 'at-cp2')
  const r2 = await m.cli(['export', String(cp2.id), e2])
  t.equal(r2.code, 0, `export cp2: ${r2.stderr}`)
  t.same(all(e2), changed, 'export writes the changed xattrs')
  const e0 = path.join(outside, 'at-mount')
  t.equal((await m.cli(['export', String(mountCp.id), e0])).code, 0)
  t.same(all(e0), ORIGINAL, 'export of the mount checkpoint (nothing listed yet) has them too')

  // ---- write-back after changes through the mount ----
  fs.writeFileSync(path.join(m.dir, 'a.txt'), 'alpha rewritten\n') // content rewritten: a new file renamed over the old one
  fs.appendFileSync(path.join(m.dir, 'd/deep.txt'), 'more\n')
  fs.writeFileSync(path.join(m.dir, 'new.txt'), 'new\n')
  setX(path.join(m.dir, 'new.txt'), 'user.new', Buffer.from('N'))
  const final = { ...changed, 'new.txt': { 'user.new': hex('N') } }
  await m.unmount(false)
  const onDisk = xattrsOf(...[...FILES, 'new.txt'].map(f => path.join(m.dir, f)))
  t.same(Object.fromEntries([...FILES, 'new.txt'].map((f, i) => [f, onDisk[i]])), final,
    'write-back leaves the final xattrs on disk: rewritten, xattr-only changes, removals, untouched, new')
  t.equal(fs.readFileSync(path.join(m.dir, 'a.txt'), 'utf8'), 'alpha rewritten\n', 'content written back too')
  t.equal(fs.statSync(path.join(m.dir, 'ro.txt')).mode & 0o777, 0o444, 'mode kept')

  // ---- next session: the directory's xattrs import again; old checkpoints restore from frozen copies ----
  await m.remount()
  t.same(all(m.dir), changed, 'a new mount imports the written-back xattrs')
  t.same(xattrsOf(path.join(m.dir, 'new.txt'))[0], { 'user.new': hex('N') }, 'of the new file too')
  await m.client.restore({ id: mountCp.id })
  t.same(all(m.dir), ORIGINAL, 'the first session\'s mount checkpoint restores the original xattrs (frozen listings)')
  t.equal(fs.readFileSync(path.join(m.dir, 'a.txt'), 'utf8'), 'alpha\n', 'and the original content')
  t.equal(fs.readFileSync(path.join(m.dir, 'd/deep.txt'), 'utf8'), 'deep\n')
  t.same(xattrsOf(path.join(m.dir, 'new.txt'))[0], null, 'new.txt did not exist then')
  await m.client.restore({ id: cp2.id })
  t.same(all(m.dir), changed, 'a checkpoint of the first session with changed xattrs restores them')
  await m.unmount(false)
  t.same(all(m.dir), changed, 'write-back of the restored state')
  t.same(xattrsOf(path.join(m.dir, 'new.txt'))[0], null, 'new.txt removed by that write-back')
})
