// POSIX conformance through a real rewindfs mount, compared call by call with
// the same call on a native directory (a plain directory on the host
// filesystem next to the mount). Every case runs the same operation on both
// trees and asserts the same return value or errno and the same resulting
// stat fields (type, mode, nlink, size, uid, gid; mtime/atime where set
// explicitly) and content bytes.
//
// The daemon runs in a child process (test/helpers/mount.ts), so this process
// may use synchronous fs calls on the mount.
//
// Limitations that are asserted as they are (not as native behaves) are
// marked LIMITATION with the reason.
import t, { type Test } from 'tap'
import fs from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { mountWorkspace } from './helpers/mount.js'
import {
  type Outcome, type P, type Trees, outcome, caseDirs, statFields, runSync, pyJson, PY_PRELUDE,
  bufDiff, preadFile, pattern
} from './helpers/native-compare.js'

const KiB = 1024
const MiB = 1024 * KiB
const GiB = 1024 * MiB
const BLOCK = 64 * KiB
const C = fs.constants
/** scripts/manifest.sh (this file runs as dist/test/posix.test.js) */
const MANIFEST = fileURLToPath(new URL('../../scripts/manifest.sh', import.meta.url))

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

/** Runs fn on both trees; asserts the same outcome; returns the native one. */
function both<T> (tt: Test, label: string, c: Case, fn: (p: P) => T): Outcome<T> {
  const a = outcome(() => fn(c.nat))
  const b = outcome(() => fn(c.mnt))
  tt.same(b, a, label)
  return a
}

/** Asserts the same stat fields of rel in both trees. */
function sameStat (tt: Test, c: Case, rel: string, o: { mtime?: boolean, atime?: boolean, follow?: boolean } = {}): void {
  const a = outcome(() => statFields(c.nat(rel), o))
  const b = outcome(() => statFields(c.mnt(rel), o))
  tt.same(b, a, `stat ${rel || '.'}`)
}

/** Asserts the same content bytes of rel in both trees. */
function sameContent (tt: Test, c: Case, rel: string): void {
  const a = fs.readFileSync(c.nat(rel))
  const b = fs.readFileSync(c.mnt(rel))
  tt.equal(bufDiff(b, a), null, `content ${rel} (${a.length} bytes)`)
}

/** Asserts the same sorted listing of a directory in both trees. */
function sameList (tt: Test, c: Case, rel: string): string[] {
  const a = fs.readdirSync(c.nat(rel)).sort()
  const b = fs.readdirSync(c.mnt(rel)).sort()
  tt.same(b, a, `readdir ${rel || '.'}`)
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
  tt.ok(blocks <= 2 * (BLOCK / 512), `mount reports ${blocks} 512-byte blocks allocated for 2 written bytes`)
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
  tt.same(names.filter(n => n.startsWith('.fuse_hidden')), [], 'no .fuse_hidden* entry in readdir')
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
  tt.same(fst.mnt, { err: 'Unknown system error -116' }, 'LIMITATION: fstat of an unlinked open file fails with ESTALE through the mount')
  both(tt, 'a new file of the same name is independent', c, p => { fs.writeFileSync(p('f'), 'new'); return fs.readSync(fds[p('f')]!, Buffer.alloc(10), 0, 10, 0) })
  sameContent(tt, c, 'f')
  for (const k of Object.keys(fds)) fs.closeSync(fds[k]!)
  both(tt, 'after the last close', c, p => fs.readdirSync(p('')).sort())
})

// ---- rename -----------------------------------------------------------------

t.test('rename', async tt => {
  const c = caseDirs(trees, 'rename')
  both(tt, 'setup', c, p => {
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

// ---- attributes -----------------------------------------------------------

t.test('chmod: all 12 bits', async tt => {
  const c = caseDirs(trees, 'chmod')
  both(tt, 'setup', c, p => { fs.writeFileSync(p('f'), 'x'); fs.mkdirSync(p('d')) })
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
  both(tt, 'setup', c, p => { fs.writeFileSync(p('f'), 'x'); fs.mkdirSync(p('d')); fs.symlinkSync('f', p('l')) })
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
  both(tt, 'xattr sequence', c, p => pyJson(script, p('f'), p('d'), p('l')))
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
  tt.same(pyJson(big, c.mnt('big')), [['set 64 KiB', 'ok', null], ['get 64 KiB is equal', 'ok', true], ['set 64 KiB + 1', 'E2BIG']], 'mount: 64 KiB values (XATTR_SIZE_MAX), E2BIG above')
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
  both(tt, 'setup', c, p => {
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
  // KNOWN BUG (daemon/workspace.ts fromLower, not fixed here): a lower file
  // with st_nlink > 1 gets a record with only the names discovered so far;
  // until the directory holding its other name is listed it reports nlink 1,
  // and the kernel then caches that for attr_timeout (60 s). Fixing it needs
  // a persisted count of undiscovered lower names in the inode record
  // (daemon/inode.ts). The property test's remount step shows the same.
  tt.same(mntL.filter(hard), natL.filter(hard), 'hard-linked lower file: nlink on both names')
  const lc = { nat: c.nat, mnt: c.mnt }
  // xattrs of files that exist before the mount are imported with the lower
  // listing (daemon/lower.ts, through the native lxattrs of fuse/xattr.ts)
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
