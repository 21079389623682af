/**
 * What the libfuse 3 low-level binding (fuse/ll) does to cut the cost per
 * request and per byte, on the in-memory filesystem of
 * test/helpers/memfs-ll.ts: the security.capability answers it gives
 * itself, borrowed write data, the raised readahead window. Each stays
 * exact; every access to the mount runs in a child process (Python).
 */
import t from 'tap'
import { fuseDeviceOf } from '../../fuse/ll/session.js'
import { mountMem, py } from '../helpers/ll-mount.js'
import type { MemFs } from '../helpers/memfs-ll.js'

t.test('capabilityFree: the binding answers getxattr("security.capability") for inodes known to have none, and forgets at a change', async (t) => {
  let mem!: MemFs
  let calls = 0
  const { mnt, s } = await mountMem(t, {
    mount: { entryTimeout: 60, attrTimeout: 60, capabilityFree: (ino) => mem.nodes.get(ino)?.xattrs.has('security.capability') === false },
    wrap: (ops, m) => {
      mem = m
      return { ...ops, getxattr: (r, ino, inc, name) => { if (name.toString() === 'security.capability') calls++; return ops.getxattr!(r, ino, inc, name) } }
    }
  })
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
  const V = '0100000200200000000000000000000000000000'
  const asked = (): number => s.counters().getxattr ?? 0
  t.same(await py(mnt, prelude + "app('f', 10); out(cap('f'))"), 'ENODATA')
  t.ok(asked() >= 10, `the kernel asked before each of the 10 writes (${asked()} getxattr)`)
  t.equal(calls, 0, 'none reached the handler: the create answer said the file has none')
  t.ok(s.stats().capabilityAnswers >= 10, 'the binding answered them')
  t.ok(s.stats().capabilityKnown >= 1)

  const r = await py(mnt, prelude + `
os.setxattr('f', CAP, V)
res = [cap('f')]
app('f')
res.append(cap('f'))
out(res)`)
  t.same(r, [V, 'ENODATA'], 'after a setxattr the handler answers again: it has one, and the write drops it')
  t.ok(calls >= 2, 'the getxattr after the setxattr and the write\'s reached the handler')
  const c1 = calls
  t.same(await py(mnt, prelude + "app('f', 10); out(cap('f'))"), 'ENODATA')
  t.ok(calls - c1 <= 1, `after the removal the handler answered once more at most (${calls - c1}), the binding the rest`)

  // a change behind the kernel, then a notify (what a restore does): the binding forgets what it knew
  const f = [...mem.nodes.values()].find((n) => (n.mode & 0o170000) === 0o100000)!
  f.xattrs.set('security.capability', Buffer.from(V, 'hex'))
  const n = await s.notify([{ kind: 'inode', ino: f.ino }])
  t.ok(n.results[0] === 0 || n.results[0] === -2, `notify ran (${n.results[0]})`)
  t.equal(s.stats().capabilityKnown, 0, 'a notify batch forgets every inode')
  t.same(await py(mnt, prelude + "res = [cap('f')]; app('f'); res.append(cap('f')); out(res)"), [V, 'ENODATA'], 'the capability set behind the kernel is seen, and a write drops it')
  t.same(mem.violations, [])
})

t.test('borrowWriteData: the write handler gets a view of the request that is emptied after it returns; the bytes land exactly', async (t) => {
  const kept: Buffer[] = []
  let seen = 0
  const { mnt, s, logs } = await mountMem(t, {
    mount: { borrowWriteData: true },
    wrap: (ops) => ({ ...ops, write: (r, ino, inc, fh, data, off, fl) => { kept.push(data); seen += data.length; return ops.write!(r, ino, inc, fh, data, off, fl) } })
  })
  // 1 MiB writes (one request each: the cached blocks), small ones, and a last odd one; then read back and compare
  const r = await py(mnt, `
import hashlib, random
random.seed(7)
parts = [random.randbytes(1 << 20) for _ in range(6)] + [random.randbytes(n) for n in (1, 4096, 70000, 123457)]
with open('f', 'wb', buffering=0) as w:
    for p in parts: w.write(p)
want = b''.join(parts)
got = open('f', 'rb').read()
out([len(got), hashlib.sha256(got).hexdigest() == hashlib.sha256(want).hexdigest()])
`)
  t.same(r, [6 * (1 << 20) + 1 + 4096 + 70000 + 123457, true], 'every byte written read back')
  t.equal(seen, 6 * (1 << 20) + 1 + 4096 + 70000 + 123457, 'the handler saw every byte while it ran')
  t.ok(kept.length >= 10)
  t.ok(kept.every((b) => b.length === 0), 'each view is empty once its handler returned (nothing kept can see reused memory)')
  t.same(logs, [])
  t.equal(s.stats().badAnswers, 0)
})

t.test('readahead: the mount\'s window is raised after INIT, and a sequential read then asks for 1 MiB per request (128 KiB without)', async (t) => {
  const sizes = async (readahead: number | undefined): Promise<{ ra: number, largest: number, reads: number }> => {
    let largest = 0; let reads = 0
    const { mnt, s } = await mountMem(t, {
      mount: { readahead },
      wrap: (ops) => ({ ...ops, read: (r, ino, inc, fh, size, off) => { reads++; largest = Math.max(largest, size); return ops.read!(r, ino, inc, fh, size, off) } })
    })
    // written, its pages dropped (the kernel still caches them: keep_cache), then read in 1 MiB calls
    await py(mnt, `
with open('f', 'wb') as w: w.write(os.urandom(8 << 20))
fd = os.open('f', os.O_RDONLY)
os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
while os.read(fd, 1 << 20): pass
os.close(fd)
out(0)`)
    return { ra: s.readahead, largest, reads }
  }
  const plain = await sizes(undefined)
  const raised = await sizes(1 << 20)
  t.equal(plain.ra, 128 * 1024, 'a new FUSE mount starts at the kernel\'s 128 KiB')
  t.equal(plain.largest, 128 * 1024, `so reads come in 128 KiB requests (${plain.reads} for 8 MiB)`)
  t.equal(raised.ra, 1 << 20, 'raised to 1 MiB through the mount\'s backing device')
  t.equal(raised.largest, 1 << 20, `then in 1 MiB requests (${raised.reads} for 8 MiB)`)
  t.ok(raised.reads <= plain.reads / 4)
})

t.test('fuseDeviceOf: the FUSE mount of a path in mountinfo (escaped names, the last of stacked mounts, other types ignored)', async (t) => {
  const info = [
    '22 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw',
    '90 22 0:41 / /tmp/a\\040b rw,nosuid,nodev,relatime shared:50 - fuse.rewindfs rewindfs rw,user_id=0,group_id=0',
    '91 22 0:42 / /tmp/c rw shared:51 - tmpfs tmpfs rw',
    '92 22 0:43 / /tmp/d rw - fuse.rewindfs rewindfs rw',
    '93 92 0:44 / /tmp/d rw - fuse rewindfs rw',
    ''
  ].join('\n')
  t.equal(fuseDeviceOf('/tmp/a b', info), '0:41')
  t.equal(fuseDeviceOf('/tmp/c', info), null, 'not a FUSE mount')
  t.equal(fuseDeviceOf('/tmp/d', info), '0:44', 'the last of two stacked mounts')
  t.equal(fuseDeviceOf('/tmp/none', info), null)
})
