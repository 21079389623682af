/**
 * An old incarnation's private copy without FUSE (fuse/old-incarnation.ts,
 * issue 13): reads through it give the frozen bytes overlaid with the writes
 * made through it, against a plain buffer model, across truncates that cut
 * and extend; the 64 MiB per-incarnation and the shared limits refuse a
 * write with ENOSPC and change nothing; dropping it returns the shared
 * budget and releases the frozen record once. The node id table
 * (fuse/incarnations.ts): renew, forget, faults, and no return to
 * incarnation 0 while a restore's notifications are in flight.
 */
import t from 'tap'
import { OldIncarnation, OLD_WRITE_LIMIT } from '../../fuse/old-incarnation.js'
import { Incarnations } from '../../fuse/incarnations.js'
import type { FrozenInode, Stat } from '../../fs/api.js'

const BLOCK = 65536

function frozenOf (bytes: Buffer, released: { n: number }): FrozenInode {
  const stat: Stat = { mode: 0o100644, uid: 0, gid: 0, size: bytes.length, nlink: 2, ino: 42, rdev: 0, blksize: 4096, blocks: Math.ceil(bytes.length / 512), atime: 1n, mtime: 2n, ctime: 3n }
  return {
    stat,
    links: [[1, 'a'], [1, 'b']],
    target: undefined,
    xattrs: { 'user.k': new Uint8Array([1]) },
    read: (buf, len, pos) => { const end = Math.min(pos + len, bytes.length); if (end <= pos) return 0; return bytes.copy(buf, 0, pos, end) },
    dataRanges: () => bytes.length > 0 ? [[0, bytes.length]] : [],
    release: () => { released.n++ }
  }
}

function readAll (o: OldIncarnation): Buffer {
  const size = o.stat().size
  const b = Buffer.alloc(size + 100)
  return b.subarray(0, o.read(b, size + 100, 0))
}

t.test('reads, writes and truncates against a buffer model', async t => {
  const base = Buffer.alloc(3 * BLOCK + 123)
  for (let i = 0; i < base.length; i++) base[i] = (i * 7) & 0xff
  const released = { n: 0 }
  const budget = { used: 0, limit: 1 << 30 }
  const o = new OldIncarnation(42, 0, frozenOf(base, released), 1, budget)
  let model = Buffer.from(base)
  t.same([o.stat().nlink, o.stat().ino, o.stat().size], [0, 42, base.length], 'nlink 0, its inode number, its size')
  t.ok(readAll(o).equals(model), 'the frozen bytes')
  const steps: Array<[string, () => void, () => void]> = [
    ['a write across a block boundary', () => o.write(Buffer.alloc(100, 1), BLOCK - 50, false, 10n), () => { Buffer.alloc(100, 1).copy(model, BLOCK - 50) }],
    ['an append', () => o.write(Buffer.from('tail'), 0, true, 11n), () => { model = Buffer.concat([model, Buffer.from('tail')]) }],
    ['a truncate into the second block', () => o.setattr({ size: BLOCK + 10 }, 12n), () => { model = model.subarray(0, BLOCK + 10) }],
    ['an extending truncate (zeros, not the old bytes)', () => o.setattr({ size: 3 * BLOCK }, 13n), () => { model = Buffer.concat([model, Buffer.alloc(3 * BLOCK - model.length)]) }],
    ['a write past the end (a hole before it)', () => o.write(Buffer.alloc(10, 9), 5 * BLOCK, false, 14n), () => { model = Buffer.concat([model, Buffer.alloc(5 * BLOCK - model.length), Buffer.alloc(10, 9)]) }],
    ['a truncate to 0 and a write', () => { o.setattr({ size: 0 }, 15n); o.write(Buffer.from('new'), 0, false, 16n) }, () => { model = Buffer.from('new') }]
  ]
  for (const [what, act, mirror] of steps) {
    act(); mirror()
    t.ok(readAll(o).equals(model), `${what}: reads what the model holds (${model.length} bytes)`)
  }
  t.ok(o.written > 0, 'written bytes are counted')
  t.equal(budget.used, o.privateBytes, 'the shared budget holds its private blocks')
  o.drop()
  t.equal(budget.used, 0, 'drop returns them')
  t.equal(released.n, 1, 'and releases the frozen record')
})

t.test('the limits: ENOSPC, and nothing changes', async t => {
  const released = { n: 0 }
  const budget = { used: 0, limit: 1 << 30 }
  const o = new OldIncarnation(42, 0, frozenOf(Buffer.alloc(0), released), 1, budget)
  const big = Buffer.alloc(OLD_WRITE_LIMIT - BLOCK, 5)
  t.equal(o.write(big, 0, false, 1n), big.length, 'up to the per-incarnation limit is taken')
  t.throws(() => o.write(Buffer.alloc(2 * BLOCK, 6), OLD_WRITE_LIMIT - BLOCK, false, 2n), { errno: 28 } as any, 'past it: ENOSPC')
  t.equal(o.stat().size, big.length, 'the refused write changed nothing')
  const shared = { used: 0, limit: 2 * BLOCK }
  const p = new OldIncarnation(43, 1, frozenOf(Buffer.alloc(0), released), 1, shared)
  t.throws(() => p.write(Buffer.alloc(3 * BLOCK), 0, false, 1n), { errno: 28 } as any, 'the shared limit too')
  t.equal(shared.used, 0, 'nothing taken')
  o.drop(); p.drop()
})

t.test('xattrs change privately', async t => {
  const o = new OldIncarnation(42, 0, frozenOf(Buffer.from('x'), { n: 0 }), 1, { used: 0, limit: 1 << 20 })
  t.same(o.listxattr(), ['user.k'])
  o.setxattr('user.n', new Uint8Array([2]), 0, 5n)
  o.removexattr('user.k', 6n)
  t.same(o.listxattr(), ['user.n'], 'set and removed on the old incarnation')
  t.throws(() => o.setxattr('bogus.x', new Uint8Array(0), 0, 7n), { errno: 95 } as any, 'an unknown namespace is refused')
  t.throws(() => o.removexattr('user.none', 8n), { errno: 61 } as any, 'ENODATA for a missing one')
})

t.test('the node id table: renew, forget, back to incarnation 0 only when nothing is held and no restore is in flight', async t => {
  const lines: string[] = []
  const inc = new Incarnations(l => { lines.push(l) })
  const frozen = (): FrozenInode => frozenOf(Buffer.from('old'), { n: 0 })
  t.equal(inc.renew(7, frozen), null, 'an inode the kernel does not hold is not renewed')
  t.equal(inc.lookedUp(7), 0, 'a lookup hands out incarnation 0')
  inc.lookedUp(7)
  inc.opened(100, 7, 0)
  const resume = inc.deferResets()
  const r = inc.renew(7, frozen)
  t.same([r?.old.inc, r?.old.lookups, r?.handles, inc.incarnation(7)], [0, 2, 1, 1], 'renewed: the old node id keeps its 2 lookups and 1 handle, lookups now get incarnation 1')
  t.ok(inc.holds(7, 0) && !inc.holds(7, 1), 'the kernel holds the old node id, not yet the new one')
  t.equal(inc.oldOf(7, 0), r?.old, 'requests naming it go to the old incarnation')
  r!.old.write(Buffer.from('x'), 0, false, 1n)
  inc.released(100)
  t.equal(inc.forget(7, 0, 1), true)
  t.ok(inc.holds(7, 0), 'held until its last forget')
  t.equal(inc.forget(7, 0, 1), true)
  t.notOk(inc.holds(7, 0), 'forgotten')
  t.same([inc.counted().old, inc.counted().oldForgotten, inc.counted().oldWrittenDropped, inc.counted().oldBytesDropped], [0, 1, 1, 1], 'counted: dropped with 1 byte written')
  t.match(lines.join('\n'), /1 bytes written through descriptors opened before a restore, to inode 7/, 'and logged')
  t.equal(inc.incarnation(7), 1, 'nothing of 7 held, but a restore\'s notifications are in flight: it stays at incarnation 1')
  resume()
  t.equal(inc.incarnation(7), 0, 'once they are done it goes back to 0')
  t.equal(inc.forget(7, 3, 1), false, 'a forget of a node id never handed out is a fault')
  inc.lookedUp(8); inc.lookedUp(8)
  t.same(inc.held(), { nodes: 1, lookups: 2 }, 'held node ids and lookups')
})
