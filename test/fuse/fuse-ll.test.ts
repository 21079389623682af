/**
 * The libfuse 3 low-level binding (fuse/ll) on a small in-memory filesystem
 * (test/helpers/memfs-ll.ts) mounted in a temporary directory. Every access
 * to the mount runs in a child process (Python): this process serves it.
 */
// test.sh: alone: its forget-accounting test drops the kernel's dentry and inode caches (machine-wide) and counts the lookups the kernel holds and forgets
import t from 'tap'
import fs from 'node:fs'
import path from 'node:path'
import { spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { LowLevelSession, FuseError, INO_BITS, INCARNATION_BITS, nodeId, lxattrs, lxattrList, lsetxattr, lremovexattr, CAP } from '../../fuse/ll/session.js'
import { mountMem, py, sh, tempDir, clearMount, LOCK_PROBE } from '../helpers/ll-mount.js'

const here = path.dirname(fileURLToPath(import.meta.url))

t.test('node id layout: ino in the low bits, incarnation above, both exact JS numbers', async (t) => {
  t.equal(INO_BITS + INCARNATION_BITS, 64)
  t.equal(nodeId(1, 0), 1n, 'the root (ino 1, incarnation 0) is FUSE_ROOT_ID')
  t.equal(nodeId(5, 3), (3n << BigInt(INO_BITS)) | 5n)
  t.ok(2 ** INO_BITS <= Number.MAX_SAFE_INTEGER && 2 ** INCARNATION_BITS <= Number.MAX_SAFE_INTEGER)
})

t.test('libfuse 3 refuses options it does not know, with its own message', async (t) => {
  const dir = tempDir(t)
  for (const opt of ['big_writes', 'use_ino', 'nonempty', 'hard_remove']) {
    await t.rejects(LowLevelSession.mount(dir, {}, { extraOptions: [opt] }), new RegExp(opt), `${opt} is refused`)
  }
  t.notOk(fs.readFileSync('/proc/mounts', 'utf8').includes(dir), 'nothing was mounted')
})

t.test('files: create, read, write, rename with both flags, link, symlink, unlink, readdir, chmod, utimens in ns', async (t) => {
  const { mnt, fs: m, logs } = await mountMem(t, { mount: { entryTimeout: 60, attrTimeout: 60 } })
  const r = await py(mnt, `
res = {}
with open('a', 'w') as f: f.write('alpha')
with open('b', 'w') as f: f.write('beta')
res['read'] = open('a').read()
with open('a', 'r+') as f:
    f.seek(2); f.write('XY')
res['rw'] = open('a').read()
res['noreplace_existing'] = err(lambda: renameat2('a', 'b', 1))
res['noreplace_new'] = err(lambda: renameat2('a', 'c', 1))
res['exchange'] = err(lambda: renameat2('c', 'b', 2))
res['after_exchange'] = [open('c').read(), open('b').read()]
res['exchange_missing'] = err(lambda: renameat2('c', 'nothere', 2))
os.rename('b', 'c')
res['plain_rename'] = [open('c').read(), os.path.exists('b')]
os.link('c', 'c2')
res['nlink'] = os.stat('c').st_nlink
res['same_ino'] = os.stat('c').st_ino == os.stat('c2').st_ino
os.symlink('c', 'sym')
res['readlink'] = os.readlink('sym')
res['via_link'] = open('sym').read()
os.unlink('c2')
res['nlink_after'] = os.stat('c').st_nlink
os.mkdir('d')
for i in range(300): open('d/file-with-a-rather-long-name-%03d' % i, 'w').close()
res['readdir'] = len(os.listdir('d'))
res['readdir_sorted_ok'] = sorted(os.listdir('d')) == ['file-with-a-rather-long-name-%03d' % i for i in range(300)]
os.chmod('c', 0o640)
res['mode'] = oct(os.stat('c').st_mode)
os.utime('c', ns=(1234567890123456789, 1600000000987654321))
st = os.stat('c')
res['ns'] = [st.st_atime_ns, st.st_mtime_ns]
res['rmdir_nonempty'] = err(lambda: os.rmdir('d'))
os.setxattr('c', 'user.k', b'v' * 300)
res['xattr'] = os.getxattr('c', 'user.k') == b'v' * 300
res['xattr_list'] = os.listxattr('c')
res['xattr_missing'] = err(lambda: os.getxattr('c', 'user.none'))
res['xattr_create_existing'] = err(lambda: os.setxattr('c', 'user.k', b'x', os.XATTR_CREATE))
buf = ctypes.create_string_buffer(10)
n = libc.getxattr(b'c', b'user.k', buf, 10)
res['erange'] = errno.errorcode[ctypes.get_errno()] if n < 0 else n
res['probe'] = libc.getxattr(b'c', b'user.k', None, 0)
os.removexattr('c', 'user.k')
res['xattr_removed'] = os.listxattr('c')
out(res)
`)
  t.equal(r.read, 'alpha')
  t.equal(r.rw, 'alXYa')
  t.equal(r.noreplace_existing, 'EEXIST', 'RENAME_NOREPLACE onto an existing name')
  t.equal(r.noreplace_new, 0)
  t.equal(r.exchange, 0, 'RENAME_EXCHANGE')
  t.same(r.after_exchange, ['beta', 'alXYa'], 'the two names swapped their files')
  t.equal(r.exchange_missing, 'ENOENT')
  t.same(r.plain_rename, ['alXYa', false])
  t.equal(r.nlink, 2)
  t.ok(r.same_ino)
  t.equal(r.readlink, 'c')
  t.equal(r.via_link, 'alXYa')
  t.equal(r.nlink_after, 1)
  t.equal(r.readdir, 300, 'a directory larger than one readdir buffer is listed whole')
  t.ok(r.readdir_sorted_ok)
  t.equal(r.mode, '0o100640')
  t.same(r.ns, [1234567890123456789, 1600000000987654321], 'utimens keeps nanoseconds both ways')
  t.equal(r.rmdir_nonempty, 'ENOTEMPTY')
  t.ok(r.xattr)
  t.same(r.xattr_list, ['user.k'])
  t.equal(r.xattr_missing, 'ENODATA')
  t.equal(r.xattr_create_existing, 'EEXIST')
  t.equal(r.erange, 'ERANGE', 'a buffer too small gets ERANGE')
  t.equal(r.probe, 300, 'size 0 probes the length')
  t.same(r.xattr_removed, [])
  t.same(m.violations, [], 'no request named a forgotten node')
  t.same(logs, [])
})

t.test('utimens: UTIME_OMIT keeps a time, UTIME_NOW sets the current time', async (t) => {
  const { mnt } = await mountMem(t, { mount: { entryTimeout: 0, attrTimeout: 0 } })
  const r = await py(mnt, `
open('f', 'w').close()
os.utime('f', ns=(1000000000000000001, 1000000000000000002))
UTIME_NOW = (1 << 30) - 1; UTIME_OMIT = (1 << 30) - 2
class ts(ctypes.Structure): _fields_ = [('s', ctypes.c_long), ('ns', ctypes.c_long)]
arr = (ts * 2)(ts(0, UTIME_OMIT), ts(1500000000, 7))
libc.utimensat(-100, b'f', arr, 0)
st = os.stat('f')
a = [st.st_atime_ns, st.st_mtime_ns]
before = time.time_ns()
arr = (ts * 2)(ts(0, UTIME_NOW), ts(0, UTIME_OMIT))
libc.utimensat(-100, b'f', arr, 0)
st = os.stat('f')
out({'omit': a, 'now_atime': st.st_atime_ns, 'before': before, 'mtime': st.st_mtime_ns})
`)
  t.same(r.omit, [1000000000000000001, 1500000000000000007], 'atime omitted, mtime set')
  t.ok(r.now_atime >= r.before - 1e9 && r.now_atime <= r.before + 60e9, 'UTIME_NOW is now')
  t.equal(r.mtime, 1500000000000000007, 'mtime omitted')
})

t.test('fstat of an unlinked open file works; so do read and write on it', async (t) => {
  const { mnt, fs: m } = await mountMem(t, { mount: { entryTimeout: 60, attrTimeout: 0 } })
  const r = await py(mnt, `
fd = os.open('gone', os.O_CREAT | os.O_RDWR, 0o644)
os.write(fd, b'12345')
os.unlink('gone')
a = os.fstat(fd).st_size
os.write(fd, b'678')
b = os.fstat(fd)
os.lseek(fd, 0, 0)
data = os.read(fd, 100)
exists = os.path.exists('gone')
os.close(fd)
out({'a': a, 'b': b.st_size, 'nlink': b.st_nlink, 'data': data.decode(), 'exists': exists})
`)
  t.same(r, { a: 5, b: 8, nlink: 0, data: '12345678', exists: false })
  t.same(m.violations, [])
})

t.test('SEEK_DATA and SEEK_HOLE on a sparse file', async (t) => {
  const { mnt } = await mountMem(t)
  const r = await py(mnt, `
fd = os.open('sparse', os.O_CREAT | os.O_RDWR, 0o644)
os.pwrite(fd, b'a' * 4096, 0)
os.pwrite(fd, b'b' * 4096, 1 << 20)
size = os.fstat(fd).st_size
res = {'size': size,
  'data0': os.lseek(fd, 0, os.SEEK_DATA), 'hole0': os.lseek(fd, 0, os.SEEK_HOLE),
  'data1': os.lseek(fd, 4096, os.SEEK_DATA), 'hole1': os.lseek(fd, (1 << 20) + 10, os.SEEK_HOLE),
  'past': err(lambda: os.lseek(fd, size, os.SEEK_DATA))}
os.close(fd)
out(res)
`)
  t.same(r, { size: (1 << 20) + 4096, data0: 0, hole0: 4096, data1: 1 << 20, hole1: (1 << 20) + 4096, past: 'ENXIO' })
})

t.test('flock and POSIX locks exclude between two processes (kernel-local locks)', async (t) => {
  const { mnt, s } = await mountMem(t)
  const r = await py(mnt, `open('lk', 'w').close()\n${LOCK_PROBE}`)
  t.same(r.held, ['EAGAIN', 'EAGAIN', 0], 'a held flock and a held range lock refuse the other process; another range is free')
  t.same(r.free, [0, 0], 'released locks are taken')
  const c = s.counters()
  t.notOk(c.getlk || c.setlk || c.setlkw, 'no lock request reached the filesystem')
})

t.test('O_TRUNC at open truncates in the open (atomic_o_trunc), no separate setattr', async (t) => {
  const { mnt, fs: m, s } = await mountMem(t, { mount: { entryTimeout: 60, attrTimeout: 60 } })
  t.ok(s.init.want & CAP.ATOMIC_O_TRUNC, 'atomic_o_trunc negotiated')
  const r1 = await py(mnt, `
with open('t', 'w') as f: f.write('some content')
out(os.stat('t').st_size)
`)
  t.equal(r1, 12)
  const before = s.counters().setattr ?? 0
  const r = await py(mnt, `
fd = os.open('t', os.O_WRONLY | os.O_TRUNC)
os.close(fd)
out([os.stat('t').st_size, open('t').read()])
`)
  t.same(r, [0, ''])
  t.ok(m.opens.some((f) => (f & 0o1000) !== 0), 'the open carried O_TRUNC')
  t.equal(s.counters().setattr ?? 0, before, 'no SETATTR for the truncation')
})

t.test('capabilities libfuse 3 turns on by default: each honoured or switched off on purpose', async (t) => {
  const { s } = await mountMem(t)
  const { want, capable } = s.init
  t.ok(capable & CAP.PARALLEL_DIROPS, 'the kernel offers parallel directory operations')
  t.ok(want & CAP.PARALLEL_DIROPS, 'parallel dirops on: every handler is safe to run while another request of the same directory is pending')
  t.notOk(want & CAP.AUTO_INVAL_DATA, 'auto_inval_data off: the daemon invalidates by node id itself')
  t.notOk(want & CAP.WRITEBACK_CACHE, 'writeback cache off (a mark would have to flush dirty pages)')
  t.notOk(want & CAP.HANDLE_KILLPRIV, 'handle_killpriv off: the kernel clears suid/sgid')
  t.notOk(want & (CAP.POSIX_LOCKS | CAP.FLOCK_LOCKS), 'locks stay kernel-local')
  t.ok(want & CAP.ATOMIC_O_TRUNC, 'atomic O_TRUNC on (open honours O_TRUNC)')
  t.notOk(want & (CAP.SPLICE_READ | CAP.SPLICE_WRITE | CAP.SPLICE_MOVE), 'no splice: the binding copies request data anyway')
})

t.test('names that are not UTF-8 round-trip as bytes (issue 18)', async (t) => {
  const { mnt, fs: m } = await mountMem(t)
  const r = await py(mnt, `
with open(b'pair-\\xfe.txt', 'wb') as f: f.write(b'first')
with open(b'pair-\\xff.txt', 'wb') as f: f.write(b'second')
os.symlink(b'\\xfe\\xff-target', b'lnk-\\x80')
os.mkdir(b'dir-\\xc3\\x28')
os.setxattr(b'pair-\\xfe.txt', b'user.\\xfe', b'\\x00\\xff')
os.rename(b'pair-\\xff.txt', b'moved-\\xff')
out({'names': sorted(n.hex() for n in os.listdir(b'.')),
     'first': open(b'pair-\\xfe.txt', 'rb').read().decode(), 'second': open(b'moved-\\xff', 'rb').read().decode(),
     'target': os.readlink(b'lnk-\\x80').hex(), 'xattr': [n.hex() if isinstance(n, bytes) else os.fsencode(n).hex() for n in os.listxattr(b'pair-\\xfe.txt')],
     'xval': os.getxattr(b'pair-\\xfe.txt', b'user.\\xfe').hex()})
`)
  const hex = (s: string): string => Buffer.from(s, 'latin1').toString('hex')
  t.same(r.names, [hex('dir-\xc3\x28'), hex('lnk-\x80'), hex('moved-\xff'), hex('pair-\xfe.txt')].sort())
  t.equal(r.first, 'first')
  t.equal(r.second, 'second', 'two names differing only in an invalid byte stay two files')
  t.equal(r.target, hex('\xfe\xff-target'), 'symlink target bytes')
  t.same(r.xattr, [hex('user.\xfe')])
  t.equal(r.xval, '00ff')
  t.ok(m.child(1, Buffer.from('pair-\xfe.txt', 'latin1')), 'the filesystem got the raw bytes')
})

t.test('statfs is 64-bit; fallocate and copy_file_range reach the filesystem', async (t) => {
  const { mnt, s } = await mountMem(t)
  const r = await py(mnt, `
v = os.statvfs('.')
fd = os.open('big', os.O_CREAT | os.O_RDWR, 0o644)
os.posix_fallocate(fd, 0, 1 << 20)
size = os.fstat(fd).st_size
os.pwrite(fd, b'copy me', 100)
fd2 = os.open('copy', os.O_CREAT | os.O_RDWR, 0o644)
n = os.copy_file_range(fd, fd2, 7, 100, 0)
os.close(fd); os.close(fd2)
out({'blocks': v.f_blocks, 'ffree': v.f_ffree, 'size': size, 'n': n, 'copy': open('copy').read()})
`)
  t.same(r, { blocks: 2 ** 40, ffree: 2 ** 32 + 5, size: 1 << 20, n: 7, copy: 'copy me' })
  const c = s.counters()
  t.ok(c.fallocate >= 1 && (c.write ?? 0) < 10, 'posix_fallocate was one FALLOCATE, not zero writes')
  t.ok(c.copy_file_range >= 1, 'copy_file_range reached the filesystem')
})

t.test('counters count each kernel request by opcode', async (t) => {
  const { mnt, s } = await mountMem(t, { mount: { entryTimeout: 0, attrTimeout: 0 } })
  await py(mnt, "open('x', 'w').close(); out(0)")
  const before = s.counters()
  await py(mnt, "[os.lstat('x') for i in range(500)]; out(0)")
  const after = s.counters()
  t.ok(after.getattr - before.getattr >= 500 || after.lookup - before.lookup >= 500, `500 lstat with zero timeouts: +${after.getattr - before.getattr} getattr, +${after.lookup - before.lookup} lookup`)
  t.ok(after.init === 1, 'one INIT')
  t.type(after.readdirplus, 'number', 'every known opcode is listed, seen or not')
})

t.test('forget accounting: after drop_caches every looked-up node id is forgotten; no leak after 100,000 lookups', async (t) => {
  const { mnt, fs: m } = await mountMem(t, { mount: { entryTimeout: 60, attrTimeout: 60 } })
  const N = 10000
  const d = m.add(1, 'many', 0o040755)
  for (let i = 0; i < N; i++) m.add(d.ino, `f${i}`, 0o100644, 'x')
  const nodes = m.nodes.size
  for (let round = 0; round < 10; round++) {
    const r = await py(mnt, `out(sum(1 for i in range(${N}) if os.lstat('many/f%d' % i)))`)
    t.equal(r, N, `round ${round}: ${N} lookups answered`)
    t.ok(m.liveLookups() >= N, `the kernel holds at least ${N} lookups`)
    await sh('sync; echo 2 > /proc/sys/vm/drop_caches')
    // FORGETs are asynchronous: give the kernel a moment to send them
    for (let i = 0; i < 100 && m.liveLookups() > 0; i++) await new Promise((resolve) => setTimeout(resolve, 50))
  }
  t.equal(m.liveLookups(), 0, 'every lookup was forgotten')
  t.same(m.violations, [], 'no request named a node after its last forget')
  t.equal(m.nodes.size, nodes, 'no inode leaked (names still exist, so all are kept)')
  // unlinked names are freed once forgotten
  for (let i = 0; i < 100; i++) m.remove(d.ino, `f${i}`)
  t.equal(m.nodes.size, nodes - 100, 'an inode with no name and no lookup is gone')
})

t.test('notify: inval_entry, inval_inode and delete make changes behind the kernel visible with 60 s timeouts', async (t) => {
  const { mnt, fs: m, s } = await mountMem(t, { mount: { entryTimeout: 60, attrTimeout: 60 } })
  const a = m.add(1, 'a', 0o100644, 'same size 1')
  // b is only ever stat'ed: a read would invalidate its cached atime, and stat asks for atime, so the kernel would fetch every attribute again
  const b = m.add(1, 'b', 0o100644, 'bbb')
  m.add(1, 'c', 0o100644, 'ccc')
  m.add(1, 'e', 0o100644, 'eee')
  const look = `
def st(p):
    try:
        s = os.stat(p); return [oct(s.st_mode), s.st_size]
    except OSError as e: return errno.errorcode[e.errno]
out({'adata': open('a').read(), 'b': st('b'), 'c': st('c'), 'e': st('e')})
`
  const r0 = await py(mnt, look)
  t.same(r0, { adata: 'same size 1', b: ['0o100644', 3], c: ['0o100644', 3], e: ['0o100644', 3] })
  // behind the kernel's back
  b.mode = 0o100600
  m.writeData(a, Buffer.from('same size 2'), 0)
  const c = m.remove(1, 'c')!
  m.remove(1, 'e')
  const r1 = await py(mnt, look)
  // a's data is read afresh anyway: an open without keep_cache drops the page cache
  t.same(r1, { ...r0, adata: 'same size 2' }, 'without notifications the kernel answers names and attributes from its caches')
  const res = await s.notify([
    { kind: 'inode', ino: b.ino },
    { kind: 'entry', parent: 1, name: Buffer.from('e') },
    { kind: 'delete', parent: 1, child: c.ino, name: Buffer.from('c') },
    { kind: 'entry', parent: 1, name: Buffer.from('never-looked-up') }
  ])
  t.same(res.results.slice(0, 3), [0, 0, 0], 'the three notifications succeeded')
  t.equal(res.results[3], -2, 'a name the kernel never cached: -ENOENT')
  t.type(res.ms, 'number')
  const r2 = await py(mnt, look)
  t.same(r2, { adata: 'same size 2', b: ['0o100600', 3], c: 'ENOENT', e: 'ENOENT' }, 'the changes are visible')
  const bad = await s.notify([{ kind: 'inode', ino: 0 } as any, { kind: 'nonsense' } as any])
  t.same(bad.results, [-22, -22], 'malformed items: -EINVAL')
})

t.test('a handler that throws or answers garbage gets an errno; the mount keeps working', async (t) => {
  const { mnt, logs, s } = await mountMem(t, {
    mount: { entryTimeout: 0, attrTimeout: 0 },
    wrap: (ops) => ({
      ...ops,
      lookup: (req, p, pi, name) => {
        const n = name.toString()
        if (n === 'throws') throw new TypeError('handler bug')
        if (n === 'rejects') return Promise.reject(new Error('async handler bug'))
        if (n === 'garbage') return { ino: 'seven' } as any
        if (n === 'badmode') return { ino: 99, attr: { mode: 0o644 } }
        if (n === 'errno') throw new FuseError(13)
        if (n === 'late') return new Promise((resolve) => setTimeout(() => resolve(-2), 50))
        return ops.lookup!(req, p, pi, name)
      },
      read: () => Buffer.alloc(1 << 20) // more than asked
    })
  })
  const r = await py(mnt, `
open('ok', 'w').write('fine')
out({n: err(lambda: os.stat(n)) for n in ['throws', 'rejects', 'garbage', 'badmode', 'errno', 'late', 'ok']} | {'read': err(lambda: open('ok').read())})
`)
  t.same(r, { throws: 'EIO', rejects: 'EIO', garbage: 'EIO', badmode: 'EIO', errno: 'EACCES', late: 'ENOENT', ok: 0, read: 'EIO' })
  // one line per failing request without an errno: the four lookups, and the read (the kernel may send it twice: readahead, then the read itself)
  t.equal(logs.filter((l) => l.includes('lookup(')).length, 4, 'one log line per lookup that failed without an errno')
  t.ok(logs.length >= 5 && logs.slice(4).every((l) => l.includes('read(')), 'the rest are the read\'s:\n' + logs.join('\n'))
  t.match(logs.join('\n'), /lookup\(ino 1\) threw: TypeError: handler bug/)
  t.match(logs.join('\n'), /bad value: attr\.mode must carry a file type/)
  t.match(logs.join('\n'), /read answered more bytes than the kernel asked for/)
  const again = await py(mnt, "out(open('ok').read() if False else os.stat('ok').st_size)")
  t.equal(again, 4, 'still serving')
  t.equal(s.stats().pending, 0, 'nothing left pending')
})

t.test('unmount: clean teardown; a killed daemon leaves a mount that says ENOTCONN; fusermount3 -u clears it', async (t) => {
  const { mnt, s } = await mountMem(t)
  await s.unmount()
  t.notOk(fs.readFileSync('/proc/mounts', 'utf8').split('\n').some((l) => l.split(' ')[1] === mnt), 'unmount() removed the mount')
  await s.unmount() // twice is fine

  const dir = tempDir(t)
  const mnt2 = path.join(dir, 'm')
  fs.mkdirSync(mnt2)
  const child = spawn(process.execPath, [path.join(here, '..', 'helpers', 'memfs-ll-main.js'), mnt2], { stdio: ['ignore', 'pipe', 'inherit'] })
  t.teardown(async () => { if (child.exitCode === null) child.kill('SIGKILL'); await clearMount(mnt2) })
  await new Promise<void>((resolve, reject) => {
    child.stdout!.on('data', (b: Buffer) => { if (b.toString().includes('ready')) resolve() })
    child.on('exit', () => reject(new Error('memfs-ll-main exited early')))
  })
  const live = await sh(`cat '${mnt2}/hello.txt'`)
  t.equal(live.stdout, 'hello\n')
  child.kill('SIGKILL')
  await new Promise((resolve) => child.on('exit', resolve))
  const dead = await sh(`stat '${mnt2}' 2>&1`)
  t.match(dead.stdout, /Transport endpoint is not connected/, 'the dead mount is detectable')
  const u = await sh(`fusermount3 -u '${mnt2}'`)
  t.equal(u.code, 0, 'fusermount3 -u works on it')
  t.notOk(fs.readFileSync('/proc/mounts', 'utf8').includes(mnt2), 'and it is gone')
})

t.test('suid and sgid are cleared when another user writes (the kernel does it: handle_killpriv off)', async (t) => {
  const { mnt, s } = await mountMem(t, { mount: { allowOther: true, entryTimeout: 0, attrTimeout: 0 } })
  t.notOk(s.init.want & CAP.HANDLE_KILLPRIV, 'handle_killpriv is off')
  await py(mnt, "open('s', 'w').write('x'); os.chmod('s', 0o6777); out(0)")
  const r = await py(mnt, "fd = os.open('s', os.O_WRONLY); os.write(fd, b'y'); os.close(fd); out(oct(os.stat('s').st_mode))", { asUser: 65534 })
  t.equal(r, '0o100777', 'suid and sgid cleared, the rest kept')
})

t.test('lower-layer xattr syscalls (lxattrs, lsetxattr, lremovexattr), names as bytes too', async (t) => {
  const dir = tempDir(t)
  const f = path.join(dir, 'f')
  fs.writeFileSync(f, 'x')
  try { lsetxattr(f, 'user.probe', Buffer.from('1')) } catch (e: any) {
    if (e.code === 'ENOTSUP') { t.pass('skipped: no user xattrs on ' + dir); return }
    throw e
  }
  lsetxattr(f, Buffer.from('user.\xfe', 'latin1'), Buffer.from([0, 1, 2]))
  t.same(lxattrs(f)?.['user.probe'], Buffer.from('1'))
  const raw = lxattrList(f)!
  t.ok(raw.some(([n, v]) => n.equals(Buffer.from('user.\xfe', 'latin1')) && v.equals(Buffer.from([0, 1, 2]))), 'a non-UTF-8 name as bytes')
  lremovexattr(f, 'user.probe')
  t.throws(() => lremovexattr(f, 'user.probe'), { code: 'ENODATA' })
  t.throws(() => lxattrs(path.join(dir, 'missing')), { code: 'ENOENT' })
  lremovexattr(f, Buffer.from('user.\xfe', 'latin1'))
  t.equal(lxattrs(f), null, 'none left')
})
