// POSIX conformance through a real rewindfs mount, compared call by call with
// the same call on a native directory (a plain directory on the host
// filesystem next to the mount). Organised like pjdfstest: one subtest per
// system call (or group of them); test/README-conformance.md maps each
// required case to its subtest.
//
// A CASE is one compared operation outcome: one assertion that an operation
// on the mount had the expected result, made by one of the helpers below and
// counted by them (`tally`):
// - both():        the same return value or errno as the same call natively;
// - seq():         each labelled entry of a python sequence (return value or
//                  errno of one call) equal to the native entry;
// - sameStat(), sameContent(), sameList(): the same resulting stat fields
//                  (type, mode, nlink, size, uid, gid; times where set
//                  explicitly), bytes, or directory listing as natively;
// - limitation():  where rewindfs cannot behave natively, the exact result it
//                  must give instead (marked LIMITATION with the reason);
// - property():    where the native result is not a reference (statfs
//                  fields, SEEK_DATA/SEEK_HOLE consistency), a property POSIX
//                  requires of the mount's result.
// A failed assertion counts as a case that did not pass. The last subtest
// prints `# conformance: N cases, P passed` (and the split by kind).
// Assertions outside these helpers (set-up sanity, checkpoint round trip)
// are not counted.
//
// The daemon runs in a child process (test/helpers/mount.ts), so this process
// may use synchronous fs calls on the mount. The unprivileged user is uid/gid
// 65534 (setpriv, no supplementary groups).
import t, { type Test } from 'tap'
import fs from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { spawnSync } from 'node:child_process'
import { mountWorkspace } from '../helpers/mount.js'
import { fuseLayer } from '../../fuse/layer.js'
import {
  type Outcome, type P, type Trees, type PyEntry, outcome, caseDirs, statFields, runSync, pyJson, pySeq, PY_PRELUDE,
  bufDiff, preadFile, pattern, NOBODY, PYTHON
} from '../helpers/native-compare.js'

/** The mount is served by the libfuse 3 low-level layer (REWINDFS_FUSE=ll): some libfuse 2.9 limitations are gone there. */
const LOW_LEVEL = fuseLayer() === 'll'

/** The 64 KiB blocks holding data of the SEEK_DATA/SEEK_HOLE test's files, as byte ranges (what the store keeps). */
const BLOCK_RANGES: Record<string, Array<[number, number]>> = {
  sparse: [[0, 65536], [1 << 20, (1 << 20) + 65536], [3 * (1 << 20) - 65536, 3 * (1 << 20)]],
  dense: [[0, 100000]],
  hole: [],
  empty: []
}

/** lseek(SEEK_DATA / SEEK_HOLE) over data ranges, for 0 <= o < size (ENXIO when no data follows). */
function seekIn (ranges: Array<[number, number]>, size: number, o: number, whence: string): number | string {
  if (whence === 'SEEK_DATA') {
    for (const [start, end] of ranges) if (end > o) return Math.max(start, o)
    return 'ENXIO'
  }
  for (const [start, end] of ranges) {
    if (start > o) return o
    if (end > o) return Math.min(end, size)
  }
  return o
}

const KiB = 1024
const MiB = 1024 * KiB
const GiB = 1024 * MiB
const BLOCK = 64 * KiB
const C = fs.constants
/** scripts/manifest.sh (this file runs as dist/test/posix/posix.test.js) */
const MANIFEST = fileURLToPath(new URL('../../../scripts/manifest.sh', import.meta.url))

/**
 * Content that exists before the mount: rewindfs serves it from the lower
 * layer (the directory as it was) until it is first changed. Built the same
 * way in the native tree.
 */
function populateLower (dir: string): void {
  const p = (r: string): string => path.join(dir, 'lower', r)
  fs.mkdirSync(p('a/b'), { recursive: true })
  fs.mkdirSync(p('z'))
  fs.writeFileSync(p('a/file'), pattern(2 * BLOCK + 9, 21))
  fs.writeFileSync(p('a/b/small'), 'small')
  fs.chmodSync(p('a/b/small'), 0o4750)
  fs.chownSync(p('a/b/small'), 321, 654)
  fs.linkSync(p('a/file'), p('z/hard'))
  fs.symlinkSync('../a/file', p('z/sym'))
  runSync('mkfifo', ['-m', '0600', p('z/fifo')])
  fs.writeFileSync(p('z/sparse'), 'x'); writeAt(p('z/sparse'), 'y', 3 * MiB)
  pyJson('import os,sys,json\nos.setxattr(sys.argv[1], "user.lower", b"L")\nprint(1)', p('a/b/small'))
  for (const r of ['a/file', 'a/b/small', 'z/sparse', 'z/sym', 'z/fifo', 'a/b', 'a', 'z', '']) {
    const x = runSync('python3', ['-c', 'import os,sys\nos.utime(sys.argv[1], ns=(1111111111222222222, 1222222222333333333), follow_symlinks=False)', p(r)])
    if (x.code !== 0) throw new Error(x.stderr)
  }
}

const m = await mountWorkspace(t, populateLower)
const trees: Trees = { nat: path.join(m.root, 'native'), mnt: m.dir }
fs.mkdirSync(trees.nat)
populateLower(trees.nat)
// mkdtemp made the temporary root 0700; the unprivileged-user case needs to reach both trees
fs.chmodSync(m.root, 0o755)
fs.chmodSync(trees.nat, 0o755)
fs.chmodSync(trees.mnt, 0o755)

interface Case { nat: P, mnt: P }

/** Conformance cases counted by the helpers below (see the header). */
const tally = { cases: 0, passed: 0, native: 0, limitation: 0, property: 0 }
/** [cases, passed] by subtest name, in the order they ran */
const bySubtest = new Map<string, [number, number]>()
/** name of the subtest running now (the helpers do not get it passed) */
let current = '(top level)'
t.beforeEach(tt => { current = tt.name })

/** Records one case of `kind` and whether its assertion passed; returns ok. */
function record (ok: boolean, kind: 'native' | 'limitation' | 'property' = 'native'): boolean {
  tally.cases++
  tally[kind]++
  if (ok) tally.passed++
  const s = bySubtest.get(current) ?? [0, 0]
  s[0]++; if (ok) s[1]++
  bySubtest.set(current, s)
  return ok
}

/** Runs fn on both trees; asserts the same outcome; returns the native one. */
function both<T> (tt: Test, label: string, c: Case, fn: (p: P) => T): Outcome<T> {
  const a = outcome(() => fn(c.nat))
  const b = outcome(() => fn(c.mnt))
  record(tt.same(b, a, label))
  return a
}

/** An entry of a python sequence where the mount cannot answer as native: what it answers instead, and why. */
interface Limit { mount: PyEntry, why: string }

/**
 * Runs a python sequence (PY_PRELUDE's r() entries) on both trees and
 * asserts each mount entry equal to the native one: one case per entry.
 * Entries named in `limits` are asserted equal to the documented mount
 * answer instead (LIMITATION). `run` gets the tree's path resolver. A
 * script that fails on either side fails the test (one case).
 */
function seq (tt: Test, label: string, c: Case, run: (p: P) => PyEntry[], limits: Record<string, Limit> = {}): PyEntry[] {
  const a = outcome(() => run(c.nat))
  const b = outcome(() => run(c.mnt))
  if (!('ok' in a) || !('ok' in b)) {
    record(tt.fail(`${label}: the script failed: native ${JSON.stringify(a).slice(0, 2000)}, mount ${JSON.stringify(b).slice(0, 2000)}`))
    return []
  }
  const n = Math.max(a.ok.length, b.ok.length)
  for (let i = 0; i < n; i++) {
    const name = String((a.ok[i] ?? b.ok[i])![0])
    const lim = limits[name]
    if (lim) limitation(tt, b.ok[i], lim.mount, `${label}: ${name}: ${lim.why} (native: ${JSON.stringify(a.ok[i]?.slice(1))})`)
    else record(tt.same(b.ok[i], a.ok[i], `${label}: ${name}`))
  }
  for (const name of Object.keys(limits)) if (!a.ok.some(e => e[0] === name)) record(tt.fail(`${label}: no entry "${name}" (a limitation names a missing case)`))
  return a.ok
}

/** A python sequence of `script` on both trees: argv[1] is the case directory; as `uid` when given. */
function pyBoth (tt: Test, label: string, c: Case, script: string, o: { uid?: number, limits?: Record<string, Limit> } = {}): PyEntry[] {
  return seq(tt, label, c, p => pySeq(script, [p()], { uid: o.uid }), o.limits)
}

/** Runs set-up steps on both trees; they must succeed on both (a set-up is not a counted case). */
function setup (tt: Test, c: Case, fn: (p: P) => void): void {
  const a = outcome(() => fn(c.nat))
  const b = outcome(() => fn(c.mnt))
  tt.same([a, b], [{ ok: undefined }, { ok: undefined }], 'set-up succeeds on both trees')
}

/** LIMITATION: asserts the mount's result equals what rewindfs documents instead of native behaviour. */
function limitation (tt: Test, actual: unknown, expected: unknown, label: string): boolean {
  return record(tt.same(actual, expected, 'LIMITATION: ' + label), 'limitation')
}

/** A property POSIX requires of the mount's result where native is no reference. */
function property (tt: Test, ok: boolean, label: string, extra?: unknown): boolean {
  return record(tt.ok(ok, label, extra === undefined ? {} : { found: extra }), 'property')
}

/** Asserts the same stat fields of rel in both trees. */
function sameStat (tt: Test, c: Case, rel: string, o: { mtime?: boolean, atime?: boolean, follow?: boolean } = {}): void {
  const a = outcome(() => statFields(c.nat(rel), o))
  const b = outcome(() => statFields(c.mnt(rel), o))
  record(tt.same(b, a, `stat ${rel || '.'}`))
}

/** Asserts the same content bytes of rel in both trees. */
function sameContent (tt: Test, c: Case, rel: string): void {
  const a = fs.readFileSync(c.nat(rel))
  const b = fs.readFileSync(c.mnt(rel))
  record(tt.equal(bufDiff(b, a), null, `content ${rel} (${a.length} bytes)`))
}

/** Asserts the same sorted listing of a directory in both trees. */
function sameList (tt: Test, c: Case, rel: string): string[] {
  const a = fs.readdirSync(c.nat(rel)).sort()
  const b = fs.readdirSync(c.mnt(rel)).sort()
  record(tt.same(b, a, `readdir ${rel || '.'}`))
  return b
}

function writeAt (p: string, data: Buffer | string, pos: number, flags = 'r+'): number {
  const fd = fs.openSync(p, flags)
  try { return fs.writeSync(fd, typeof data === 'string' ? Buffer.from(data) : data, 0, Buffer.byteLength(data), pos) } finally { fs.closeSync(fd) }
}

function ino (p: string): bigint { return fs.lstatSync(p, { bigint: true }).ino }

/** [st_atime_ns, st_mtime_ns] of p (lstat) from python3 os.stat, as decimal strings (exact beyond 2^53). */
function statNs (p: string): [string, string] {
  const r = runSync('python3', ['-c', "import os,sys\ns=os.stat(sys.argv[1],follow_symlinks=False)\nprint('%d %d' % (s.st_atime_ns, s.st_mtime_ns))", p])
  if (r.code !== 0) throw Object.assign(new Error(r.stderr), { code: 'PYTHON:' + r.stderr.trim().split('\n').pop() })
  const [a, mm] = r.stdout.trim().split(' ')
  return [a!, mm!]
}

// ---- create, open flags ---------------------------------------------------

t.test('create and O_EXCL', async tt => {
  const c = caseDirs(trees, 'excl')
  both(tt, 'O_CREAT|O_EXCL on a new name', c, p => { fs.closeSync(fs.openSync(p('f'), C.O_CREAT | C.O_EXCL | C.O_WRONLY, 0o640)); return true })
  both(tt, 'O_CREAT|O_EXCL on an existing name', c, p => { fs.closeSync(fs.openSync(p('f'), C.O_CREAT | C.O_EXCL | C.O_WRONLY, 0o640)); return true })
  both(tt, 'O_CREAT without O_EXCL on an existing name', c, p => { fs.closeSync(fs.openSync(p('f'), C.O_CREAT | C.O_WRONLY, 0o600)); return true })
  both(tt, 'O_CREAT|O_EXCL on a dangling symlink', c, p => { fs.symlinkSync('nowhere', p('dl')); fs.closeSync(fs.openSync(p('dl'), C.O_CREAT | C.O_EXCL | C.O_WRONLY, 0o600)); return true })
  both(tt, 'open without O_CREAT on a missing name', c, p => fs.openSync(p('missing'), C.O_RDONLY) > 0)
  both(tt, 'O_CREAT with mode 07777 (umask applies)', c, p => { fs.closeSync(fs.openSync(p('all'), C.O_CREAT | C.O_WRONLY, 0o7777)); return true })
  both(tt, 'open a directory for writing', c, p => fs.openSync(p(''), C.O_WRONLY) > 0)
  both(tt, 'O_CREAT below a file', c, p => fs.openSync(p('f/x'), C.O_CREAT | C.O_WRONLY) > 0)
  for (const f of ['f', 'all', 'dl']) sameStat(tt, c, f)
  sameList(tt, c, '')
})

t.test('O_TRUNC', async tt => {
  const c = caseDirs(trees, 'trunc')
  both(tt, 'write', c, p => fs.writeFileSync(p('f'), 'hello world, a longer first version'))
  both(tt, 'O_TRUNC|O_WRONLY then write', c, p => {
    const fd = fs.openSync(p('f'), C.O_TRUNC | C.O_WRONLY)
    const st = fs.fstatSync(fd).size
    fs.writeSync(fd, 'hi')
    fs.closeSync(fd)
    return st
  })
  sameStat(tt, c, 'f'); sameContent(tt, c, 'f')
  both(tt, 'O_TRUNC|O_RDWR without writing', c, p => { fs.closeSync(fs.openSync(p('f'), C.O_TRUNC | C.O_RDWR)); return true })
  sameStat(tt, c, 'f'); sameContent(tt, c, 'f')
  both(tt, 'multi-block file then O_TRUNC|O_CREAT (the "w" flag)', c, p => {
    fs.writeFileSync(p('g'), pattern(3 * BLOCK + 5, 1))
    fs.writeFileSync(p('g'), 'short')
  })
  sameStat(tt, c, 'g'); sameContent(tt, c, 'g')
})

t.test('O_APPEND', async tt => {
  const c = caseDirs(trees, 'append')
  both(tt, 'two appends', c, p => {
    fs.writeFileSync(p('f'), 'start|')
    fs.appendFileSync(p('f'), 'one|')
    fs.appendFileSync(p('f'), 'two|')
  })
  sameStat(tt, c, 'f'); sameContent(tt, c, 'f')
  both(tt, 'O_APPEND ignores the write position', c, p => {
    const fd = fs.openSync(p('f'), C.O_WRONLY | C.O_APPEND)
    fs.writeSync(fd, Buffer.from('AT0|'), 0, 4, 0)
    fs.closeSync(fd)
  })
  both(tt, 'two O_APPEND fds interleaved', c, p => {
    const a = fs.openSync(p('f'), 'a')
    const b = fs.openSync(p('f'), 'a')
    fs.writeSync(a, 'A1|'); fs.writeSync(b, 'B1|'); fs.writeSync(a, 'A2|'); fs.writeSync(b, 'B2|')
    fs.closeSync(a); fs.closeSync(b)
  })
  both(tt, 'O_APPEND across a block boundary', c, p => {
    fs.appendFileSync(p('f'), pattern(BLOCK + 77, 2))
    fs.appendFileSync(p('f'), pattern(BLOCK, 3))
  })
  both(tt, 'O_CREAT|O_APPEND on a new file', c, p => { fs.appendFileSync(p('new'), 'x'); fs.appendFileSync(p('new'), 'y') })
  for (const f of ['f', 'new']) { sameStat(tt, c, f); sameContent(tt, c, f) }
})

/** Files of the access-mode cases: name, mode, owner uid, owner gid. */
const ACCESS_FILES: Array<[string, number, number, number]> = [
  ['r000', 0o000, 0, 0], ['r200', 0o200, 0, 0], ['r400', 0o400, 0, 0], ['r600', 0o600, 0, 0],
  ['r602', 0o602, 0, 0], ['r604', 0o604, 0, 0], ['r606', 0o606, 0, 0],
  ['g640', 0o640, 0, NOBODY], ['g620', 0o620, 0, NOBODY],
  ['n000', 0o000, NOBODY, NOBODY], ['n200', 0o200, NOBODY, NOBODY], ['n400', 0o400, NOBODY, NOBODY], ['n600', 0o600, NOBODY, NOBODY]
]

/** For each file named in argv[2:]: open with each access mode, then read or write one byte where the mode allows. */
const PY_ACCESS = `
d = sys.argv[1]
def op(name, flags, io):
    fd = os.open(os.path.join(d, name), flags)
    try:
        return io(fd)
    finally:
        os.close(fd)
for f in sys.argv[2:]:
    r('O_RDONLY ' + f, lambda: op(f, os.O_RDONLY, lambda fd: os.read(fd, 3)))
    r('O_WRONLY ' + f, lambda: op(f, os.O_WRONLY, lambda fd: os.pwrite(fd, b'W', 0)))
    r('O_RDWR ' + f, lambda: op(f, os.O_RDWR, lambda fd: os.pread(fd, 3, 0)))
    r('read on an O_WRONLY fd ' + f, lambda: op(f, os.O_WRONLY, lambda fd: os.read(fd, 1)))
    r('write on an O_RDONLY fd ' + f, lambda: op(f, os.O_RDONLY, lambda fd: os.write(fd, b'x')))
    r('O_WRONLY|O_TRUNC ' + f, lambda: op(f, os.O_WRONLY | os.O_TRUNC, lambda fd: os.fstat(fd).st_size))
    r('size after ' + f, lambda: os.stat(os.path.join(d, f)).st_size)
done()
`

t.test('open: O_RDONLY, O_WRONLY, O_RDWR, O_TRUNC on 0000..0606 files, as root and as uid 65534', async tt => {
  const c = caseDirs(trees, 'open-access')
  const mk = (p: P): void => {
    for (const [name, mode, uid, gid] of ACCESS_FILES) {
      fs.writeFileSync(p(name), 'content'); fs.chmodSync(p(name), mode); fs.chownSync(p(name), uid, gid)
    }
  }
  setup(tt, c, mk)
  const names = ACCESS_FILES.map(f => f[0])
  seq(tt, 'as root', c, p => pySeq(PY_ACCESS, [p(), ...names]))
  // the root pass wrote and truncated every file: start again for the unprivileged pass
  setup(tt, c, mk)
  seq(tt, 'as uid 65534', c, p => pySeq(PY_ACCESS, [p(), ...names], { uid: NOBODY }))
  for (const f of names) { sameStat(tt, c, f); sameContent(tt, c, f) }
})

t.test('open: flags (O_CREAT|O_EXCL on symlinks, O_DIRECTORY, O_NOFOLLOW, O_PATH, trailing slashes, O_RDONLY|O_TRUNC)', async tt => {
  const c = caseDirs(trees, 'open-flags')
  pyBoth(tt, 'open flags', c, `
d = sys.argv[1]
P = lambda n: os.path.join(d, n)
def op(n, flags, mode=0o644):
    fd = os.open(P(n), flags, mode)
    os.close(fd)
    return True
with open(P('f'), 'w') as w: w.write('data')
os.mkdir(P('dir'))
os.symlink('f', P('lf'))
os.symlink('dir', P('ldir'))
os.symlink('nowhere', P('dangling'))
os.symlink('made', P('dangling2'))
r('O_CREAT|O_EXCL on a symlink to a file', lambda: op('lf', os.O_CREAT | os.O_EXCL | os.O_WRONLY))
r('O_CREAT|O_EXCL on a symlink to a dir', lambda: op('ldir', os.O_CREAT | os.O_EXCL | os.O_WRONLY))
r('O_CREAT|O_EXCL on a dangling symlink', lambda: op('dangling', os.O_CREAT | os.O_EXCL | os.O_WRONLY))
r('the dangling target was not created', lambda: os.path.lexists(P('nowhere')))
r('O_CREAT|O_EXCL on a directory', lambda: op('dir', os.O_CREAT | os.O_EXCL | os.O_WRONLY))
r('O_CREAT|O_WRONLY on a directory', lambda: op('dir', os.O_CREAT | os.O_WRONLY))
r('O_CREAT|O_RDONLY on a directory', lambda: op('dir', os.O_CREAT | os.O_RDONLY))
r('O_CREAT through a dangling symlink creates its target', lambda: op('dangling2', os.O_CREAT | os.O_WRONLY, 0o640))
r('the created target', lambda: [os.readlink(P('dangling2')), oct(os.stat(P('made')).st_mode)])
r('O_CREAT|O_NOFOLLOW on a dangling symlink', lambda: op('dangling', os.O_CREAT | os.O_NOFOLLOW | os.O_WRONLY))
r('O_DIRECTORY on a file', lambda: op('f', os.O_DIRECTORY | os.O_RDONLY))
r('O_DIRECTORY on a directory', lambda: op('dir', os.O_DIRECTORY | os.O_RDONLY))
r('O_DIRECTORY on a symlink to a directory', lambda: op('ldir', os.O_DIRECTORY | os.O_RDONLY))
r('O_DIRECTORY on a symlink to a file', lambda: op('lf', os.O_DIRECTORY | os.O_RDONLY))
r('O_DIRECTORY|O_NOFOLLOW on a symlink to a directory', lambda: op('ldir', os.O_DIRECTORY | os.O_NOFOLLOW | os.O_RDONLY))
r('O_DIRECTORY on a missing name', lambda: op('missing', os.O_DIRECTORY | os.O_RDONLY))
r('O_CREAT|O_DIRECTORY on a new name', lambda: op('newdir', os.O_CREAT | os.O_DIRECTORY | os.O_RDONLY))
r('O_NOFOLLOW on a symlink to a file', lambda: op('lf', os.O_NOFOLLOW | os.O_RDONLY))
r('O_NOFOLLOW on a symlink to a dir', lambda: op('ldir', os.O_NOFOLLOW | os.O_RDONLY))
r('O_NOFOLLOW on a dangling symlink', lambda: op('dangling', os.O_NOFOLLOW | os.O_RDONLY))
r('O_NOFOLLOW on a regular file', lambda: op('f', os.O_NOFOLLOW | os.O_RDONLY))
r('O_NOFOLLOW follows symlinks before the last component', lambda: op('ldir/new', os.O_CREAT | os.O_NOFOLLOW | os.O_WRONLY))
r('O_PATH|O_NOFOLLOW opens the symlink itself', lambda: op('lf', os.O_PATH | os.O_NOFOLLOW))
r('O_PATH on a 0000 file', lambda: (os.chmod(P('f'), 0), op('f', os.O_PATH), os.chmod(P('f'), 0o644))[1])
r('O_RDONLY on a directory', lambda: op('dir', os.O_RDONLY))
r('O_WRONLY on a directory', lambda: op('dir', os.O_WRONLY))
r('O_RDWR on a directory', lambda: op('dir', os.O_RDWR))
r('O_RDONLY|O_TRUNC on a directory', lambda: op('dir', os.O_RDONLY | os.O_TRUNC))
r('O_EXCL without O_CREAT on an existing file', lambda: op('f', os.O_EXCL | os.O_RDONLY))
r('trailing slash on a file', lambda: op('f/', os.O_RDONLY))
r('trailing slash on a directory', lambda: op('dir/', os.O_RDONLY))
r('O_CREAT with a trailing slash on a new name', lambda: op('new/', os.O_CREAT | os.O_WRONLY))
r('O_CREAT in a missing directory', lambda: op('nodir/x', os.O_CREAT | os.O_WRONLY))
r('O_CREAT below a file', lambda: op('f/x', os.O_CREAT | os.O_WRONLY))
r('O_RDONLY|O_TRUNC truncates (Linux)', lambda: (op('f', os.O_RDONLY | os.O_TRUNC), os.stat(P('f')).st_size)[1])
with open(P('g'), 'w') as w: w.write('0123456789')
r('O_WRONLY|O_APPEND|O_TRUNC then write', lambda: (op('g', os.O_WRONLY | os.O_APPEND | os.O_TRUNC), open(P('g'), 'a').write('ab'), open(P('g')).read())[2])
def fdpos():
    fd = os.open(P('g'), os.O_RDWR | os.O_APPEND)
    try:
        os.lseek(fd, 0, os.SEEK_SET)
        os.write(fd, b'XY')
        return [os.lseek(fd, 0, os.SEEK_CUR), os.pread(fd, 100, 0)]
    finally:
        os.close(fd)
r('O_APPEND write moves the position to the end', fdpos)
r('O_CREAT mode 0 by root, then O_RDWR', lambda: (op('m0', os.O_CREAT | os.O_WRONLY, 0), op('m0', os.O_RDWR))[1])
r('O_CREAT mode with setuid and sticky', lambda: (op('m7', os.O_CREAT | os.O_WRONLY, 0o5755), oct(os.stat(P('m7')).st_mode))[1])
r('O_NONBLOCK on a regular file', lambda: op('g', os.O_RDONLY | os.O_NONBLOCK))
done()
`)
  for (const f of ['f', 'g', 'm0', 'm7', 'made', 'dir/new', 'dir', 'lf', 'dangling', 'dangling2']) sameStat(tt, c, f)
  sameList(tt, c, '')
})

t.test('open: O_TMPFILE', async tt => {
  const c = caseDirs(trees, 'tmpfile')
  setup(tt, c, p => fs.writeFileSync(p('f'), 'f'))
  const script = `
d = sys.argv[1]
def tmp():
    fd = os.open(d, os.O_TMPFILE | os.O_RDWR, 0o600)
    try:
        os.write(fd, b'anonymous')
        linkat_follow('/proc/self/fd/%d' % fd, os.path.join(d, 'named'))
        return open(os.path.join(d, 'named')).read()
    finally:
        os.close(fd)
r('O_TMPFILE, write, linkat through /proc/self/fd', tmp)
r('O_TMPFILE on a file', lambda: os.close(os.open(os.path.join(d, 'f'), os.O_TMPFILE | os.O_RDWR, 0o600)))
done()
`
  const nat = pySeq(script, [c.nat()])
  if (nat[0]![1] === 'ok') tt.same(nat[0], ['O_TMPFILE, write, linkat through /proc/self/fd', 'ok', 'anonymous'], 'native: O_TMPFILE works')
  else tt.comment(`the native filesystem has no O_TMPFILE either: ${JSON.stringify(nat[0])}`)
  // LIMITATION (libfuse 2.9 high-level API, no tmpfile operation): the
  // kernel asks FUSE_TMPFILE, libfuse2 answers ENOSYS and the kernel turns
  // that into EOPNOTSUPP, the documented answer of a filesystem without
  // O_TMPFILE; callers (glibc tmpfile(), git, editors) fall back to a named
  // temporary file.
  const mnt = pySeq(script, [c.mnt()])
  limitation(tt, mnt[0], ['O_TMPFILE, write, linkat through /proc/self/fd', 'ENOTSUP'], 'O_TMPFILE fails with EOPNOTSUPP (= ENOTSUP, errno 95; libfuse 2 has no tmpfile operation)')
  record(tt.same(mnt[1], nat[1], 'O_TMPFILE on a file'))
  record(tt.same(fs.readdirSync(c.mnt()), ['f'], 'no name is left behind by the failed O_TMPFILE'), 'limitation')
})

// ---- data -----------------------------------------------------------------

t.test('read and write at offsets across 64 KiB block boundaries', async tt => {
  const c = caseDirs(trees, 'offsets')
  const writes: Array<[number, number]> = [
    [0, 10], [BLOCK - 5, 10], [2 * BLOCK - 1, 1], [2 * BLOCK, 1], [3 * BLOCK - 3, 2 * BLOCK + 7],
    [7 * BLOCK + 100, 300 * KiB], [BLOCK / 2, BLOCK], [5 * BLOCK, 0], [17, 3 * BLOCK]
  ]
  both(tt, 'writes', c, p => {
    fs.writeFileSync(p('f'), '')
    return writes.map(([pos, len], i) => writeAt(p('f'), pattern(len, 10 + i), pos))
  })
  sameStat(tt, c, 'f'); sameContent(tt, c, 'f')
  const reads: Array<[number, number]> = [[0, 1], [BLOCK - 1, 2], [BLOCK - 100, 3 * BLOCK], [2 * BLOCK, BLOCK], [10 * BLOCK, 100], [12 * BLOCK, 10], [0, 12 * BLOCK]]
  both(tt, 'preads', c, p => reads.map(([pos, len]) => preadFile(p('f'), pos, len).toString('base64')))
  both(tt, 'read and write on one fd, with a position and without', c, p => {
    const fd = fs.openSync(p('f'), 'r+')
    const b = Buffer.alloc(BLOCK + 10)
    const n1 = fs.readSync(fd, b, 0, b.length, null)
    fs.writeSync(fd, pattern(BLOCK, 99))
    const n2 = fs.readSync(fd, b, 0, b.length, BLOCK * 2 - 5)
    fs.closeSync(fd)
    return [n1, n2, b.toString('base64')]
  })
  sameContent(tt, c, 'f')
})

t.test('sparse file: write at 10 MiB', async tt => {
  const c = caseDirs(trees, 'sparse')
  both(tt, 'write 1 byte at 10 MiB', c, p => { fs.writeFileSync(p('f'), 'head'); return writeAt(p('f'), 'Z', 10 * MiB) })
  sameStat(tt, c, 'f')
  both(tt, 'holes read zeros', c, p => [
    preadFile(p('f'), 4, 4096).equals(Buffer.alloc(4096)),
    preadFile(p('f'), 5 * MiB - 3, BLOCK + 6).equals(Buffer.alloc(BLOCK + 6)),
    preadFile(p('f'), 10 * MiB - 2, 10).toString('hex')
  ])
  sameContent(tt, c, 'f')
  // allocation: the mount must not report the holes as allocated blocks
  const blocks = Number(fs.statSync(c.mnt('f')).blocks)
  property(tt, blocks <= 2 * (BLOCK / 512), `holes are not allocated: the mount reports ${blocks} 512-byte blocks for 2 written bytes`)
})

t.test('file over 4 GiB (sparse, 1 byte at 5 GiB)', async tt => {
  const c = caseDirs(trees, 'large')
  both(tt, 'write 1 byte at 5 GiB', c, p => { fs.writeFileSync(p('f'), ''); return writeAt(p('f'), 'L', 5 * GiB) })
  sameStat(tt, c, 'f')
  both(tt, 'read it back and around 4 GiB', c, p => [
    preadFile(p('f'), 5 * GiB, 10).toString('hex'),
    preadFile(p('f'), 5 * GiB - 4, 10).toString('hex'),
    preadFile(p('f'), 4 * GiB - 2, 4).toString('hex')
  ])
  both(tt, 'write across the 4 GiB boundary', c, p => { writeAt(p('f'), pattern(BLOCK * 2, 4), 4 * GiB - BLOCK); return preadFile(p('f'), 4 * GiB - BLOCK - 1, 2 * BLOCK + 2).toString('base64') })
  both(tt, 'truncate to 4 GiB + 1', c, p => { fs.truncateSync(p('f'), 4 * GiB + 1); return preadFile(p('f'), 4 * GiB - 1, 10).toString('hex') })
  sameStat(tt, c, 'f')
})

t.test('SEEK_DATA and SEEK_HOLE', async tt => {
  const c = caseDirs(trees, 'seek')
  // one file with data at 0, 1 MiB and its last byte (3 MiB - 1), holes between;
  // one dense file; one file that is all hole; one empty file
  const script = `
p = sys.argv[1]
MiB = 1 << 20
def mk(name, fn):
    fd = os.open(os.path.join(p, name), os.O_RDWR | os.O_CREAT, 0o644)
    fn(fd)
    os.close(fd)
mk('sparse', lambda fd: (os.pwrite(fd, b'head', 0), os.pwrite(fd, b'x' * 65536, MiB), os.pwrite(fd, b'T', 3 * MiB - 1)))
mk('dense', lambda fd: os.write(fd, b'd' * 100000))
mk('hole', lambda fd: os.ftruncate(fd, MiB))
mk('empty', lambda fd: None)
res = {}
for name in ['sparse', 'dense', 'hole', 'empty']:
    fd = os.open(os.path.join(p, name), os.O_RDONLY)
    size = os.fstat(fd).st_size
    offs = sorted(set(o for o in [0, 100, 4096, MiB - 1, MiB, MiB + 65536, 2 * MiB, size - 1, size, size + 1, -1] if o >= -1))
    seeks = []
    ok = True
    for o in offs:
        for wh, wn in [(os.SEEK_DATA, 'SEEK_DATA'), (os.SEEK_HOLE, 'SEEK_HOLE')]:
            try:
                v = os.lseek(fd, o, wh)
                # what POSIX requires: data at or after o, holes read zeros,
                # a hole at or after o and at most at the end of the file
                if wh == os.SEEK_DATA:
                    ok = ok and o <= v < size and os.pread(fd, v - o, o) == bytes(v - o)
                else:
                    nxt = size
                    if v < size:
                        try: nxt = os.lseek(fd, v, os.SEEK_DATA)
                        except OSError: nxt = size
                    ok = ok and o <= v <= size and os.pread(fd, nxt - v, v) == bytes(nxt - v)
                seeks.append([wn, o, v])
            except OSError as e:
                # ENXIO only at or beyond the end, or for SEEK_DATA when only holes follow
                if e.errno == errno.ENXIO:
                    ok = ok and (o >= size or o < 0 or (wh == os.SEEK_DATA and os.pread(fd, size - o, o) == bytes(size - o)))
                seeks.append([wn, o, errno.errorcode[e.errno]])
    os.close(fd)
    res[name] = {'size': size, 'seeks': seeks, 'consistent': ok}
print(json.dumps(res))
`
  const nat = pyJson('import os, sys, json, errno\n' + script, c.nat())
  const mnt = pyJson('import os, sys, json, errno\n' + script, c.mnt())
  for (const name of ['sparse', 'dense', 'hole', 'empty']) {
    const n = nat[name]; const x = mnt[name]
    record(tt.equal(x.size, n.size, `${name}: size`))
    property(tt, x.consistent === true, `${name}: every SEEK_DATA/SEEK_HOLE answer of the mount is consistent with the bytes (POSIX)`, x.seeks)
    tt.ok(n.consistent, `${name}: the native answers are consistent too (the checker is sound)`)
    for (let i = 0; i < n.seeks.length; i++) {
      const [wn, o, v] = n.seeks[i]
      const got = x.seeks[i]
      if (o < 0 || o >= n.size || name === 'dense') {
        // past the end, before the start, and on a file without holes: the same answer as native
        record(tt.same(got, n.seeks[i], `${name}: ${wn} at ${o}`))
      } else if (LOW_LEVEL) {
        // LIMITATION (the store's granularity): the low-level layer answers
        // FUSE_LSEEK from the file's 64 KiB blocks, so data and holes start
        // and end on 64 KiB boundaries (native ext4: 4 KiB). POSIX allows it.
        limitation(tt, got, [wn, o, seekIn(BLOCK_RANGES[name], n.size, o, wn)], `${name}: ${wn} at ${o} at 64 KiB granularity (native ${JSON.stringify(v)})`)
      } else {
        // LIMITATION (libfuse 2.9 has no lseek operation; the kernel's
        // fallback for a FUSE filesystem without FUSE_LSEEK is
        // generic_file_llseek): the whole file is reported as data, with
        // only the implicit hole at the end: SEEK_DATA(o) = o and
        // SEEK_HOLE(o) = size for 0 <= o < size. POSIX allows it; the holes
        // still read as zeros and take no space in the store. Native here
        // answers ${JSON.stringify(v)}.
        limitation(tt, got, [wn, o, wn === 'SEEK_DATA' ? o : n.size], `${name}: ${wn} at ${o} (native ${JSON.stringify(v)})`)
      }
    }
  }
  sameContent(tt, c, 'sparse')
})

t.test('mmap: coherence with read/write, msync, ftruncate under a mapping, SIGBUS past the end, access modes', async tt => {
  const c = caseDirs(trees, 'mmap2')
  pyBoth(tt, 'mmap', c, `
import mmap
d = sys.argv[1]
p = os.path.join(d, 'f')
PG = mmap.PAGESIZE
fd = os.open(p, os.O_RDWR | os.O_CREAT, 0o644)
os.ftruncate(fd, 2 * PG)
mm = mmap.mmap(fd, 2 * PG)
mm[0:5] = b'mmap1'
r('read(2) sees a store through the mapping before msync', lambda: os.pread(fd, 5, 0))
os.pwrite(fd, b'pwrite', 100)
r('the mapping sees a pwrite', lambda: mm[100:106])
r('msync MS_SYNC of the whole mapping', lambda: mm.flush())
r('msync of the first page', lambda: mm.flush(0, PG))
r('another fd reads the stored bytes', lambda: open(p, 'rb').read(8))
os.ftruncate(fd, PG)
r('fstat size after ftruncate shrinks under the mapping', lambda: os.fstat(fd).st_size)
r('the first page is still mapped', lambda: mm[0:5])
os.ftruncate(fd, 2 * PG)
r('the cut page reads zeros after the file grows again', lambda: mm[PG:PG + 16])
mm[PG:PG + 4] = b'tail'
mm.flush()
r('a store to the grown page reaches the file', lambda: os.pread(fd, 4, PG))
os.ftruncate(fd, 3 * PG)
r('growing past the mapping', lambda: [os.fstat(fd).st_size, mm.size(), len(mm)])
mm.close()
priv = mmap.mmap(fd, PG, flags=mmap.MAP_PRIVATE)
priv[0:3] = b'PRV'
r('a MAP_PRIVATE store stays private', lambda: [priv[0:5], os.pread(fd, 5, 0)])
priv.close()
fdr = os.open(p, os.O_RDONLY)
r('MAP_SHARED with PROT_WRITE on an O_RDONLY fd', lambda: mmap.mmap(fdr, PG, prot=mmap.PROT_READ | mmap.PROT_WRITE))
r('MAP_PRIVATE with PROT_WRITE on an O_RDONLY fd', lambda: mmap.mmap(fdr, PG, flags=mmap.MAP_PRIVATE, prot=mmap.PROT_READ | mmap.PROT_WRITE).size())
r('MAP_SHARED PROT_READ on an O_RDONLY fd', lambda: mmap.mmap(fdr, PG, prot=mmap.PROT_READ)[0:5])
fdw = os.open(p, os.O_WRONLY)
r('PROT_READ on an O_WRONLY fd', lambda: mmap.mmap(fdw, PG, prot=mmap.PROT_READ))
big = mmap.mmap(fd, 0)
big[3 * PG - 1] = 0x21
r('msync of a range with MS_ASYNC semantics (flush with offset)', lambda: big.flush(2 * PG, PG))
big.close()
r('after close of every mapping: the file', lambda: [os.fstat(fd).st_size, os.pread(fd, 5, 0), os.pread(fd, 4, PG), os.pread(fd, 1, 3 * PG - 1)])
os.close(fd); os.close(fdr); os.close(fdw)
done()
`)
  sameStat(tt, c, 'f'); sameContent(tt, c, 'f')
  // a load past the end of the file through a mapping is SIGBUS (a child that dies of it)
  const sigbus = (p: string): unknown => {
    const r = spawnSync(PYTHON, ['-c', `
import mmap, os, sys
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o644)
os.ftruncate(fd, mmap.PAGESIZE)
mm = mmap.mmap(fd, 2 * mmap.PAGESIZE)
print(mm[0], flush=True)
print(mm[mmap.PAGESIZE], flush=True)
`, p], { encoding: 'utf8', timeout: 30000 })
    return [r.status, r.signal, r.stdout]
  }
  record(tt.same(sigbus(c.mnt('bus')), sigbus(c.nat('bus')), 'a load from a mapped page past the end of the file is SIGBUS'))
})

t.test('files over 4 GiB: write at 4 GiB + 3, append, SEEK_END, ftruncate (sparse)', async tt => {
  const c = caseDirs(trees, 'large2')
  pyBoth(tt, 'over 4 GiB', c, `
d = sys.argv[1]
p = os.path.join(d, 'f')
G = 1 << 30
fd = os.open(p, os.O_RDWR | os.O_CREAT, 0o644)
r('pwrite at 4 GiB + 3', lambda: os.pwrite(fd, b'ABC', 4 * G + 3))
r('size', lambda: os.fstat(fd).st_size)
r('pread across 4 GiB', lambda: os.pread(fd, 8, 4 * G))
r('pread at 4 GiB - 2 (hole)', lambda: os.pread(fd, 4, 4 * G - 2))
r('pread at the end', lambda: os.pread(fd, 10, 4 * G + 5))
r('lseek SEEK_END', lambda: os.lseek(fd, 0, os.SEEK_END))
r('write at the SEEK_END position', lambda: (os.write(fd, b'end'), os.pread(fd, 6, 4 * G + 3))[1])
fda = os.open(p, os.O_WRONLY | os.O_APPEND)
r('O_APPEND past 4 GiB', lambda: (os.write(fda, b'+app'), os.lseek(fda, 0, os.SEEK_CUR), os.fstat(fd).st_size)[1:])
os.close(fda)
r('pwrite a block across 8 GiB', lambda: (os.pwrite(fd, bytes(range(256)) * 512, 8 * G - 65536), os.pread(fd, 4, 8 * G - 2))[1])
r('ftruncate to 4 GiB - 1', lambda: (os.ftruncate(fd, 4 * G - 1), os.fstat(fd).st_size, os.pread(fd, 10, 4 * G - 3))[1:])
r('ftruncate to 2^40 (1 TiB)', lambda: (os.ftruncate(fd, 1 << 40), os.fstat(fd).st_size, os.pread(fd, 4, (1 << 40) - 2))[1:])
r('pwrite at 2^40 - 1', lambda: (os.pwrite(fd, b'Z', (1 << 40) - 1), os.pread(fd, 2, (1 << 40) - 1))[1])
os.close(fd)
r('stat size from a new lookup', lambda: os.stat(p).st_size)
done()
`)
  sameStat(tt, c, 'f')
})

t.test('truncate shrink and grow', async tt => {
  const c = caseDirs(trees, 'truncate')
  const data = pattern(200000, 5)
  both(tt, 'write 200000 bytes', c, p => fs.writeFileSync(p('f'), data))
  for (const size of [70000, 300000, BLOCK, BLOCK + 1, 1, 0, 2 * BLOCK + 3]) {
    both(tt, `truncate to ${size}`, c, p => fs.truncateSync(p('f'), size))
    sameStat(tt, c, 'f'); sameContent(tt, c, 'f')
  }
  both(tt, 'shrink then write past the end leaves zeros in between', c, p => {
    fs.writeFileSync(p('g'), data)
    fs.truncateSync(p('g'), 1000)
    writeAt(p('g'), 'E', 150000)
  })
  sameStat(tt, c, 'g'); sameContent(tt, c, 'g')
  both(tt, 'truncate a directory', c, p => { fs.mkdirSync(p('d')); fs.truncateSync(p('d'), 0) })
  both(tt, 'truncate to a negative size', c, p => fs.truncateSync(p('g'), -1))
  both(tt, 'truncate a missing file', c, p => fs.truncateSync(p('missing'), 0))
})

t.test('ftruncate on an open fd', async tt => {
  const c = caseDirs(trees, 'ftruncate')
  both(tt, 'write, ftruncate shrink, grow, write, fstat', c, p => {
    const fd = fs.openSync(p('f'), 'w+')
    fs.writeSync(fd, pattern(3 * BLOCK, 6))
    fs.ftruncateSync(fd, 10)
    const s1 = fs.fstatSync(fd).size
    fs.ftruncateSync(fd, BLOCK + 20)
    const s2 = fs.fstatSync(fd).size
    fs.writeSync(fd, Buffer.from('tail'), 0, 4, BLOCK + 16)
    const b = Buffer.alloc(BLOCK + 40)
    const n = fs.readSync(fd, b, 0, b.length, 0)
    fs.closeSync(fd)
    return [s1, s2, n, b.subarray(0, n).toString('base64')]
  })
  both(tt, 'ftruncate on a read-only fd', c, p => {
    const fd = fs.openSync(p('f'), 'r')
    try { fs.ftruncateSync(fd, 0) } finally { fs.closeSync(fd) }
  })
  sameStat(tt, c, 'f'); sameContent(tt, c, 'f')
})

t.test('unlink of an open file', async tt => {
  const c = caseDirs(trees, 'unlink-open')
  const fds: Record<string, number> = {}
  both(tt, 'open, write, unlink', c, p => {
    const fd = fs.openSync(p('f'), 'w+')
    fds[p('f')] = fd
    fs.writeSync(fd, pattern(BLOCK + 3, 7))
    fs.unlinkSync(p('f'))
  })
  const names = sameList(tt, c, '')
  property(tt, names.filter(n => n.startsWith('.fuse_hidden')).length === 0, 'no .fuse_hidden* entry in readdir', names)
  both(tt, 'stat of the unlinked name', c, p => statFields(p('f')))
  both(tt, 'the fd keeps reading and writing', c, p => {
    const fd = fds[p('f')]!
    const b = Buffer.alloc(BLOCK + 20)
    const n1 = fs.readSync(fd, b, 0, b.length, 0)
    fs.writeSync(fd, Buffer.from('more'), 0, 4, BLOCK)
    fs.writeSync(fd, Buffer.from('end'), 0, 3, 2 * BLOCK)
    const n2 = fs.readSync(fd, b, 0, b.length, BLOCK - 2)
    return [n1, n2, b.subarray(0, n2).toString('base64')]
  })
  both(tt, 'ftruncate on the unlinked fd', c, p => { fs.ftruncateSync(fds[p('f')]!, 5); return fs.readSync(fds[p('f')]!, Buffer.alloc(10), 0, 10, 0) })
  // LIMITATION (fuse-native/libfuse2, cannot be fixed in the daemon): fstat
  // of an open-unlinked file fails with ESTALE through the mount; natively
  // it gives nlink 0 and the current size. The kernel dropped the inode's
  // cached attributes at unlink, and fstat(2) sends GETATTR without the
  // file handle (the kernel sets FUSE_GETATTR_FH only for a few internal
  // callers), so libfuse2's high-level fuse_lib_getattr needs a path, and
  // under hard_remove the removed node has none: it answers ENOENT itself
  // (the binding turns that into ESTALE, fuse-native.c patch 9), the daemon
  // never sees the request. Reads, writes and ftruncate carry
  // the handle and work (asserted above). See research/fuse-native.md §4
  // "Unlink of an open file".
  const fst = {
    nat: outcome(() => { const s = fs.fstatSync(fds[c.nat('f')]!); return { nlink: s.nlink, size: s.size } }),
    mnt: outcome(() => { const s = fs.fstatSync(fds[c.mnt('f')]!); return { nlink: s.nlink, size: s.size } })
  }
  tt.same(fst.nat, { ok: { nlink: 0, size: 5 } }, 'native fstat of an unlinked open file: nlink 0')
  // Node names no code for ESTALE (116): its message is what outcome() keeps
  if (LOW_LEVEL) record(tt.same(fst.mnt, fst.nat, 'fstat of an unlinked open file: nlink 0 and its size (the low-level layer knows the inode by node id)'))
  else limitation(tt, fst.mnt, { err: 'Unknown system error -116' }, 'fstat of an unlinked open file fails with ESTALE through the mount')
  both(tt, 'a new file of the same name is independent', c, p => { fs.writeFileSync(p('f'), 'new'); return fs.readSync(fds[p('f')]!, Buffer.alloc(10), 0, 10, 0) })
  sameContent(tt, c, 'f')
  for (const k of Object.keys(fds)) fs.closeSync(fds[k]!)
  both(tt, 'after the last close', c, p => fs.readdirSync(p('')).sort())
})

// ---- rename -----------------------------------------------------------------

t.test('rename', async tt => {
  const c = caseDirs(trees, 'rename')
  setup(tt, c, p => {
    fs.writeFileSync(p('a'), 'AAA'); fs.writeFileSync(p('b'), 'BBBBBB')
    fs.mkdirSync(p('d1')); fs.writeFileSync(p('d1/in'), 'inside'); fs.mkdirSync(p('d1/sub'))
    fs.mkdirSync(p('empty')); fs.mkdirSync(p('full')); fs.writeFileSync(p('full/x'), 'x')
    fs.mkdirSync(p('d2'))
  })
  both(tt, 'file over file: target replaced by the source inode', c, p => {
    const i = ino(p('a'))
    fs.renameSync(p('a'), p('b'))
    return [ino(p('b')) === i, fs.existsSync(p('a')), fs.readFileSync(p('b'), 'utf8')]
  })
  sameStat(tt, c, 'b')
  both(tt, 'dir over empty dir', c, p => {
    const i = ino(p('d1'))
    fs.renameSync(p('d1'), p('empty'))
    return [ino(p('empty')) === i, fs.existsSync(p('d1')), fs.readdirSync(p('empty')).sort()]
  })
  sameStat(tt, c, ''); sameStat(tt, c, 'empty')
  both(tt, 'dir over non-empty dir', c, p => fs.renameSync(p('d2'), p('full')))
  both(tt, 'file over dir', c, p => fs.renameSync(p('b'), p('full')))
  both(tt, 'dir over file', c, p => fs.renameSync(p('d2'), p('b')))
  both(tt, 'file onto itself', c, p => { fs.renameSync(p('b'), p('b')); return fs.readFileSync(p('b'), 'utf8') })
  both(tt, 'dir onto itself', c, p => { fs.renameSync(p('full'), p('full')); return fs.readdirSync(p('full')) })
  both(tt, 'hard links of the same inode: nothing happens, both names stay', c, p => {
    fs.linkSync(p('b'), p('b2'))
    fs.renameSync(p('b'), p('b2'))
    return [fs.existsSync(p('b')), fs.existsSync(p('b2')), ino(p('b')) === ino(p('b2'))]
  })
  sameStat(tt, c, 'b'); sameStat(tt, c, 'b2')
  both(tt, 'dir into its own subdir', c, p => fs.renameSync(p('empty'), p('empty/sub/x')))
  both(tt, 'dir onto its own subdir', c, p => fs.renameSync(p('empty'), p('empty/sub')))
  both(tt, 'dir onto its parent', c, p => fs.renameSync(p('empty/sub'), p('empty')))
  both(tt, 'missing source', c, p => fs.renameSync(p('nope'), p('x')))
  both(tt, 'into a missing dir', c, p => fs.renameSync(p('b'), p('nope/x')))
  both(tt, 'dir into another dir: nlink of both parents', c, p => {
    fs.renameSync(p('empty/sub'), p('d2/sub'))
    return [fs.statSync(p('empty')).nlink, fs.statSync(p('d2')).nlink, fs.readdirSync(p('d2/sub'))]
  })
  both(tt, 'file into another dir over an existing name', c, p => {
    fs.writeFileSync(p('d2/t'), 'old target')
    fs.renameSync(p('b2'), p('d2/t'))
    return [fs.readFileSync(p('d2/t'), 'utf8'), fs.statSync(p('b')).nlink]
  })
  both(tt, 'renamed open file keeps its fd', c, p => {
    const fd = fs.openSync(p('d2/t'), 'r+')
    fs.renameSync(p('d2/t'), p('moved'))
    fs.writeSync(fd, Buffer.from('W'), 0, 1, 0)
    fs.closeSync(fd)
    return fs.readFileSync(p('moved'), 'utf8')
  })
  for (const f of ['', 'b', 'd2', 'd2/sub', 'empty', 'full', 'moved']) sameStat(tt, c, f)
  sameList(tt, c, ''); sameList(tt, c, 'd2')
})

t.test('rename: more cases (symlinks, ".", trailing slashes, hard links across directories, nlink of parents)', async tt => {
  const c = caseDirs(trees, 'rename2')
  pyBoth(tt, 'rename', c, `
d = sys.argv[1]
P = lambda n: os.path.join(d, n)
def mk(n, data='x'):
    with open(P(n), 'w') as w: w.write(data)
mk('a', 'AAA'); mk('b', 'BBB')
for n in ['d1', 'd1/sub', 'd2', 'd3', 'e1', 'e2', 'full', 'full/in']: os.mkdir(P(n))
os.symlink('a', P('l'))
os.symlink('d1', P('ldir'))
os.link(P('a'), P('d2/ha'))
nl = lambda n: os.stat(P(n)).st_nlink
r('rename a symlink moves the link, not its target', lambda: (os.rename(P('l'), P('l2')), os.readlink(P('l2')), os.path.lexists(P('l')), os.path.exists(P('a')))[1:])
r('rename a symlink to a dir over an empty dir', lambda: os.rename(P('ldir'), P('e1')))
r('rename a dir over a symlink', lambda: os.rename(P('e1'), P('ldir')))
r('rename a file over a symlink replaces the symlink', lambda: (os.rename(P('b'), P('l2')), os.path.islink(P('l2')), open(P('l2')).read())[1:])
r('rename hard links of one inode in different directories: nothing happens', lambda: (os.rename(P('a'), P('d2/ha')), os.path.exists(P('a')), os.path.exists(P('d2/ha')), nl('a'))[1:])
r('rename "." of a directory', lambda: os.rename(P('d1/.'), P('x')))
r('rename ".." of a directory', lambda: os.rename(P('d1/..'), P('x')))
r('rename onto "."', lambda: os.rename(P('d3'), P('d1/.')))
r('rename a file with a trailing slash', lambda: os.rename(P('a/'), P('a2')))
r('rename a file onto a new name with a trailing slash', lambda: os.rename(P('a'), P('a2/')))
r('rename a dir with trailing slashes on both names', lambda: (os.rename(P('d3/'), P('d4/')), os.path.isdir(P('d4')))[1])
r('rename a dir below a file', lambda: os.rename(P('d4'), P('a/x')))
r('rename a missing source onto itself', lambda: os.rename(P('nope'), P('nope')))
r('rename a dir over an empty dir in another directory: nlink of parents', lambda: (os.mkdir(P('d2/empty')), os.rename(P('d1/sub'), P('d2/empty')), nl('d1'), nl('d2'), nl('d2/empty'))[2:])
r('rename a dir over a non-empty dir in another directory', lambda: os.rename(P('d4'), P('full')))
r('rename a dir over a file', lambda: os.rename(P('d4'), P('a')))
r('rename a file over a dir', lambda: os.rename(P('a'), P('d4')))
r('rename a dir over its own parent', lambda: os.rename(P('d2/empty'), P('d2')))
r('rename a dir to a new name in its own subdir', lambda: os.rename(P('d2'), P('d2/empty/x')))
r('rename the source of a hard link over a file: the other name stays', lambda: (mk('t', 'T'), os.rename(P('d2/ha'), P('t')), open(P('t')).read(), nl('a'), nl('t'))[2:])
r('rename a file onto itself through a symlinked dir', lambda: (os.symlink('d2', P('ld2')), mk('d2/s', 'S'), os.rename(P('ld2/s'), P('d2/s')), os.listdir(P('d2')))[3])
r('rename a fifo', lambda: (os.mkfifo(P('ff')), os.rename(P('ff'), P('d4/ff')), oct(os.lstat(P('d4/ff')).st_mode))[2])
r('rename an open directory, then list it through the new name', lambda: (os.mkdir(P('od')), mk('od/f'), os.open(P('od'), os.O_RDONLY), os.rename(P('od'), P('od2')), sorted(os.listdir(P('od2'))))[4])
done()
`)
  for (const f of ['', 'a', 't', 'l2', 'd1', 'd2', 'd2/empty', 'd4', 'd4/ff', 'full', 'e1', 'ldir', 'od2']) sameStat(tt, c, f)
  for (const d of ['', 'd1', 'd2', 'd4']) sameList(tt, c, d)
})

t.test('link and rename across the mount boundary: EXDEV', async tt => {
  // the native reference crosses from the native tree to another native
  // filesystem (/dev/shm or /run, tmpfs); the mount crosses to the native tree
  const natDev = fs.statSync(trees.nat).dev
  const base = ['/dev/shm', '/run', '/dev'].find(d => { try { return fs.statSync(d).dev !== natDev && (fs.accessSync(d, fs.constants.W_OK), true) } catch { return false } })
  if (!base) { tt.comment('no writable second native filesystem (/dev/shm, /run, /dev) for the EXDEV reference: skipped'); return }
  const other = fs.mkdtempSync(path.join(base, 'rewindfs-conformance-'))
  tt.teardown(() => fs.rmSync(other, { recursive: true, force: true }))
  const c = caseDirs(trees, 'exdev')
  const nativeAway = path.join(m.root, 'native-away')
  fs.mkdirSync(nativeAway)
  const away = { nat: (r = '') => path.join(other, r), mnt: (r = '') => path.join(nativeAway, r) }
  setup(tt, c, p => { fs.writeFileSync(p('f'), 'here'); fs.mkdirSync(p('d')) })
  fs.writeFileSync(away.nat('there'), 'there'); fs.writeFileSync(away.mnt('there'), 'there')
  const pair = { nat: c.nat, mnt: c.mnt }
  const cross = (label: string, fn: (p: P, q: P) => unknown): void => {
    const a = outcome(() => fn(pair.nat, away.nat))
    const b = outcome(() => fn(pair.mnt, away.mnt))
    record(tt.same(b, a, label))
  }
  cross('link out of the tree', (p, q) => fs.linkSync(p('f'), q('out')))
  cross('link into the tree', (p, q) => fs.linkSync(q('there'), p('in')))
  cross('rename a file out of the tree', (p, q) => fs.renameSync(p('f'), q('out')))
  cross('rename a file into the tree', (p, q) => fs.renameSync(q('there'), p('in')))
  cross('rename a directory out of the tree', (p, q) => fs.renameSync(p('d'), q('dout')))
  cross('symlink across works (it is only a name)', (p, q) => { fs.symlinkSync(q('there'), p('sl')); return fs.readFileSync(p('sl'), 'utf8') })
  cross('copy_file_range across (copies the bytes)', (p, q) => { fs.copyFileSync(q('there'), p('copied')); return fs.readFileSync(p('copied'), 'utf8') })
  sameList(tt, c, '')
})


// ---- links ----------------------------------------------------------------

t.test('hard links', async tt => {
  const c = caseDirs(trees, 'hardlink')
  both(tt, 'link', c, p => { fs.writeFileSync(p('a'), 'shared'); fs.mkdirSync(p('d')); fs.linkSync(p('a'), p('d/b')) })
  sameStat(tt, c, 'a'); sameStat(tt, c, 'd/b')
  both(tt, 'same ino on both names', c, p => ino(p('a')) === ino(p('d/b')))
  both(tt, 'content shared: write through one name, read through the other', c, p => {
    writeAt(p('d/b'), 'SH', 0)
    fs.appendFileSync(p('a'), '+more')
    return [fs.readFileSync(p('a'), 'utf8'), fs.readFileSync(p('d/b'), 'utf8')]
  })
  sameStat(tt, c, 'a'); sameStat(tt, c, 'd/b')
  both(tt, 'a third name', c, p => { fs.linkSync(p('d/b'), p('c')); return [fs.statSync(p('a')).nlink, fs.statSync(p('d/b')).nlink, fs.statSync(p('c')).nlink] })
  both(tt, 'chmod through one name shows on the others', c, p => { fs.chmodSync(p('c'), 0o600); return [fs.statSync(p('a')).mode, fs.statSync(p('d/b')).mode] })
  both(tt, 'unlink one name', c, p => { fs.unlinkSync(p('a')); return [fs.statSync(p('d/b')).nlink, fs.statSync(p('c')).nlink, fs.readFileSync(p('c'), 'utf8')] })
  both(tt, 'O_TRUNC write through one name: size and mtime through the other at once', c, p => {
    fs.writeFileSync(p('c'), 'truncated')
    const x = runSync('python3', ['-c', 'import os,sys\nos.utime(sys.argv[1], ns=(1000000000123, 2000000000456))', p('c')])
    if (x.code !== 0) throw new Error(x.stderr)
    return [statFields(p('d/b'), { mtime: true }), fs.readFileSync(p('d/b'), 'utf8')]
  })
  both(tt, 'rename another file over one name: the other name shows nlink 1', c, p => {
    fs.writeFileSync(p('other'), 'other')
    fs.renameSync(p('other'), p('c'))
    return [statFields(p('d/b')), fs.readFileSync(p('c'), 'utf8')]
  })
  both(tt, 'link again, then write without closing: the other name after close', c, p => {
    fs.linkSync(p('d/b'), p('e'))
    const fd = fs.openSync(p('e'), 'a')
    fs.writeSync(fd, '+appended')
    fs.closeSync(fd)
    return [statFields(p('d/b')), statFields(p('e'))]
  })
  both(tt, 'link over an existing name', c, p => fs.linkSync(p('c'), p('d/b')))
  both(tt, 'link to a directory', c, p => fs.linkSync(p('d'), p('dlink')))
  both(tt, 'link of a missing file', c, p => fs.linkSync(p('nope'), p('x')))
  both(tt, 'link to a symlink (the symlink itself)', c, p => {
    fs.symlinkSync('c', p('s'))
    fs.linkSync(p('s'), p('s2'))
    return [fs.lstatSync(p('s2')).isSymbolicLink(), fs.readlinkSync(p('s2')), fs.lstatSync(p('s')).nlink]
  })
  for (const f of ['c', 'd/b', 'e', 's', 's2', 'd', '']) sameStat(tt, c, f)
})

t.test('link: more cases', async tt => {
  const c = caseDirs(trees, 'link2')
  pyBoth(tt, 'link', c, `
d = sys.argv[1]
P = lambda n: os.path.join(d, n)
with open(P('f'), 'w') as w: w.write('linked')
os.mkdir(P('dir'))
os.symlink('f', P('sl'))
os.mkfifo(P('ff'))
r('link a file to its own name', lambda: os.link(P('f'), P('f')))
r('link with a trailing slash on the source', lambda: os.link(P('f/'), P('g')))
r('link with a trailing slash on the new name', lambda: os.link(P('f'), P('g/')))
r('link into a missing dir', lambda: os.link(P('f'), P('nodir/g')))
r('link below a file', lambda: os.link(P('f'), P('f/g')))
r('link does not follow a symlink source (linkat without AT_SYMLINK_FOLLOW)', lambda: (os.link(P('sl'), P('sl2'), follow_symlinks=False), os.path.islink(P('sl2')))[1])
r('linkat AT_SYMLINK_FOLLOW links the target', lambda: (linkat_follow(P('sl'), P('f2')), os.path.islink(P('f2')), os.stat(P('f')).st_nlink)[1:])
r('link a fifo', lambda: (os.link(P('ff'), P('ff2')), os.lstat(P('ff')).st_nlink)[1])
r('link to "."', lambda: os.link(P('dir/.'), P('dot')))
def unlinked_open():
    fd = os.open(P('gone'), os.O_CREAT | os.O_RDWR, 0o644)
    os.unlink(P('gone'))
    try:
        return linkat_follow('/proc/self/fd/%d' % fd, P('revived'))
    finally:
        os.close(fd)
r('link an open-unlinked file through /proc/self/fd', unlinked_open)
r('nlink after four names', lambda: (os.link(P('f'), P('dir/f3')), os.stat(P('f')).st_nlink, os.stat(P('dir/f3')).st_ino == os.stat(P('f')).st_ino)[1:])
done()
`)
  for (const f of ['f', 'f2', 'sl', 'sl2', 'ff', 'ff2', 'dir', 'dir/f3']) sameStat(tt, c, f)
  sameList(tt, c, '')
})

t.test('symlink and readlink', async tt => {
  const c = caseDirs(trees, 'symlink')
  both(tt, 'symlink to a file', c, p => { fs.writeFileSync(p('target'), 'T'); fs.symlinkSync('target', p('l')); return [fs.readlinkSync(p('l')), fs.readFileSync(p('l'), 'utf8')] })
  both(tt, 'dangling symlink: readlink works, stat fails, lstat works', c, p => {
    fs.symlinkSync('../no/such/thing', p('dangling'))
    return [fs.readlinkSync(p('dangling')), outcome(() => fs.statSync(p('dangling')).size), fs.lstatSync(p('dangling')).size]
  })
  both(tt, 'symlink loop: open gives ELOOP', c, p => { fs.symlinkSync('loop2', p('loop1')); fs.symlinkSync('loop1', p('loop2')); return fs.openSync(p('loop1'), 'r') })
  both(tt, 'symlink to self: stat gives ELOOP', c, p => { fs.symlinkSync('self', p('self')); return fs.statSync(p('self')).size })
  both(tt, 'readlink of a regular file', c, p => fs.readlinkSync(p('target')))
  both(tt, 'symlink over an existing name', c, p => fs.symlinkSync('x', p('target')))
  both(tt, 'long target (4000 bytes)', c, p => { fs.symlinkSync('t/'.repeat(2000), p('long')); return fs.readlinkSync(p('long')).length })
  both(tt, 'symlink to a directory: path traversal through it', c, p => {
    fs.mkdirSync(p('dir')); fs.writeFileSync(p('dir/f'), 'via link'); fs.symlinkSync('dir', p('ldir'))
    return [fs.readFileSync(p('ldir/f'), 'utf8'), fs.readdirSync(p('ldir'))]
  })
  both(tt, 'O_NOFOLLOW on a symlink', c, p => fs.openSync(p('l'), C.O_RDONLY | C.O_NOFOLLOW))
  both(tt, 'write through a symlink creates the target', c, p => { fs.symlinkSync('created', p('lc')); fs.writeFileSync(p('lc'), 'made'); return fs.readFileSync(p('created'), 'utf8') })
  for (const f of ['l', 'dangling', 'loop1', 'long', 'ldir', 'lc', 'created']) sameStat(tt, c, f)
})

t.test('symlink: loops (ELOOP), 40-link chains, empty and odd targets', async tt => {
  const c = caseDirs(trees, 'symloop')
  pyBoth(tt, 'symlink loops', c, `
d = sys.argv[1]
P = lambda n: os.path.join(d, n)
os.symlink('loop2', P('loop1')); os.symlink('loop1', P('loop2')); os.symlink('self', P('self'))
with open(P('f'), 'w') as w: w.write('target')
os.mkdir(P('dir'))
os.symlink('f', P('c0'))
for i in range(1, 41): os.symlink('c%d' % (i - 1), P('c%d' % i))
r('open a two-link loop', lambda: os.open(P('loop1'), os.O_RDONLY))
r('stat a self loop', lambda: os.stat(P('self')).st_size)
r('stat through a loop as a directory component', lambda: os.stat(P('loop1/x')))
r('open O_CREAT on a loop', lambda: os.open(P('loop1'), os.O_CREAT | os.O_WRONLY))
r('open O_CREAT below a loop', lambda: os.open(P('loop1/x'), os.O_CREAT | os.O_WRONLY))
r('mkdir below a loop', lambda: os.mkdir(P('loop1/x')))
r('chmod through a loop', lambda: os.chmod(P('loop1'), 0o600))
r('chown through a loop', lambda: os.chown(P('self'), 1, 1))
r('truncate through a loop', lambda: os.truncate(P('self'), 0))
r('utime through a loop', lambda: os.utime(P('self'), ns=(1, 1)))
r('getxattr through a loop', lambda: os.getxattr(P('self'), 'user.x'))
r('listdir of a loop', lambda: os.listdir(P('loop2')))
r('lstat of a loop works', lambda: oct(os.lstat(P('loop1')).st_mode))
r('readlink of a loop works', lambda: os.readlink(P('loop1')))
r('lchown of a loop works', lambda: (os.lchown(P('loop1'), 5, 6), os.lstat(P('loop1')).st_uid)[1])
r('rename a loop', lambda: os.rename(P('loop2'), P('loop3')))
r('the loop is now dangling: ENOENT', lambda: os.stat(P('loop1')))
r('chain of 40 symlinks resolves', lambda: open(P('c39')).read())
r('chain of 41 symlinks: ELOOP', lambda: open(P('c40')).read())
os.symlink('dir', P('cd0'))
for i in range(1, 41): os.symlink('cd%d' % (i - 1), P('cd%d' % i))
r('chain of 40 as a directory component', lambda: os.listdir(P('cd39/.')))
r('chain of 41 as a directory component', lambda: os.listdir(P('cd40/.')))
r('symlink with an empty target', lambda: os.symlink('', P('empty')))
r('symlink to "f/" (trailing slash on a file)', lambda: (os.symlink('f/', P('tslash')), os.stat(P('tslash')))[1])
r('symlink to ".." lists the parent', lambda: (os.symlink('..', P('dir/up')), sorted(os.listdir(P('dir/up'))) == sorted(os.listdir(d)))[1])
r('symlink to an absolute path', lambda: (os.symlink(P('f'), P('abs')), open(P('abs')).read())[1])
r('symlink target of 4095 bytes', lambda: (os.symlink('a' * 4095, P('t4095')), len(os.readlink(P('t4095'))))[1])
r('symlink target of 4096 bytes', lambda: os.symlink('a' * 4096, P('t4096')))
r('unlink a loop removes only the link', lambda: (os.unlink(P('self')), os.path.lexists(P('self')))[1])
r('symlink over an existing symlink', lambda: os.symlink('x', P('loop1')))
r('symlink in a missing dir', lambda: os.symlink('x', P('nodir/l')))
r('symlink through a dangling symlink component', lambda: os.symlink('x', P('loop1/l')))
done()
`)
  for (const f of ['loop1', 'loop3', 'c40', 'tslash', 't4095', 'dir']) sameStat(tt, c, f)
  sameList(tt, c, '')
})


// ---- directories ----------------------------------------------------------

t.test('mkdir and rmdir', async tt => {
  const c = caseDirs(trees, 'dirs')
  both(tt, 'mkdir', c, p => { fs.mkdirSync(p('a')); fs.mkdirSync(p('a/b')); fs.mkdirSync(p('a/c'), 0o700) })
  sameStat(tt, c, ''); sameStat(tt, c, 'a'); sameStat(tt, c, 'a/c')
  both(tt, 'mkdir of an existing name', c, p => fs.mkdirSync(p('a')))
  both(tt, 'mkdir with mode 07777 (umask, no setuid)', c, p => { fs.mkdirSync(p('all'), 0o7777); return true })
  sameStat(tt, c, 'all')
  both(tt, 'mkdir below a file', c, p => { fs.writeFileSync(p('f'), ''); fs.mkdirSync(p('f/x')) })
  both(tt, 'mkdir below a missing dir', c, p => fs.mkdirSync(p('no/x')))
  both(tt, 'rmdir of a non-empty dir', c, p => fs.rmdirSync(p('a')))
  both(tt, 'rmdir of a file', c, p => fs.rmdirSync(p('f')))
  both(tt, 'rmdir of a missing dir', c, p => fs.rmdirSync(p('none')))
  both(tt, 'rmdir through a file component', c, p => fs.rmdirSync(p('f/x')))
  both(tt, 'unlink of a dir', c, p => fs.unlinkSync(p('a/b')))
  both(tt, 'rmdir of an empty dir', c, p => { fs.rmdirSync(p('a/b')); return fs.readdirSync(p('a')) })
  both(tt, 'rmdir of "."', c, p => fs.rmdirSync(p('a') + '/.'))
  sameStat(tt, c, ''); sameStat(tt, c, 'a')
  both(tt, 'nested tree and recursive removal', c, p => {
    fs.mkdirSync(p('t/u/v/w'), { recursive: true })
    fs.writeFileSync(p('t/u/v/w/file'), 'deep')
    fs.rmSync(p('t'), { recursive: true })
    return fs.existsSync(p('t'))
  })
  both(tt, 'setgid directory: new entries inherit the group, subdirs the bit', c, p => {
    fs.mkdirSync(p('sg')); fs.chownSync(p('sg'), 0, 4321); fs.chmodSync(p('sg'), 0o2775)
    fs.writeFileSync(p('sg/f'), ''); fs.mkdirSync(p('sg/d'))
    return [statFields(p('sg/f')), statFields(p('sg/d'))]
  })
  sameStat(tt, c, ''); sameList(tt, c, '')
})

t.test('rmdir and unlink: more cases', async tt => {
  const c = caseDirs(trees, 'rmdir2')
  pyBoth(tt, 'rmdir and unlink', c, `
d = sys.argv[1]
P = lambda n: os.path.join(d, n)
os.makedirs(P('a/b'))
os.makedirs(P('c/sub'))
os.mkdir(P('e'))
with open(P('f'), 'w') as w: w.write('f')
os.symlink('a', P('la'))
os.symlink('f', P('lf'))
os.mkfifo(P('ff'))
r('rmdir ".."', lambda: os.rmdir(P('a/b/..')))
r('rmdir of a symlink to a dir', lambda: os.rmdir(P('la')))
r('rmdir with a trailing slash', lambda: (os.rmdir(P('a/b/')), os.stat(P('a')).st_nlink)[1])
r('rmdir of a dir holding only a subdir', lambda: os.rmdir(P('c')))
r('rmdir of a fifo', lambda: os.rmdir(P('ff')))
def held():
    os.mkdir(P('h'))
    fd = os.open(P('h/f'), os.O_CREAT | os.O_RDWR, 0o644)
    os.write(fd, b'held')
    os.unlink(P('h/f'))
    try:
        listed = os.listdir(P('h'))
        os.rmdir(P('h'))
        return [listed, os.path.exists(P('h')), os.pread(fd, 4, 0)]
    finally:
        os.close(fd)
r('rmdir of a dir whose only file is open and unlinked', held)
def cwd_removed():
    os.mkdir(P('w'))
    fd = os.open(P('w'), os.O_RDONLY)
    os.rmdir(P('w'))
    try:
        return sorted(os.listdir(fd))
    finally:
        os.close(fd)
r('listing a removed dir through an open fd', cwd_removed)
r('unlink a symlink removes the link only', lambda: (os.unlink(P('lf')), os.path.lexists(P('lf')), open(P('f')).read())[1:])
r('unlink a missing name', lambda: os.unlink(P('missing')))
r('unlink with a trailing slash on a file', lambda: os.unlink(P('f/')))
r('unlink of "."', lambda: os.unlink(P('e/.')))
r('unlink of a dir', lambda: os.unlink(P('e')))
r('unlink a symlink to a dir with a trailing slash', lambda: os.unlink(P('la/')))
r('unlink a fifo', lambda: (os.unlink(P('ff')), os.path.lexists(P('ff')))[1])
r('unlink one of two hard links: nlink of the other', lambda: (os.link(P('f'), P('g')), os.unlink(P('f')), os.stat(P('g')).st_nlink, open(P('g')).read())[2:])
r('unlink below a file', lambda: os.unlink(P('g/x')))
done()
`, {
    limits: {
      // LIMITATION (libfuse 2.9 high-level API): READDIR on the handle of a
      // removed directory: libfuse has no path for the removed node and the
      // binding's readdir takes a path, not the handle, so the answer is
      // ENOENT where Linux gives an empty listing. Listing a directory
      // before removing it (rm -r, find -delete) is unaffected.
      'listing a removed dir through an open fd': { mount: ['listing a removed dir through an open fd', 'ESTALE'], why: 'readdir through the fd of a removed directory fails with ESTALE (the binding asks by path; the node has none)' }
    }
  })
  for (const f of ['', 'a', 'c', 'e', 'g', 'la']) sameStat(tt, c, f)
  sameList(tt, c, '')
})

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

t.test('name length: 255 bytes ok, 256 ENAMETOOLONG', async tt => {
  const c = caseDirs(trees, 'names')
  const n255 = 'n'.repeat(255)
  const n256 = 'n'.repeat(256)
  const u255 = 'é'.repeat(127) + 'x' // 2*127 + 1 = 255 bytes
  const u256 = 'é'.repeat(128) // 256 bytes
  both(tt, 'create 255', c, p => { fs.writeFileSync(p(n255), '255'); return fs.readFileSync(p(n255), 'utf8') })
  both(tt, 'create 256', c, p => fs.writeFileSync(p(n256), '256'))
  both(tt, 'stat 256', c, p => fs.statSync(p(n256)).size)
  both(tt, 'mkdir 255 multibyte', c, p => { fs.mkdirSync(p(u255)); return fs.readdirSync(p('')).includes(u255) })
  both(tt, 'mkdir 256 multibyte', c, p => fs.mkdirSync(p(u256)))
  both(tt, 'symlink named 256', c, p => fs.symlinkSync('x', p(n256)))
  both(tt, 'rename to 256', c, p => fs.renameSync(p(n255), p(n256)))
  both(tt, 'link to 256', c, p => fs.linkSync(p(n255), p(n256)))
  sameList(tt, c, '')
  sameStat(tt, c, n255)
})

t.test('mmap write, read back (python mmap)', async tt => {
  const c = caseDirs(trees, 'mmap')
  const script = `
import mmap, os, sys, json
p = sys.argv[1]
fd = os.open(p, os.O_RDWR | os.O_CREAT, 0o644)
os.write(fd, b'0123456789' * 1000)
os.ftruncate(fd, 3 * 65536)
mm = mmap.mmap(fd, 3 * 65536)
before = mm[0:10]
mm[65530:65542] = b'ABCDEFGHIJKL'
mm[0:5] = b'hello'
mm[3 * 65536 - 1] = 0x7a
mm.flush()
mm.close()
os.close(fd)
with open(p, 'rb') as f: d = f.read()
fd = os.open(p, os.O_RDONLY)
mm = mmap.mmap(fd, 0, prot=mmap.PROT_READ)
again = mm[65528:65544]
mm.close(); os.close(fd)
print(json.dumps([len(d), before.decode(), d[0:12].decode(), d[65530:65542].decode(), d[-1], again.hex()]))
`
  both(tt, 'mmap MAP_SHARED write, flush, read back', c, p => pyJson(script, p('f')))
  sameStat(tt, c, 'f'); sameContent(tt, c, 'f')
})

t.test('editor-style atomic save', async tt => {
  const c = caseDirs(trees, 'atomic')
  both(tt, 'save', c, p => {
    fs.writeFileSync(p('doc.txt'), 'version 1\n'); fs.chmodSync(p('doc.txt'), 0o640)
    const before = ino(p('doc.txt'))
    const fd = fs.openSync(p('.doc.txt.swp'), C.O_CREAT | C.O_EXCL | C.O_WRONLY, 0o600)
    fs.writeSync(fd, 'version 2, longer than the first\n')
    fs.fsyncSync(fd)
    fs.fchmodSync(fd, 0o640)
    fs.closeSync(fd)
    fs.renameSync(p('.doc.txt.swp'), p('doc.txt'))
    const dfd = fs.openSync(p(''), 'r')
    fs.fsyncSync(dfd)
    fs.closeSync(dfd)
    return [ino(p('doc.txt')) !== before, fs.readdirSync(p('')).sort()]
  })
  both(tt, 'a reader holding the old file keeps the old content', c, p => {
    const fd = fs.openSync(p('doc.txt'), 'r')
    fs.writeFileSync(p('tmp'), 'version 3\n'); fs.renameSync(p('tmp'), p('doc.txt'))
    const b = Buffer.alloc(100)
    const n = fs.readSync(fd, b, 0, 100, 0)
    fs.closeSync(fd)
    return [b.subarray(0, n).toString(), fs.readFileSync(p('doc.txt'), 'utf8')]
  })
  sameStat(tt, c, 'doc.txt'); sameContent(tt, c, 'doc.txt'); sameList(tt, c, '')
})

t.test('permission checks as an unprivileged user (uid 65534)', async tt => {
  const c = caseDirs(trees, 'perm')
  const as = (cmd: string[]): (string | number)[] => {
    const r = runSync('setpriv', ['--reuid=65534', '--regid=65534', '--clear-groups', ...cmd])
    // error messages name the path: keep only the reason
    return [r.code, r.stdout, r.stderr.replace(/^.*: /gm, '').trim()]
  }
  setup(tt, c, p => {
    fs.chmodSync(p(''), 0o755)
    fs.writeFileSync(p('secret'), 'secret'); fs.chmodSync(p('secret'), 0o600)
    fs.writeFileSync(p('public'), 'public'); fs.chmodSync(p('public'), 0o644)
    fs.mkdirSync(p('open'), 0o777); fs.chmodSync(p('open'), 0o777)
    fs.mkdirSync(p('sticky')); fs.chmodSync(p('sticky'), 0o1777); fs.writeFileSync(p('sticky/roots'), 'r')
    fs.mkdirSync(p('closed')); fs.chmodSync(p('closed'), 0o700); fs.writeFileSync(p('closed/f'), 'f')
  })
  both(tt, 'cat a 0600 root file', c, p => as(['cat', p('secret')]))
  both(tt, 'cat a 0644 root file', c, p => as(['cat', p('public')]))
  both(tt, 'write a 0644 root file', c, p => as(['sh', '-c', `echo x >> "${p('public')}"`]))
  both(tt, 'create in a 0755 root dir', c, p => as(['touch', p('mine')]))
  both(tt, 'create in a 0777 dir: owned by the caller', c, p => { const r = as(['touch', p('open/mine')]); return [r, statFields(p('open/mine'))] })
  both(tt, 'mkdir in a 0777 dir: owned by the caller', c, p => { const r = as(['mkdir', p('open/d')]); return [r, statFields(p('open/d'))] })
  both(tt, 'symlink in a 0777 dir: owned by the caller', c, p => { const r = as(['ln', '-s', 'x', p('open/l')]); return [r, statFields(p('open/l'))] })
  both(tt, 'unlink a root file in a sticky dir', c, p => as(['rm', '-f', p('sticky/roots')]))
  both(tt, 'traverse a 0700 dir', c, p => as(['cat', p('closed/f')]))
  both(tt, 'chmod a root file', c, p => as(['chmod', '777', p('public')]))
  both(tt, 'read a 0600 file of its own', c, p => { as(['sh', '-c', `echo mine > "${p('open/own')}" && chmod 600 "${p('open/own')}"`]); return as(['cat', p('open/own')]) })
  for (const f of ['secret', 'public', 'open/mine', 'open/own', 'sticky/roots']) sameStat(tt, c, f)
})

t.test('attributes as an unprivileged user (uid 65534): chmod, chown, utimensat, setuid clearing, xattrs, link, rename, mkfifo', async tt => {
  const c = caseDirs(trees, 'unpriv')
  setup(tt, c, p => {
    const file = (n: string, mode: number, uid: number, gid: number, data = 'data'): void => {
      fs.writeFileSync(p(n), data); fs.chownSync(p(n), uid, gid); fs.chmodSync(p(n), mode)
    }
    fs.chmodSync(p(''), 0o755)
    file('root644', 0o644, 0, 0); file('root666', 0o666, 0, 0); file('root600', 0o600, 0, 0)
    file('mine', 0o644, NOBODY, NOBODY); file('mine-g0', 0o644, NOBODY, 0); file('mine-g0s', 0o644, NOBODY, 0); file('mine-suid', 0o4755, NOBODY, NOBODY)
    file('suid-w', 0o4666, 0, 0); file('sgidx-w', 0o2676, 0, 0); file('sgid-w', 0o2666, 0, 0); file('suid-t', 0o4666, 0, 0)
    file('suid-x-w', 0o6777, 0, 0)
    fs.mkdirSync(p('mydir')); fs.chownSync(p('mydir'), NOBODY, 0)
    fs.mkdirSync(p('open')); fs.chmodSync(p('open'), 0o777)
    fs.mkdirSync(p('sticky')); fs.chmodSync(p('sticky'), 0o1777)
    fs.writeFileSync(p('sticky/roots'), 'r'); fs.mkdirSync(p('sticky/rootdir'))
    file('sticky/mine', 0o644, NOBODY, NOBODY)
    fs.mkdirSync(p('sgdir')); fs.chownSync(p('sgdir'), 0, 0); fs.chmodSync(p('sgdir'), 0o2777)
    pyJson('import os,sys,json\nos.setxattr(sys.argv[1], "user.u", b"U")\nos.setxattr(sys.argv[1], "trusted.t", b"T")\nprint(1)', p('root644'))
  })
  pyBoth(tt, 'as uid 65534', c, `
import time
d = sys.argv[1]
P = lambda n: os.path.join(d, n)
mode = lambda n: oct(os.lstat(P(n)).st_mode)
owner = lambda n: [os.lstat(P(n)).st_uid, os.lstat(P(n)).st_gid]
r('chmod a root file', lambda: os.chmod(P('root644'), 0o777))
r('chown a root file to me', lambda: os.chown(P('root644'), ${NOBODY}, -1))
r('chown -1 -1 of a root file', lambda: os.chown(P('root644'), -1, -1))
r('chgrp a root file to my group', lambda: os.chown(P('root644'), -1, ${NOBODY}))
r('chmod my file', lambda: (os.chmod(P('mine'), 0o600), mode('mine'))[1])
r('chown my file to root', lambda: os.chown(P('mine'), 0, -1))
r('chgrp my file to a group I am not in', lambda: os.chown(P('mine'), -1, 0))
r('chgrp my file to my group', lambda: (os.chown(P('mine-g0'), -1, ${NOBODY}), owner('mine-g0'))[1])
r('chown my file to myself', lambda: (os.chown(P('mine'), ${NOBODY}, ${NOBODY}), owner('mine'))[1])
r('chmod g+s on my file of a group I am not in: the bit is dropped', lambda: (os.chmod(P('mine-g0s'), 0o2755), mode('mine-g0s'))[1])
r('chmod g+s on my dir of a group I am not in', lambda: (os.chmod(P('mydir'), 0o2755), mode('mydir'))[1])
r('chmod +t on my file', lambda: (os.chmod(P('mine'), 0o1644), mode('mine'))[1])
r('chown of my setuid file (to my own group) clears setuid', lambda: (os.chown(P('mine-suid'), -1, ${NOBODY}), mode('mine-suid'))[1])
def write(n):
    fd = os.open(P(n), os.O_WRONLY)
    try:
        os.write(fd, b'w')
    finally:
        os.close(fd)
    return mode(n)
r('write to a root setuid file clears setuid', lambda: write('suid-w'))
r('write to a root setgid group-executable file clears setgid', lambda: write('sgidx-w'))
r('write to a root setgid file without group exec', lambda: write('sgid-w'))
r('write to a root 06777 file clears both', lambda: write('suid-x-w'))
r('truncate of a root setuid file clears setuid', lambda: (os.truncate(P('suid-t'), 1), mode('suid-t'))[1])
r('utimensat NOW on a root 0666 file (write permission is enough)', lambda: utimensat(P('root666'), 'NOW', 'NOW'))
r('utimensat NULL on a root 0666 file', lambda: utimensat(P('root666'), None))
r('utimensat explicit on a root 0666 file', lambda: utimensat(P('root666'), 1, 2))
r('utimensat NOW/OMIT on a root 0666 file', lambda: utimensat(P('root666'), 'NOW', 'OMIT'))
r('utimensat NOW on a root 0644 file', lambda: utimensat(P('root644'), 'NOW', 'NOW'))
r('utimensat explicit on a root 0644 file', lambda: utimensat(P('root644'), 1, 2))
r('utimensat explicit on my file', lambda: (utimensat(P('mine'), 5, 6), os.stat(P('mine')).st_mtime_ns)[1])
r('set user.* on a root 0644 file', lambda: os.setxattr(P('root644'), 'user.x', b'1'))
r('set user.* on a root 0666 file', lambda: (os.setxattr(P('root666'), 'user.x', b'1'), os.getxattr(P('root666'), 'user.x'))[1])
r('get user.* of a root 0644 file', lambda: os.getxattr(P('root644'), 'user.u'))
r('get user.* of a root 0600 file', lambda: os.getxattr(P('root600'), 'user.u'))
r('set trusted.* on my file', lambda: os.setxattr(P('mine'), 'trusted.x', b'1'))
r('get trusted.* of a root file', lambda: os.getxattr(P('root644'), 'trusted.t'))
r('list xattrs of a root file: trusted.* hidden', lambda: sorted(x for x in os.listxattr(P('root644')) if not x.startswith('security.')))
r('set security.* on my file', lambda: os.setxattr(P('mine'), 'security.x', b'1'))
r('remove user.* of a root 0644 file', lambda: os.removexattr(P('root644'), 'user.u'))
r('hard link to a root 0600 file (protected_hardlinks)', lambda: os.link(P('root600'), P('open/l600')))
r('hard link to a root 0666 file', lambda: os.link(P('root666'), P('open/l666')))
r('hard link to my file', lambda: (os.link(P('mine'), P('open/lmine')), os.stat(P('mine')).st_nlink)[1])
r('rename a root file in a sticky dir', lambda: os.rename(P('sticky/roots'), P('sticky/moved')))
r('rename my file in a sticky dir over a root file', lambda: os.rename(P('sticky/mine'), P('sticky/roots')))
r('rename my file in a sticky dir', lambda: (os.rename(P('sticky/mine'), P('sticky/mine2')), sorted(os.listdir(P('sticky'))))[1])
r('rmdir a root dir in a sticky dir', lambda: os.rmdir(P('sticky/rootdir')))
r('rename a root file in a 0755 root dir', lambda: os.rename(P('root644'), P('x')))
r('unlink a root file in a 0755 root dir', lambda: os.unlink(P('root644')))
r('mkfifo in a 0755 root dir', lambda: os.mkfifo(P('ff')))
r('mkfifo in a 0777 dir: mine', lambda: (os.mkfifo(P('open/ff'), 0o640), owner('open/ff'), mode('open/ff'))[1:])
r('create in a setgid dir: group of the dir', lambda: (open(P('sgdir/f'), 'w').close(), owner('sgdir/f'), mode('sgdir/f'))[1:])
r('O_CREAT with setgid in a setgid dir of a group I am not in', lambda: (os.close(os.open(P('sgdir/g'), os.O_CREAT | os.O_WRONLY, 0o2755)), mode('sgdir/g'))[1])
r('mkdir in a setgid dir', lambda: (os.mkdir(P('sgdir/d'), 0o755), owner('sgdir/d'), mode('sgdir/d'))[1:])
r('O_TRUNC on a root 0644 file', lambda: os.open(P('root644'), os.O_WRONLY | os.O_TRUNC))
r('truncate a root 0644 file', lambda: os.truncate(P('root644'), 0))
r('truncate a root 0666 file', lambda: (os.truncate(P('root666'), 2), os.stat(P('root666')).st_size)[1])
r('access(W_OK) of a root 0644 file', lambda: os.access(P('root644'), os.W_OK))
r('access(R_OK) of a root 0600 file', lambda: os.access(P('root600'), os.R_OK))
done()
`, {
    uid: NOBODY,
    limits: {
      // LIMITATION (the kernel's FUSE driver, fuse_setattr without
      // handle_killpriv): on a write by a user outside the file's group,
      // Linux clears setgid even without group-execute
      // (setattr_should_drop_sgid), but for a FUSE filesystem the kernel
      // turns the kill into a chmod only when group-execute is set, and the
      // daemon is not told who wrote. Setgid without group-execute marks no
      // privilege (it runs nothing with the group).
      'write to a root setgid file without group exec': { mount: ['write to a root setgid file without group exec', 'ok', '0o102666'], why: 'a write by a non-member keeps setgid on a file without group-execute' }
    }
  })
  // sgid-w: see the limitation above
  for (const f of ['root644', 'root666', 'root600', 'mine', 'mine-g0', 'mine-g0s', 'mine-suid', 'suid-w', 'sgidx-w', 'suid-x-w', 'suid-t', 'mydir', 'sticky', 'sgdir/f', 'sgdir/g', 'sgdir/d', 'open/ff']) sameStat(tt, c, f)
  for (const d of ['', 'open', 'sticky', 'sgdir']) sameList(tt, c, d)
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

// ---- the count --------------------------------------------------------------

t.test('conformance count', async tt => {
  tt.ok(tally.cases > 0, `${tally.cases} cases counted`)
  for (const [name, [n, ok]] of bySubtest) tt.comment(`${n} cases, ${ok} passed: ${name}`)
  t.comment(`conformance: ${tally.cases} cases, ${tally.passed} passed (${tally.native} compared with native, ${tally.limitation} asserted as documented limitations, ${tally.property} required properties)`)
})
