// POSIX conformance, one area: attributes as root: chmod, chown, utimes and
// utimensat, which times each call changes, xattrs, statfs. Run by
// test/posix/conformance.test.ts on the suite's one mount (mount.ts); what a
// case is and how cases are counted: test/helpers/conformance.ts; which
// required case is where: test/README- conformance.md.
import t from 'tap'
import fs from 'node:fs'
import path from 'node:path'
import { record, KiB, C, both, seq, pyBoth, setup, limitation, property, sameStat, statNs } from '../../helpers/conformance.js'
import { caseDirs, type P, outcome, statFields, runSync, pyJson, pySeq, PY_PRELUDE } from '../../helpers/native-compare.js'
import { m, trees } from './mount.js'


// ---- attributes -----------------------------------------------------------

t.test('chmod: all 12 bits', async tt => {
  const c = caseDirs(trees, 'chmod')
  setup(tt, c, p => { fs.writeFileSync(p('f'), 'x'); fs.mkdirSync(p('d')) })
  const modes = [0o4000, 0o2000, 0o1000, 0o400, 0o200, 0o100, 0o40, 0o20, 0o10, 0o4, 0o2, 0o1, 0o7777, 0, 0o6755, 0o1777, 0o644]
  for (const mode of modes) {
    both(tt, `chmod ${mode.toString(8)}`, c, p => { fs.chmodSync(p('f'), mode); fs.chmodSync(p('d'), mode); return [statFields(p('f')).mode, statFields(p('d')).mode] })
  }
  both(tt, 'chmod of a missing file', c, p => fs.chmodSync(p('none'), 0o644))
  both(tt, 'chmod through a symlink changes the target', c, p => { fs.symlinkSync('f', p('l')); fs.chmodSync(p('l'), 0o640); return [statFields(p('f')).mode, statFields(p('l')).mode] })
  both(tt, 'setuid file, write by root keeps the bits', c, p => { fs.chmodSync(p('f'), 0o6755); fs.appendFileSync(p('f'), 'y'); return statFields(p('f')).mode })
  for (const f of ['f', 'd', 'l']) sameStat(tt, c, f)
})

t.test('chown (as root)', async tt => {
  const c = caseDirs(trees, 'chown')
  setup(tt, c, p => { fs.writeFileSync(p('f'), 'x'); fs.mkdirSync(p('d')); fs.symlinkSync('f', p('l')) })
  both(tt, 'chown 1234:5678', c, p => { fs.chownSync(p('f'), 1234, 5678); return statFields(p('f')) })
  both(tt, 'chown uid only (gid -1)', c, p => { fs.chownSync(p('f'), 42, -1); return statFields(p('f')) })
  both(tt, 'chown gid only (uid -1)', c, p => { fs.chownSync(p('f'), -1, 43); return statFields(p('f')) })
  both(tt, 'chown of a directory', c, p => { fs.chownSync(p('d'), 7, 8); return statFields(p('d')) })
  both(tt, 'lchown of a symlink leaves the target', c, p => { fs.lchownSync(p('l'), 9, 10); return [statFields(p('l')), statFields(p('f'))] })
  both(tt, 'chown clears setuid/setgid of an executable file', c, p => {
    fs.chmodSync(p('f'), 0o6755)
    fs.chownSync(p('f'), 11, 12)
    return statFields(p('f'))
  })
  both(tt, 'chown keeps setgid of a non-group-executable file (mandatory locking bit)', c, p => {
    fs.chmodSync(p('f'), 0o2644)
    fs.chownSync(p('f'), 13, 14)
    return statFields(p('f'))
  })
  both(tt, 'chown clears setuid of a non-executable file', c, p => {
    fs.chmodSync(p('f'), 0o4644)
    fs.chownSync(p('f'), 15, 16)
    return statFields(p('f'))
  })
  both(tt, 'chown -1 -1 clears setuid and setgid of an executable file', c, p => {
    fs.chmodSync(p('f'), 0o6755)
    fs.chownSync(p('f'), -1, -1)
    return statFields(p('f'))
  })
  both(tt, 'chown of a directory keeps setuid, setgid and sticky', c, p => {
    fs.chmodSync(p('d'), 0o7755)
    fs.chownSync(p('d'), 17, 18)
    return statFields(p('d'))
  })
  both(tt, 'chown of a missing file', c, p => fs.chownSync(p('none'), 1, 1))
  for (const f of ['f', 'd', 'l']) sameStat(tt, c, f)
})

t.test('utimes with distinct atime and mtime in ns', async tt => {
  const c = caseDirs(trees, 'utimes')
  const A = '1600000000123456789'
  const M = '1500000000987654321'
  const set = (p: string): void => {
    const r = runSync('python3', ['-c', 'import os,sys\nos.utime(sys.argv[1], ns=(int(sys.argv[2]), int(sys.argv[3])), follow_symlinks=sys.argv[4]=="1")', p, A, M, '1'])
    if (r.code !== 0) throw new Error(r.stderr)
  }
  both(tt, 'os.utime(ns=...) on a file', c, p => { fs.writeFileSync(p('f'), 'x'); set(p('f')); return statNs(p('f')) })
  both(tt, 'os.utime(ns=...) on a dir', c, p => { fs.mkdirSync(p('d')); set(p('d')); return statNs(p('d')) })
  both(tt, 'lutimes on a symlink (nofollow)', c, p => {
    fs.symlinkSync('f', p('l'))
    const r = runSync('python3', ['-c', 'import os,sys\nos.utime(sys.argv[1], ns=(1000000001, 2000000002), follow_symlinks=False)', p('l')])
    if (r.code !== 0) throw new Error(r.stderr)
    return [statNs(p('l')), statNs(p('f'))]
  })
  both(tt, 'fs.utimesSync (seconds with fractions)', c, p => { fs.writeFileSync(p('g'), ''); fs.utimesSync(p('g'), 1234567890.5, 987654321.25); return statNs(p('g')) })
  both(tt, 'pre-epoch mtime', c, p => {
    fs.writeFileSync(p('old'), '')
    const r = runSync('python3', ['-c', 'import os,sys\nos.utime(sys.argv[1], ns=(-1000000000, -123456789))', p('old')])
    if (r.code !== 0) throw new Error(r.stderr)
    return statNs(p('old'))
  })
  for (const f of ['f', 'd', 'l', 'g', 'old']) sameStat(tt, c, f, { mtime: true, atime: true })
})

t.test('utimensat: UTIME_NOW, UTIME_OMIT for each field, NULL times, nanoseconds, bad tv_nsec, futimens', async tt => {
  const c = caseDirs(trees, 'utimensat')
  // NOW is checked against the wall clock read around the call (1 s of
  // slack for coarse filesystem clocks): a range, not a timing assertion
  pyBoth(tt, 'utimensat', c, `
import time
d = sys.argv[1]
P = lambda n: os.path.join(d, n)
f = P('f')
with open(f, 'w') as w: w.write('x')
os.mkdir(P('dir'))
os.symlink('f', P('l'))
A, M = 1600000000123456789, 1500000000987654321
ns = lambda p=f: [os.stat(p, follow_symlinks=False).st_atime_ns, os.stat(p, follow_symlinks=False).st_mtime_ns]
def now(fn, p=f):
    t0 = time.time_ns() - 10**9
    c0 = os.stat(p, follow_symlinks=False).st_ctime_ns
    fn()
    t1 = time.time_ns() + 10**9
    s = os.stat(p, follow_symlinks=False)
    w = lambda x: 'now' if t0 <= x <= t1 else x
    return [w(s.st_atime_ns), w(s.st_mtime_ns), 'ctime now' if t0 <= s.st_ctime_ns <= t1 and s.st_ctime_ns >= c0 else 'ctime unchanged' if s.st_ctime_ns == c0 else 'ctime other']
r('both explicit', lambda: (utimensat(f, A, M), ns())[1])
r('atime OMIT, mtime explicit', lambda: (utimensat(f, 'OMIT', M + 1), ns())[1])
r('atime explicit, mtime OMIT', lambda: (utimensat(f, A + 1, 'OMIT'), ns())[1])
def both_omit():
    c0 = os.stat(f).st_ctime_ns
    time.sleep(0.02)
    utimensat(f, 'OMIT', 'OMIT')
    return [ns(), os.stat(f).st_ctime_ns == c0]
r('both OMIT changes nothing, not even ctime', both_omit)
r('both OMIT on a missing file succeeds (Linux)', lambda: utimensat(P('missing'), 'OMIT', 'OMIT'))
r('atime NOW, mtime OMIT', lambda: now(lambda: utimensat(f, 'NOW', 'OMIT')))
r('reset', lambda: (utimensat(f, A, M), ns())[1])
r('atime OMIT, mtime NOW', lambda: now(lambda: utimensat(f, 'OMIT', 'NOW')))
r('reset again', lambda: (utimensat(f, A, M), ns())[1])
r('both NOW', lambda: now(lambda: utimensat(f, 'NOW', 'NOW')))
r('reset once more', lambda: (utimensat(f, A, M), ns())[1])
r('NULL times (both now)', lambda: now(lambda: utimensat(f, None)))
r('atime NOW, mtime explicit', lambda: now(lambda: utimensat(f, 'NOW', M)))
r('explicit times set ctime to now', lambda: now(lambda: utimensat(f, A, M))[2])
r('1 ns and 999999999 ns', lambda: (utimensat(f, 1, 999999999), ns())[1])
r('0 (the epoch)', lambda: (utimensat(f, 0, 0), ns())[1])
r('before the epoch, with ns', lambda: (utimensat(f, -1, -1999999999), ns())[1])
r('after 2038 (2^33 s + 1 ns)', lambda: (utimensat(f, 2**33 * 10**9 + 1, 2**33 * 10**9 + 7), ns())[1])
r('tv_nsec = 10^9 is EINVAL', lambda: utimensat(f, (5, 10**9), (5, 0)))
r('negative tv_nsec is EINVAL', lambda: utimensat(f, (5, 0), (5, -1)))
r('times unchanged by the failed calls', lambda: ns())
r('directory: mtime NOW, atime explicit', lambda: now(lambda: utimensat(P('dir'), A, 'NOW'), P('dir')))
r('symlink itself (AT_SYMLINK_NOFOLLOW)', lambda: (utimensat(P('l'), 3, 'OMIT', nofollow=True), ns(P('l'))[0], ns(f))[1:])
r('through a symlink (follows)', lambda: (utimensat(P('l'), 11, 12), ns(f))[1])
def futimens():
    fd = os.open(f, os.O_RDONLY)
    try:
        os.utime(fd, ns=(21, 22))
        return ns()
    finally:
        os.close(fd)
r('futimens on an O_RDONLY fd', futimens)
r('os.utime(times=None) is NOW', lambda: now(lambda: os.utime(f)))
done()
`)
  for (const f of ['f', 'dir', 'l']) sameStat(tt, c, f)
})

/** Sleeps synchronously (lets the filesystem clocks move between two snapshots of times). */
function sleepMs (ms: number): void { Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms) }

t.test('which times each operation changes (ctime, mtime of the inode and its directories)', async tt => {
  const c = caseDirs(trees, 'times')
  setup(tt, c, p => {
    for (const d of ['d', 'e']) fs.mkdirSync(p(d))
    fs.mkdirSync(p('d/sub')); fs.mkdirSync(p('d/gone'))
    for (const f of ['d/f', 'd/h', 'd/same', 'd/empty', 'e/x', 'd/r']) fs.writeFileSync(p(f), f === 'd/empty' ? '' : 'content of ' + f)
    fs.linkSync(p('e/x'), p('e/x2'))
  })
  // a watched name 'old>new' is looked up as old before the operation and as new after it (a renamed inode)
  const snap = (p: P, rels: string[], after: boolean): Array<[bigint, bigint] | null> => rels.map(r => {
    const [old, now] = r.split('>')
    try { const s = fs.lstatSync(p(after ? now ?? old! : old!), { bigint: true }); return [s.ctimeNs, s.mtimeNs] } catch { return null }
  })
  // [label, watched names, operation, the mount's documented result where it is a LIMITATION]
  const steps: Array<[string, string[], (p: P) => void, unknown?]> = [
    ['create a file', ['d'], p => fs.writeFileSync(p('d/new'), '')],
    ['mkdir', ['d'], p => fs.mkdirSync(p('d/newdir'))],
    ['mkfifo', ['d'], p => { pyJson('import os,sys\nos.mkfifo(sys.argv[1])\nprint(1)', p('d/fifo')) }],
    ['symlink', ['d'], p => fs.symlinkSync('x', p('d/sl'))],
    ['write', ['d/f', 'd'], p => fs.appendFileSync(p('d/f'), 'more')],
    ['write of 0 bytes', ['d/f'], p => { const fd = fs.openSync(p('d/f'), 'r+'); fs.writeSync(fd, Buffer.alloc(0), 0, 0, 0); fs.closeSync(fd) }],
    ['truncate to a new size', ['d/f'], p => fs.truncateSync(p('d/f'), 3)],
    ['truncate to the same size', ['d/same'], p => fs.truncateSync(p('d/same'), fs.statSync(p('d/same')).size)],
    ['ftruncate to the same size', ['d/same'], p => { const fd = fs.openSync(p('d/same'), 'r+'); fs.ftruncateSync(fd, fs.fstatSync(fd).size); fs.closeSync(fd) }],
    ['O_TRUNC of an empty file', ['d/empty'], p => fs.closeSync(fs.openSync(p('d/empty'), C.O_WRONLY | C.O_TRUNC))],
    ['O_TRUNC of a non-empty file', ['d/same'], p => fs.closeSync(fs.openSync(p('d/same'), C.O_WRONLY | C.O_TRUNC))],
    ['read', ['d/h', 'd'], p => fs.readFileSync(p('d/h'))],
    ['open and close read-write without writing', ['d/h'], p => fs.closeSync(fs.openSync(p('d/h'), 'r+'))],
    ['fsync', ['d/h'], p => { const fd = fs.openSync(p('d/h'), 'r+'); fs.fsyncSync(fd); fs.closeSync(fd) }],
    ['chmod', ['d/h', 'd'], p => fs.chmodSync(p('d/h'), 0o600)],
    ['chmod to the same mode', ['d/h'], p => fs.chmodSync(p('d/h'), 0o600)],
    ['chown', ['d/h'], p => fs.chownSync(p('d/h'), 5, 5)],
    // LIMITATION (kernel FUSE driver and libfuse 2): chown(-1, -1) reaches
    // the filesystem as a SETATTR with no field set (the kernel sends ctime
    // only with the writeback cache), which libfuse2's high-level API answers
    // without calling the daemon: ctime stays as it was
    ['chown -1 -1', ['d/h'], p => fs.chownSync(p('d/h'), -1, -1), [{ ok: undefined }, [['d/h', 'ctime same', 'mtime same']]]],
    ['setxattr', ['d/h'], p => { pyJson('import os,sys\nos.setxattr(sys.argv[1], "user.t", b"1")\nprint(1)', p('d/h')) }],
    ['removexattr', ['d/h'], p => { pyJson('import os,sys\nos.removexattr(sys.argv[1], "user.t")\nprint(1)', p('d/h')) }],
    ['utimensat OMIT OMIT', ['d/h'], p => { pySeq('utimensat(sys.argv[1], "OMIT", "OMIT")\ndone()', [p('d/h')]) }],
    ['link', ['d/f', 'd', 'e'], p => fs.linkSync(p('d/f'), p('e/lf'))],
    ['unlink one of two names', ['d/f', 'e'], p => fs.unlinkSync(p('e/lf'))],
    ['rename a file across directories', ['d', 'e', 'd/f>e/f'], p => fs.renameSync(p('d/f'), p('e/f'))],
    ['rename a file within its directory', ['e', 'e/f>e/moved'], p => fs.renameSync(p('e/f'), p('e/moved'))],
    ['rename a directory across directories', ['d', 'e', 'd/sub>e/sub'], p => fs.renameSync(p('d/sub'), p('e/sub'))],
    ['rename over a hard-linked target', ['e', 'e/x2', 'e/moved>e/x'], p => fs.renameSync(p('e/moved'), p('e/x'))],
    ['rename onto itself', ['e', 'e/x'], p => fs.renameSync(p('e/x'), p('e/x'))],
    ['rmdir', ['d'], p => fs.rmdirSync(p('d/gone'))],
    ['unlink', ['d'], p => fs.unlinkSync(p('d/r'))]
  ]
  for (const [label, rels, op, limited] of steps) {
    const before = { nat: snap(c.nat, rels, false), mnt: snap(c.mnt, rels, false) }
    sleepMs(30)
    const res = { nat: outcome(() => op(c.nat)), mnt: outcome(() => op(c.mnt)) }
    const after = { nat: snap(c.nat, rels, true), mnt: snap(c.mnt, rels, true) }
    const changed = (k: 'nat' | 'mnt'): unknown => [res[k], rels.map((r, i) => {
      const b = before[k][i]; const a = after[k][i]
      if (!b || !a) return [r, b ? 'gone' : 'new']
      return [r, a[0] !== b[0] ? 'ctime changed' : 'ctime same', a[1] !== b[1] ? 'mtime changed' : 'mtime same']
    })]
    if (limited) limitation(tt, changed('mnt'), limited, `${label}: ${rels.join(', ')} (native: ${JSON.stringify(changed('nat'))})`)
    else record(tt.same(changed('mnt'), changed('nat'), `${label}: ${rels.join(', ')}`))
  }
})

t.test('touch -m leaves atime, touch -a leaves mtime', async tt => {
  const c = caseDirs(trees, 'touch')
  const setNs = (p: string): void => {
    const r = runSync('python3', ['-c', 'import os,sys\nos.utime(sys.argv[1], ns=(1600000000111111111, 1500000000222222222))', p])
    if (r.code !== 0) throw new Error(r.stderr)
  }
  const before = Date.now() * 1e6
  both(tt, 'touch -m', c, p => {
    fs.writeFileSync(p('m'), ''); setNs(p('m'))
    const r = runSync('touch', ['-m', p('m')])
    const [a, mm] = statNs(p('m'))
    return [r.code, a, Number(mm) >= before - 2e9]
  })
  both(tt, 'touch -a', c, p => {
    fs.writeFileSync(p('a'), ''); setNs(p('a'))
    const r = runSync('touch', ['-a', p('a')])
    const [a, mm] = statNs(p('a'))
    return [r.code, Number(a) >= before - 2e9, mm]
  })
  both(tt, 'touch -d with ns', c, p => {
    fs.writeFileSync(p('d'), '')
    const r = runSync('touch', ['-d', '2001-02-03 04:05:06.123456789 UTC', p('d')])
    return [r.code, statNs(p('d'))]
  })
  both(tt, 'touch of a new file creates it', c, p => { const r = runSync('touch', [p('new')]); return [r.code, statFields(p('new'))] })
})

t.test('xattrs (python os.*xattr in a child process)', async tt => {
  const c = caseDirs(trees, 'xattr')
  const script = PY_PRELUDE + `
p = sys.argv[1]
d = sys.argv[2]
l = sys.argv[3]
open(p, 'wb').close()
os.mkdir(d)
os.symlink('f', l)
U = lambda xs: sorted(x for x in xs if x.startswith('user.') or x.startswith('trusted.'))
r('list empty', lambda: U(os.listxattr(p)))
r('get missing', lambda: os.getxattr(p, 'user.missing'))
r('set', lambda: os.setxattr(p, 'user.a', b'value-a'))
r('get', lambda: os.getxattr(p, 'user.a'))
r('XATTR_CREATE on existing', lambda: os.setxattr(p, 'user.a', b'x', os.XATTR_CREATE))
r('XATTR_REPLACE on missing', lambda: os.setxattr(p, 'user.b', b'x', os.XATTR_REPLACE))
r('XATTR_CREATE on missing', lambda: os.setxattr(p, 'user.b', b'bee', os.XATTR_CREATE))
r('XATTR_REPLACE on existing', lambda: os.setxattr(p, 'user.a', b'replaced', os.XATTR_REPLACE))
r('get replaced', lambda: os.getxattr(p, 'user.a'))
r('empty value', lambda: os.setxattr(p, 'user.empty', b''))
r('get empty value', lambda: os.getxattr(p, 'user.empty'))
r('binary 1000-byte value (python probes with 128 bytes first)', lambda: os.setxattr(p, 'user.bin', (bytes(range(256)) * 4)[:1000]))
r('get binary', lambda: os.getxattr(p, 'user.bin'))
r('trusted namespace (root)', lambda: os.setxattr(p, 'trusted.t', b'tt'))
for i in range(6): r('long name %d' % i, lambda: os.setxattr(p, 'user.%d' % i + 'x' * 60, b'%d' % i))
r('list (over 256 bytes: python probes with 256 first)', lambda: U(os.listxattr(p)))
r('remove', lambda: os.removexattr(p, 'user.b'))
r('remove missing', lambda: os.removexattr(p, 'user.b'))
r('list after remove', lambda: U(os.listxattr(p)))
r('unknown namespace', lambda: os.setxattr(p, 'bogus.x', b'1'))
r('dir set', lambda: os.setxattr(d, 'user.dir', b'D'))
r('dir get', lambda: os.getxattr(d, 'user.dir'))
r('user xattr on a symlink itself', lambda: os.setxattr(l, 'user.s', b'1', follow_symlinks=False))
r('through a symlink', lambda: os.getxattr(l, 'user.a'))
r('name of 256 bytes', lambda: os.setxattr(p, 'user.' + 'n' * 251, b'1'))
r('missing file', lambda: os.getxattr(p + '.none', 'user.a'))
done()
`
  seq(tt, 'xattr sequence', c, p => pyJson(script, p('f'), p('d'), p('l')))
  sameStat(tt, c, 'f')
  // ext4 keeps all xattrs of an inode in one 4 KiB block (ENOSPC beyond it);
  // tmpfs/xfs/btrfs and rewindfs take values up to XATTR_SIZE_MAX (64 KiB),
  // which the kernel enforces (E2BIG) before the filesystem is asked.
  const big = PY_PRELUDE + `
p = sys.argv[1]
open(p, 'wb').close()
v = bytes(range(256)) * 256
r('set 64 KiB', lambda: os.setxattr(p, 'user.big', v))
r('get 64 KiB is equal', lambda: os.getxattr(p, 'user.big') == v)
r('set 64 KiB + 1', lambda: os.setxattr(p, 'user.big2', v + b'x'))
done()
`
  property(tt, JSON.stringify(pyJson(big, c.mnt('big'))) === JSON.stringify([['set 64 KiB', 'ok', null], ['get 64 KiB is equal', 'ok', true], ['set 64 KiB + 1', 'E2BIG']]), 'mount: 64 KiB values (XATTR_SIZE_MAX), E2BIG above')
})

t.test('statfs', async tt => {
  const df = runSync('df', ['-P', m.dir])
  tt.equal(df.code, 0, 'df on the mount exits 0')
  tt.match(df.stdout, /rewindfs/, 'df names the mount rewindfs')
  const sfs = fs.statfsSync(m.dir)
  tt.ok(sfs.blocks > 0 && sfs.bsize > 0, `statfs: ${sfs.blocks} blocks of ${sfs.bsize}`)
  const c = { nat: () => trees.nat, mnt: () => trees.mnt }
  both(tt, 'f_namemax', c, p => pyJson('import os,sys,json\nprint(json.dumps(os.statvfs(sys.argv[1]).f_namemax))', p()))
})

t.test('xattrs: buffer sizes (ERANGE), symlinks and fifos, flags on a missing name', async tt => {
  const c = caseDirs(trees, 'xattr2')
  pyBoth(tt, 'xattr sizes and kinds', c, `
d = sys.argv[1]
P = lambda n: os.path.join(d, n)
with open(P('f'), 'w') as w: w.write('x')
os.symlink('f', P('l'))
os.mkfifo(P('ff'))
U = lambda xs: sorted(x for x in xs if not x.startswith('security.'))
os.setxattr(P('f'), 'user.ten', b'0123456789')
os.setxattr(P('f'), 'user.b', b'')
r('getxattr with size 0 gives the length', lambda: getxattr_n(P('f'), 'user.ten', 0))
r('getxattr with a buffer one byte short', lambda: getxattr_n(P('f'), 'user.ten', 9))
r('getxattr with an exact buffer', lambda: getxattr_n(P('f'), 'user.ten', 10))
r('getxattr of an empty value with size 0', lambda: getxattr_n(P('f'), 'user.b', 0))
r('getxattr of a missing name with size 0', lambda: getxattr_n(P('f'), 'user.none', 0))
r('listxattr with size 0 gives the length (user.* only here)', lambda: listxattr_n(P('f'), 0) if not [x for x in os.listxattr(P('f')) if x.startswith('security.')] else 'has security.*')
r('listxattr with a buffer one byte short', lambda: listxattr_n(P('f'), len(b'user.ten\\0user.b\\0') - 1))
r('listxattr with an exact buffer', lambda: listxattr_n(P('f'), len(b'user.ten\\0user.b\\0')))
r('XATTR_CREATE|XATTR_REPLACE on a missing name', lambda: os.setxattr(P('f'), 'user.c', b'1', os.XATTR_CREATE | os.XATTR_REPLACE))
r('XATTR_CREATE|XATTR_REPLACE on an existing name', lambda: os.setxattr(P('f'), 'user.ten', b'1', os.XATTR_CREATE | os.XATTR_REPLACE))
r('setxattr with an empty name', lambda: os.setxattr(P('f'), '', b'1'))
r('setxattr "user." without a name', lambda: os.setxattr(P('f'), 'user.', b'1'))
r('get user.* through a symlink', lambda: os.getxattr(P('l'), 'user.ten'))
r('get user.* of the symlink itself', lambda: os.getxattr(P('l'), 'user.ten', follow_symlinks=False))
r('list of the symlink itself', lambda: U(os.listxattr(P('l'), follow_symlinks=False)))
r('set user.* on the symlink itself', lambda: os.setxattr(P('l'), 'user.s', b'1', follow_symlinks=False))
r('remove user.* of the symlink itself', lambda: os.removexattr(P('l'), 'user.ten', follow_symlinks=False))
r('set trusted.* on the symlink itself (root)', lambda: (os.setxattr(P('l'), 'trusted.s', b'S', follow_symlinks=False), os.getxattr(P('l'), 'trusted.s', follow_symlinks=False), U(os.listxattr(P('l'), follow_symlinks=False)))[1:])
r('the target does not get the symlink\\'s xattr', lambda: U(os.listxattr(P('f'))))
r('set user.* on a fifo', lambda: os.setxattr(P('ff'), 'user.f', b'1'))
r('get user.* of a fifo', lambda: os.getxattr(P('ff'), 'user.f'))
r('set trusted.* on a fifo', lambda: (os.setxattr(P('ff'), 'trusted.f', b'F'), os.getxattr(P('ff'), 'trusted.f'))[1])
r('setxattr on a missing file', lambda: os.setxattr(P('none'), 'user.x', b'1'))
r('listxattr of a missing file', lambda: os.listxattr(P('none')))
r('removexattr with a trailing slash on a file', lambda: os.removexattr(P('f/'), 'user.ten'))
def viafd():
    fd = os.open(P('f'), os.O_RDONLY)
    try:
        os.setxattr(fd, 'user.fd', b'fd')
        return [os.getxattr(fd, 'user.fd'), U(os.listxattr(fd))]
    finally:
        os.close(fd)
r('fsetxattr and fgetxattr on an O_RDONLY fd', viafd)
done()
`)
  for (const f of ['f', 'l', 'ff']) sameStat(tt, c, f)
})
t.test('statfs: fields that must hold', async tt => {
  const script = `
import os, sys, json
s = os.statvfs(sys.argv[1])
f = os.statvfs(sys.argv[2])
print(json.dumps({k: getattr(s, k) for k in ['f_bsize', 'f_frsize', 'f_blocks', 'f_bfree', 'f_bavail', 'f_files', 'f_ffree', 'f_favail', 'f_flag', 'f_namemax', 'f_fsid']} | {'file_same': [getattr(f, k) for k in ['f_bsize', 'f_blocks', 'f_files', 'f_namemax']] == [getattr(s, k) for k in ['f_bsize', 'f_blocks', 'f_files', 'f_namemax']]}))
`
  fs.writeFileSync(path.join(trees.mnt, 'statfs-file'), 'x'); fs.writeFileSync(path.join(trees.nat, 'statfs-file'), 'x')
  const mnt = pyJson(script, trees.mnt, path.join(trees.mnt, 'statfs-file'))
  const nat = pyJson(script, trees.nat, path.join(trees.nat, 'statfs-file'))
  // the mount reports the filesystem that holds its store: here the same one as the native tree
  property(tt, mnt.f_bsize > 0 && mnt.f_frsize > 0, 'f_bsize and f_frsize are positive', mnt)
  property(tt, mnt.f_blocks > 0 && mnt.f_bfree <= mnt.f_blocks && mnt.f_bavail <= mnt.f_bfree, 'f_bavail <= f_bfree <= f_blocks, f_blocks > 0', mnt)
  property(tt, mnt.f_ffree <= mnt.f_files && mnt.f_favail <= mnt.f_ffree, 'f_favail <= f_ffree <= f_files', mnt)
  property(tt, (mnt.f_flag & 1) === 0, 'ST_RDONLY is not set (the mount is writable)', mnt.f_flag)
  property(tt, mnt.file_same === true, 'statvfs of a file inside the mount equals statvfs of its root')
  property(tt, Math.abs(mnt.f_blocks * mnt.f_frsize - nat.f_blocks * nat.f_frsize) < mnt.f_frsize,
    'total size (f_blocks * f_frsize) equals that of the store\'s filesystem', [mnt.f_blocks * mnt.f_frsize, nat.f_blocks * nat.f_frsize])
  record(tt.equal(mnt.f_namemax, nat.f_namemax, 'f_namemax'))
  record(tt.equal(mnt.f_files, Math.min(nat.f_files, 0xffffffff), 'f_files (of the store\'s filesystem)'))
  record(tt.equal(mnt.f_flag & 1, nat.f_flag & 1, 'ST_RDONLY'))
})
