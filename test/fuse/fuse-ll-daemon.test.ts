/**
 * The daemon on the libfuse 3 low-level layer (REWINDFS_FUSE=ll): what the
 * libfuse 2.9 layer could not do, through a real workspace mount served by
 * a daemon in a child process. Each case fails on the old layer (see README
 * "Limits").
 */
// test.sh: alone: its forget-accounting test drops the kernel's dentry and inode caches (machine-wide) and counts the node ids the kernel holds and forgets
import t from 'tap'
import fs from 'node:fs'
import path from 'node:path'
import { mountWorkspace } from '../helpers/mount.js'
import { py, LOCK_PROBE } from '../helpers/ll-mount.js'

process.env.REWINDFS_FUSE = 'll'

t.test('fstat of an unlinked open file; read and write on it go on', async t => {
  const m = await mountWorkspace(t)
  const r = await py(m.dir, `
fd = os.open('gone', os.O_CREAT | os.O_RDWR, 0o644)
os.write(fd, b'12345')
os.unlink('gone')
a = os.fstat(fd)
os.write(fd, b'678')
b = os.fstat(fd)
os.lseek(fd, 0, 0)
data = os.read(fd, 100)
os.close(fd)
out({'a': [a.st_nlink, a.st_size], 'b': [b.st_nlink, b.st_size], 'data': data.decode(), 'listed': os.listdir('.')})
`)
  t.same(r, { a: [0, 5], b: [0, 8], data: '12345678', listed: [] })
})

t.test('renameat2: RENAME_NOREPLACE and RENAME_EXCHANGE, then a restore undoes the exchange', async t => {
  const m = await mountWorkspace(t, dir => { fs.writeFileSync(path.join(dir, 'a'), 'alpha'); fs.mkdirSync(path.join(dir, 'd')); fs.writeFileSync(path.join(dir, 'd', 'b'), 'beta') })
  const cp = await m.client.mark({ label: 'before' })
  const r = await py(m.dir, `
res = {}
res['noreplace_existing'] = err(lambda: renameat2('a', 'd/b', 1))
res['exchange'] = err(lambda: renameat2('a', 'd/b', 2))
res['after'] = [open('a').read(), open('d/b').read()]
res['exchange_missing'] = err(lambda: renameat2('a', 'nothere', 2))
res['noreplace_new'] = err(lambda: renameat2('a', 'c', 1))
res['listed'] = sorted(os.listdir('.'))
out(res)
`)
  t.same(r, { noreplace_existing: 'EEXIST', exchange: 0, after: ['beta', 'alpha'], exchange_missing: 'ENOENT', noreplace_new: 0, listed: ['c', 'd'] })
  await m.client.restore({ id: cp.id })
  const back = await py(m.dir, "out([sorted(os.listdir('.')), open('a').read(), open('d/b').read()])")
  t.same(back, [['a', 'd'], 'alpha', 'beta'], 'the restore brought both names back (by node id invalidation, 60 s caches)')
})

t.test('SEEK_DATA and SEEK_HOLE on a sparse file', async t => {
  const m = await mountWorkspace(t)
  const r = await py(m.dir, `
fd = os.open('sp', os.O_CREAT | os.O_RDWR, 0o644)
os.pwrite(fd, b'head', 0)
os.pwrite(fd, b'x', 4 << 20)
res = [os.lseek(fd, 0, os.SEEK_DATA), os.lseek(fd, 0, os.SEEK_HOLE), os.lseek(fd, 100000, os.SEEK_DATA), os.lseek(fd, (4 << 20), os.SEEK_HOLE), err(lambda: os.lseek(fd, (4 << 20) + 1, os.SEEK_DATA))]
os.close(fd)
out(res)
`)
  t.same(r, [0, 65536, 4 << 20, (4 << 20) + 1, 'ENXIO'], "holes are reported, at the store's 64 KiB granularity")
})

t.test('O_TRUNC at open, and a restore makes cached attributes and pages fresh', async t => {
  const m = await mountWorkspace(t, dir => { fs.writeFileSync(path.join(dir, 'f'), 'some content'); fs.writeFileSync(path.join(dir, 'g'), 'keep') })
  const cp = await m.client.mark({})
  const r = await py(m.dir, `
st0 = os.stat('g'); g0 = open('g').read()
fd = os.open('f', os.O_WRONLY | os.O_TRUNC)
os.close(fd)
a = [os.stat('f').st_size, open('f').read()]
os.chmod('g', 0o600)
with open('g', 'w') as h: h.write('changed!')
open('new', 'w').close()
out({'trunc': a, 'g': [oct(os.stat('g').st_mode), open('g').read()]})
`)
  t.same(r, { trunc: [0, ''], g: ['0o100600', 'changed!'] })
  await m.client.restore({ id: cp.id })
  const after = await py(m.dir, "out([oct(os.stat('g').st_mode), os.stat('g').st_size, open('g').read(), open('f').read(), os.path.exists('new')])")
  t.same(after, ['0o100644', 4, 'keep', 'some content', false], 'attributes, size, pages and names as checkpointed')
})

t.test('concurrent operations in one directory', async t => {
  const m = await mountWorkspace(t, dir => { fs.mkdirSync(path.join(dir, 'd')) })
  const worker = (k: number): Promise<any> => py(m.dir, `
for i in range(150):
    p = 'd/w${k}-%d' % i
    with open(p + '.tmp', 'w') as f: f.write('%d' % i)
    os.rename(p + '.tmp', p)
    if i % 3 == 0: os.unlink(p)
    if i % 10 == 0: os.listdir('d')
out(len([n for n in os.listdir('d') if n.startswith('w${k}-')]))
`)
  const counts = await Promise.all([0, 1, 2, 3].map(worker))
  t.same(counts, [100, 100, 100, 100], 'each worker sees its own files, none lost or doubled')
  const all = await py(m.dir, "out(sorted(os.listdir('d')) == sorted(['w%d-%d' % (k, i) for k in range(4) for i in range(150) if i % 3 != 0]))")
  t.equal(all, true, 'the directory holds exactly what the four made')
  const cp = await m.client.mark({})
  await m.sh('rm -rf d/*')
  await m.client.restore({ id: cp.id })
  const back = await py(m.dir, "out(len(os.listdir('d')))")
  t.equal(back, 400, 'a restore brings them back')
})

t.test('flock and POSIX locks between two processes stay kernel-local', async t => {
  const m = await mountWorkspace(t, dir => { fs.writeFileSync(path.join(dir, 'lk'), '') })
  const r = await py(m.dir, LOCK_PROBE)
  t.same(r.held, ['EAGAIN', 'EAGAIN', 0], 'a held flock and a held range lock refuse the other process; another range is free')
  t.same(r.free, [0, 0], 'released locks are taken')
})

t.test('suid and sgid are cleared when another user writes through the daemon (the kernel does it: handle_killpriv off)', async t => {
  const m = await mountWorkspace(t, dir => { fs.writeFileSync(path.join(dir, 's'), 'x'); fs.chmodSync(path.join(dir, 's'), 0o6777) })
  fs.chmodSync(m.root, 0o755) // the other user must reach the workspace
  const before = await py(m.dir, "out(oct(os.stat('s').st_mode))")
  t.equal(before, '0o106777', 'suid and sgid set')
  const r = await py(m.dir, "fd = os.open('s', os.O_WRONLY); os.write(fd, b'y'); os.close(fd); out(oct(os.stat('s').st_mode))", { asUser: 65534 })
  t.equal(r, '0o100777', 'a write by another user cleared suid and sgid, the rest kept')
  const own = await py(m.dir, "os.chmod('s', 0o6755); fd = os.open('s', os.O_WRONLY); os.write(fd, b'z'); os.close(fd); out(oct(os.stat('s').st_mode))")
  t.equal(own, '0o106755', "root's write keeps them (CAP_FSETID), as on a native filesystem")
})

t.test('forget accounting through the daemon: every lookup is forgotten after drop_caches, no request names a forgotten node id, no leak after 100,000 lookups', async t => {
  const N = 10000
  const m = await mountWorkspace(t, dir => {
    fs.mkdirSync(path.join(dir, 'many'))
    for (let i = 0; i < N; i++) fs.writeFileSync(path.join(dir, 'many', `f${i}`), 'x')
  })
  const nodes = async (): Promise<{ nodes: number, lookups: number, forgetUnknown: number, afterForget: number }> => {
    const s = await m.client.status() as any
    if (s.kernelNodes === undefined) throw new Error('status has no kernelNodes: the daemon is not on the low-level layer')
    return s.kernelNodes
  }
  let inodes = 0
  for (let round = 0; round < 10; round++) {
    const r = await py(m.dir, `out(sum(1 for i in range(${N}) if os.lstat('many/f%d' % i)))`)
    t.equal(r, N, `round ${round}: ${N} lookups answered`)
    // the first round imports the files from the directory below the mount (status.inodes counts recorded inodes)
    if (round === 0) inodes = (await m.client.status()).inodes
    const held = await nodes()
    t.ok(held.nodes >= N, `round ${round}: the kernel holds at least ${N} node ids (${held.nodes})`)
    await m.sh('sync; echo 2 > /proc/sys/vm/drop_caches')
    // FORGETs are asynchronous: give the kernel a moment to send them
    let n = await nodes()
    for (let i = 0; i < 200 && n.nodes > 0; i++) { await new Promise(resolve => setTimeout(resolve, 50)); n = await nodes() }
  }
  const end = await nodes()
  t.equal(end.nodes, 0, 'every node id was forgotten: the adapter holds none')
  t.equal(end.lookups, 0, 'and no lookup count')
  t.equal(end.forgetUnknown, 0, 'no forget of a node id not held')
  t.equal(end.afterForget, 0, 'no request named a node id after its last forget')
  t.equal((await m.client.status()).inodes, inodes, 'the workspace holds the same inodes (lookups leak none)')
  const after = await py(m.dir, "out(len(os.listdir('many')))")
  t.equal(after, N, 'the files are all there')
})

t.test('a name looked up while missing (a negative entry the kernel caches) is visible at once after a restore brings it back', async t => {
  const m = await mountWorkspace(t, dir => { fs.writeFileSync(path.join(dir, 'x'), 'x content'); fs.mkdirSync(path.join(dir, 'd')); fs.writeFileSync(path.join(dir, 'd', 'y'), 'y content') })
  const cp = await m.client.mark({})
  const gone = await py(m.dir, `
os.unlink('x'); os.unlink('d/y')
out([err(lambda: os.stat('x')), err(lambda: os.stat('d/y')), err(lambda: os.stat('x')), err(lambda: os.stat('never'))])
`)
  t.same(gone, ['ENOENT', 'ENOENT', 'ENOENT', 'ENOENT'], 'missing names are looked up (and cached as missing)')
  const before = (await m.client.status()).requests ?? {}
  await py(m.dir, "out([err(lambda: os.stat('x')) for i in range(50)])")
  const after = (await m.client.status()).requests ?? {}
  t.ok((after.lookup ?? 0) - (before.lookup ?? 0) < 10, `50 stats of a missing name cost ${(after.lookup ?? 0) - (before.lookup ?? 0)} lookups (the kernel caches the negative entry)`)
  await m.client.restore({ id: cp.id })
  const back = await py(m.dir, "out([open('x').read(), open('d/y').read(), err(lambda: os.stat('never'))])")
  t.same(back, ['x content', 'y content', 'ENOENT'], 'the restored names are found at once (their negative entries were dropped), a still missing name stays missing')
})

t.test('file capabilities: the binding answers the kernel\'s check before each write, and stays exact (set, a write drops it, a restore brings it back)', async t => {
  const m = await mountWorkspace(t, dir => { fs.writeFileSync(path.join(dir, 'old'), 'from the directory') })
  // a VFS_CAP_REVISION_2 value granting cap_net_raw (bit 13), permitted and effective (linux/capability.h)
  const prelude = `
CAP = 'security.capability'
V = struct.pack('<IIIII', 0x02000001, 1 << 13, 0, 0, 0)
def app(p, n=1):
    for i in range(n):
        with open(p, 'a') as w: w.write('x')
def cap(p):
    try: return os.getxattr(p, CAP).hex()
    except OSError as e: return errno.errorcode[e.errno]
`
  const r = await py(m.dir, prelude + `
res = {}
app('new', 5)   # made here: the create answer told the binding it has none
app('old', 3)   # from the directory: learned at its lookup
res['none'] = [cap('new'), cap('old')]
os.setxattr('new', CAP, V)
res['set'] = cap('new')
app('new')      # the kernel asks, finds it, and removes it (as on ext4)
res['after_write'] = cap('new')
os.setxattr('new', CAP, V)
os.setxattr('old', CAP, V)
res['set_again'] = [cap('new'), cap('old')]
out(res)
`)
  const V = '0100000200200000000000000000000000000000'
  t.same(r, { none: ['ENODATA', 'ENODATA'], set: V, after_write: 'ENODATA', set_again: [V, V] })
  const requests = async (): Promise<number> => ((await m.client.status()).requests ?? {}).getxattr ?? 0
  const cp = await m.client.mark({ label: 'with capabilities' })
  const before = await requests()
  const w = await py(m.dir, prelude + `
app('new', 4)   # the first write drops it; the binding answers the next ones
out([cap('new'), cap('old')])
`)
  t.same(w, ['ENODATA', V], 'a write dropped the capability of the file written, not of the other')
  t.ok(await requests() - before >= 4, 'the kernel still asks before every write (the request counters count it)')
  await m.client.restore({ id: cp.id })
  const back = await py(m.dir, prelude + `
res = [cap('new'), cap('old')]
app('new')
res.append(cap('new'))
out(res)
`)
  t.same(back, [V, V, 'ENODATA'], 'the restore brought the capability back, and the next write drops it again')
})
