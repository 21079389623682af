// POSIX conformance, one area: fifos (mkfifo, non-blocking opens), content from
// before the mount (the lower layer), and a checkpoint and restore round trip
// of every kind of inode. Run by test/posix/conformance.test.ts on the suite's
// one mount (mount.ts); what a case is and how cases are counted:
// test/helpers/conformance.ts; which required case is where: test/README-
// conformance.md.
import t from 'tap'
import fs from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { MiB, BLOCK, C, both, pyBoth, property, sameStat, sameContent, sameList, writeAt, ino } from '../../helpers/conformance.js'
import { caseDirs, type P, outcome, statFields, runSync, pyJson, preadFile, pattern } from '../../helpers/native-compare.js'
import { m, trees } from './mount.js'

/** scripts/manifest.sh (this file runs as dist/test/posix/conformance/*.js) */
const MANIFEST = fileURLToPath(new URL('../../../../scripts/manifest.sh', import.meta.url))


t.test('mkfifo', async tt => {
  const c = caseDirs(trees, 'fifo')
  both(tt, 'mkfifo -m 0640', c, p => { const r = runSync('mkfifo', ['-m', '0640', p('ff')]); return [r.code, statFields(p('ff'))] })
  both(tt, 'mkfifo with python (umask applies)', c, p => pyJson('import os,sys,json\nos.mkfifo(sys.argv[1], 0o666)\nprint(json.dumps(oct(os.stat(sys.argv[1]).st_mode)))', p('ff2')))
  both(tt, 'mkfifo over an existing name', c, p => runSync('mkfifo', [p('ff')]).code)
  both(tt, 'readdir type', c, p => fs.readdirSync(p(''), { withFileTypes: true }).map(d => [d.name, d.isFIFO()]).sort())
  both(tt, 'data through the fifo (kernel-local, O_RDWR|O_NONBLOCK)', c, p => {
    const fd = fs.openSync(p('ff'), C.O_RDWR | C.O_NONBLOCK)
    fs.writeSync(fd, 'through the pipe')
    const b = Buffer.alloc(64)
    const n = fs.readSync(fd, b, 0, 64, null)
    fs.closeSync(fd)
    return b.subarray(0, n).toString()
  })
  both(tt, 'chmod a fifo', c, p => { fs.chmodSync(p('ff'), 0o600); return statFields(p('ff')) })
  both(tt, 'mknod of a socket with python', c, p => pyJson('import os,sys,json,stat\nos.mknod(sys.argv[1], 0o644|stat.S_IFSOCK)\nprint(json.dumps(oct(os.stat(sys.argv[1]).st_mode)))', p('sock')))
  for (const f of ['ff', 'ff2', 'sock']) sameStat(tt, c, f)
})

t.test('mkfifo: open O_RDONLY|O_NONBLOCK, O_WRONLY|O_NONBLOCK without a reader, errors', async tt => {
  const c = caseDirs(trees, 'fifo2')
  pyBoth(tt, 'fifo', c, `
d = sys.argv[1]
P = lambda n: os.path.join(d, n)
os.mkfifo(P('ff'), 0o644)
with open(P('f'), 'w') as w: w.write('x')
os.symlink('nowhere', P('dangling'))
def rd_nonblock():
    fd = os.open(P('ff'), os.O_RDONLY | os.O_NONBLOCK)
    try:
        return os.read(fd, 10)
    finally:
        os.close(fd)
r('open O_RDONLY|O_NONBLOCK with no writer, read gives EOF', rd_nonblock)
r('open O_WRONLY|O_NONBLOCK with no reader', lambda: os.open(P('ff'), os.O_WRONLY | os.O_NONBLOCK))
def pair():
    rd = os.open(P('ff'), os.O_RDONLY | os.O_NONBLOCK)
    wr = os.open(P('ff'), os.O_WRONLY | os.O_NONBLOCK)
    try:
        n = os.write(wr, b'through')
        got = os.read(rd, 100)
        empty = None
        try:
            os.read(rd, 100)
        except BlockingIOError as e:
            empty = errno.errorcode[e.errno]
        return [n, got, empty, os.fstat(wr).st_size]
    finally:
        os.close(wr)
        os.close(rd)
r('reader then writer, data, EAGAIN when empty', pair)
def seek():
    fd = os.open(P('ff'), os.O_RDWR)
    try:
        return os.lseek(fd, 0, os.SEEK_SET)
    finally:
        os.close(fd)
r('lseek on a fifo', seek)
r('truncate a fifo', lambda: os.truncate(P('ff'), 0))
r('mkfifo over an existing fifo', lambda: os.mkfifo(P('ff')))
r('mkfifo over a file', lambda: os.mkfifo(P('f')))
r('mkfifo over a dangling symlink', lambda: os.mkfifo(P('dangling')))
r('mkfifo below a file', lambda: os.mkfifo(P('f/x')))
r('mkfifo in a missing dir', lambda: os.mkfifo(P('no/x')))
r('mkfifo with a trailing slash', lambda: os.mkfifo(P('new/')))
r('mknod of a regular file', lambda: (os.mknod(P('reg'), 0o600 | 0o100000), oct(os.stat(P('reg')).st_mode), os.stat(P('reg')).st_size)[1:])
r('mknod of a char device as root', lambda: (os.mknod(P('null'), 0o666 | 0o020000, os.makedev(1, 3)), oct(os.stat(P('null')).st_mode), os.stat(P('null')).st_rdev == os.makedev(1, 3))[1:])
done()
`)
  for (const f of ['ff', 'reg', 'null']) sameStat(tt, c, f)
  sameList(tt, c, '')
})

// ---- the lower layer ------------------------------------------------------------

t.test('content from before the mount (lower layer)', async tt => {
  const c = { nat: (r = '') => path.join(trees.nat, 'lower', r), mnt: (r = '') => path.join(trees.mnt, 'lower', r) }
  // the hard link's first name is stat'ed before the directory of its second
  // name is listed (find order: a/ before z/)
  const nat = manifest(c.nat())
  const mnt = manifest(c.mnt())
  const natL = nat.split('\n'); const mntL = mnt.split('\n')
  const hard = (l: string): boolean => l.startsWith('./a/file ') || l.startsWith('./z/hard ')
  tt.same(mntL.filter(l => !hard(l)), natL.filter(l => !hard(l)), 'manifest.sh of the lower tree equals native (all but the hard-linked file)')
  // KNOWN BUG (fs/workspace.ts fromLower, not fixed here): a lower file
  // with st_nlink > 1 gets a record with only the names discovered so far;
  // until the directory holding its other name is listed it reports nlink 1,
  // and the kernel then caches that for attr_timeout (60 s). Fixing it needs
  // a persisted count of undiscovered lower names in the inode record
  // (fs/inode.ts). The property test's remount step shows the same.
  tt.same(mntL.filter(hard), natL.filter(hard), 'hard-linked lower file: nlink on both names')
  const lc = { nat: c.nat, mnt: c.mnt }
  // xattrs of files that exist before the mount are imported with the lower
  // listing (fs/lower.ts, through the native lxattrs of fuse/xattr.ts)
  const xa = (p: P): unknown => outcome(() => pyJson('import os,sys,json\nprint(json.dumps(os.getxattr(sys.argv[1], "user.lower").hex()))', p('a/b/small')))
  tt.same(xa(lc.mnt), xa(lc.nat), 'xattr of a lower file')
  tt.same(xa(lc.nat), { ok: Buffer.from('L').toString('hex') }, 'the native side has the xattr (the comparison is not vacuous)')
  both(tt, 'same ino on both names of the lower hard link', lc, p => ino(p('a/file')) === ino(p('z/hard')))
  both(tt, 'write through one name of the lower hard link, read through the other', lc, p => {
    writeAt(p('z/hard'), 'LOWER', BLOCK - 2)
    return preadFile(p('a/file'), BLOCK - 4, 10).toString('hex')
  })
  both(tt, 'append to a lower file, truncate another', lc, p => {
    fs.appendFileSync(p('a/b/small'), '+more')
    fs.truncateSync(p('z/sparse'), 2 * MiB)
    return [fs.readFileSync(p('a/b/small'), 'utf8'), fs.statSync(p('z/sparse')).size]
  })
  both(tt, 'rename and unlink in lower directories', lc, p => {
    fs.renameSync(p('a/b'), p('z/b'))
    fs.unlinkSync(p('z/sym'))
    return [fs.readdirSync(p('a')).sort(), fs.readdirSync(p('z')).sort()]
  })
  for (const f of ['a', 'z', 'z/b', 'z/b/small', 'z/sparse', 'z/fifo']) sameStat(tt, lc, f)
  sameContent(tt, lc, 'z/b/small'); sameContent(tt, lc, 'a/file'); sameContent(tt, lc, 'z/sparse')
})

// ---- checkpoint and restore -------------------------------------------------

/** Builds a tree with every kind of inode the store versions, on either tree (paths relative to dir). */
function buildEveryKind (dir: string): void {
  const p = (r: string): string => path.join(dir, r)
  fs.mkdirSync(p('src/deep/er'), { recursive: true })
  fs.mkdirSync(p('empty'))
  fs.writeFileSync(p('empty.txt'), '')
  fs.writeFileSync(p('small.txt'), 'small\n')
  fs.writeFileSync(p('src/multi.bin'), pattern(3 * BLOCK + 123, 8))
  fs.writeFileSync(p('src/deep/er/leaf'), 'leaf')
  fs.writeFileSync(p('sparse'), 'x'); writeAt(p('sparse'), 'y', 10 * MiB)
  fs.symlinkSync('small.txt', p('link'))
  fs.symlinkSync('does/not/exist', p('dangling'))
  fs.linkSync(p('small.txt'), p('src/hard'))
  runSync('mkfifo', ['-m', '0620', p('fifo')])
  fs.writeFileSync(p('suid'), '#!/bin/sh\n'); fs.chmodSync(p('suid'), 0o4755)
  fs.writeFileSync(p('sgid'), ''); fs.chmodSync(p('sgid'), 0o2711)
  fs.mkdirSync(p('sticky')); fs.chmodSync(p('sticky'), 0o1777)
  fs.writeFileSync(p('owned'), 'o'); fs.chownSync(p('owned'), 1234, 5678)
  fs.writeFileSync(p('n'.repeat(255)), 'long name')
  fs.mkdirSync(p('.git')); fs.writeFileSync(p('.git/HEAD'), 'ref: refs/heads/main\n')
  pyJson('import os,sys,json\nos.setxattr(sys.argv[1], "user.k", b"v1")\nos.setxattr(sys.argv[2], "user.d", b"dir")\nprint(1)', p('small.txt'), p('src'))
  // explicit times last (everything above changed directory mtimes)
  for (const [r, ns] of [['small.txt', '1500000000123456789'], ['src/deep', '1400000000000000001'], ['sparse', '1300000000999999999']] as const) {
    const x = runSync('python3', ['-c', 'import os,sys\nos.utime(sys.argv[1], ns=(int(sys.argv[2]), int(sys.argv[2])), follow_symlinks=False)', p(r), ns])
    if (x.code !== 0) throw new Error(x.stderr)
  }
}

function manifest (dir: string): string {
  const r = runSync('bash', [MANIFEST, dir], { timeoutMs: 60000 })
  if (r.code !== 0) throw new Error(`manifest.sh failed: ${r.stderr}`)
  return r.stdout
}

function xattrsOf (dir: string): unknown {
  return pyJson('import os,sys,json\nprint(json.dumps([os.getxattr(sys.argv[1], "user.k").hex(), os.getxattr(sys.argv[2], "user.d").hex(), sorted(os.listxattr(sys.argv[1]))]))', path.join(dir, 'small.txt'), path.join(dir, 'src'))
}

t.test('checkpoint and restore round-trip of every kind of inode', async tt => {
  const c = caseDirs(trees, 'ckpt')
  buildEveryKind(c.nat())
  buildEveryKind(c.mnt())
  const natMan = manifest(c.nat())
  const before = manifest(c.mnt())
  // the mount's tree equals the same tree built natively, but for the times
  // the build itself set (dir mtimes, file mtimes of files not set explicitly)
  const strip = (s: string): string => s.split('\n').map(l => {
    const f = l.split(' ')
    if (f.length < 9) return l
    const explicit = ['./small.txt', './src/deep', './sparse'].includes(f[0]!)
    return [...f.slice(0, 7), explicit ? f[7] : '-', ...f.slice(8)].join(' ')
  }).join('\n')
  tt.equal(strip(before), strip(natMan), 'the built tree matches its native twin (manifest.sh, times compared where set explicitly)')
  const xBefore = xattrsOf(c.mnt())
  tt.same(xBefore, xattrsOf(c.nat()), 'xattrs match native')

  const cp = await m.client.mark({ label: 'posix every kind' })

  // change every kind of thing
  const p = c.mnt
  fs.writeFileSync(p('small.txt'), 'changed content\n')
  fs.appendFileSync(p('src/multi.bin'), 'appended')
  writeAt(p('src/multi.bin'), 'overwritten', BLOCK - 3)
  fs.truncateSync(p('sparse'), 5)
  fs.unlinkSync(p('link')); fs.symlinkSync('elsewhere', p('link'))
  fs.unlinkSync(p('src/hard'))
  fs.unlinkSync(p('fifo'))
  fs.chmodSync(p('suid'), 0o644)
  fs.chownSync(p('owned'), 1, 2)
  fs.rmSync(p('src/deep'), { recursive: true })
  fs.rmdirSync(p('empty'))
  fs.renameSync(p('n'.repeat(255)), p('renamed'))
  fs.writeFileSync(p('added'), 'new file')
  fs.mkdirSync(p('added-dir'))
  fs.writeFileSync(p('.git/HEAD'), 'ref: refs/heads/other\n')
  pyJson('import os,sys,json\nos.setxattr(sys.argv[1], "user.k", b"v2")\nos.removexattr(sys.argv[2], "user.d")\nprint(1)', p('small.txt'), p('src'))
  const changed = manifest(c.mnt())
  tt.not(changed, before, 'the changes show in the manifest')

  const info = await m.client.restore({ id: cp.id })
  tt.equal(info.checkpoint, cp.id, 'restored the checkpoint')
  const after = manifest(c.mnt())
  tt.equal(after, before, 'manifest after restore equals manifest at the checkpoint (byte-identical content, modes, owners, nlink, sizes, mtimes)')
  tt.same(xattrsOf(c.mnt()), xBefore, 'xattrs restored')
  tt.equal(fs.readFileSync(p('small.txt'), 'utf8'), 'small\n', 'content of a cached file is fresh after restore')
  tt.equal(fs.readFileSync(p('src/hard'), 'utf8'), 'small\n', 'hard link restored')
  tt.equal(ino(p('src/hard')), ino(p('small.txt')), 'hard link is one inode again')
  tt.equal(preadFile(p('sparse'), 10 * MiB, 1).toString(), 'y', 'sparse tail restored')
})
