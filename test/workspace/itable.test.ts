/**
 * The persistent inode table: path copying leaves old tables untouched,
 * differences() equals a brute-force comparison, and persisted tables load
 * back lazily and exactly.
 */
import t from 'tap'
import { applyChanges, differences, emptyTable, lookup, persist, loadRoot, loadDifferences, loadAll, allRecords, type TableNode } from '../../fs/itable.js'
import type { InodeRecord } from '../../fs/inode.js'

function rec (ino: number, v: number): InodeRecord {
  return { ino, mode: 0o100644, uid: 0, gid: 0, rdev: 0, size: v, atime: 0n, mtime: 0n, ctime: 0n, links: [] }
}

function rng (seed: number): () => number {
  return () => { seed = (seed + 0x6D2B79F5) | 0; let x = Math.imul(seed ^ (seed >>> 15), 1 | seed); x ^= x + Math.imul(x ^ (x >>> 7), 61 | x); return ((x ^ (x >>> 14)) >>> 0) / 4294967296 }
}

t.test('path copying: old tables are unchanged, unchanged subtrees shared', async t => {
  const t0 = applyChanges(emptyTable(), new Map([[1, rec(1, 1)], [2, rec(2, 2)], [70000, rec(70000, 3)]]))
  const t1 = applyChanges(t0, new Map([[2, rec(2, 20)], [1, null]]))
  t.equal(lookup(t0, 1)?.size, 1)
  t.equal(lookup(t0, 2)?.size, 2)
  t.equal(lookup(t1, 1), undefined)
  t.equal(lookup(t1, 2)?.size, 20)
  t.equal(lookup(t1, 70000), lookup(t0, 70000), 'untouched record is the same object')
  t.equal((t1.kids[0] as TableNode).kids[1], (t0.kids[0] as TableNode).kids[1], 'the subtree of ino 70000 is shared')
  t.same([...differences(t0, t1)].sort((a, b) => a - b), [1, 2])
})

t.test('differences equals brute force over random changes', async t => {
  const r = rng(7)
  const model = new Map<number, number>()
  let table = emptyTable()
  const history: Array<[TableNode, Map<number, number>]> = []
  for (let step = 0; step < 60; step++) {
    const changes = new Map<number, InodeRecord | null>()
    for (let i = 0; i < 20; i++) {
      const ino = 1 + Math.floor(r() * 5000) * (r() < 0.1 ? 977 : 1)
      if (r() < 0.3 && model.has(ino)) { changes.set(ino, null); model.delete(ino) } else { const v = Math.floor(r() * 1e6); changes.set(ino, rec(ino, v)); model.set(ino, v) }
    }
    table = applyChanges(table, changes)
    history.push([table, new Map(model)])
  }
  let missing = 0; let spurious = 0; let compared = 0
  for (let k = 0; k < 30; k++) {
    const [ta, ma] = history[Math.floor(r() * history.length)]
    const [tb, mb] = history[Math.floor(r() * history.length)]
    const want = new Set<number>()
    for (const ino of new Set([...ma.keys(), ...mb.keys()])) if (ma.get(ino) !== mb.get(ino)) want.add(ino)
    const got = differences(ta, tb)
    for (const ino of want) if (!got.has(ino)) missing++
    // a difference is spurious when both tables hold the very same record (or both none)
    for (const ino of got) if (lookup(ta, ino) === lookup(tb, ino)) spurious++
    compared += want.size
  }
  t.equal(missing, 0, 'every inode whose record differs is reported')
  t.equal(spurious, 0, 'no inode with the same record on both sides is reported')
  t.ok(compared > 0, 'the random pairs had differences to find')
})

t.test('persist and load: lazy, exact, only new nodes written', async t => {
  const nodes = new Map<number, any>()
  let next = 1
  const sink = { nextId: () => next++, putNode: (id: number, v: any) => nodes.set(id, v), putRecord: (id: number, r: InodeRecord) => nodes.set(id, { ...r }) }
  const src = { loadNode: async (id: number) => nodes.get(id), loadRecord: async (id: number) => ({ ...nodes.get(id) }) }
  const changes = new Map<number, InodeRecord>()
  for (let i = 1; i <= 3000; i++) changes.set(i * 37, rec(i * 37, i))
  const t0 = applyChanges(emptyTable(), changes)
  const id0 = persist(t0, sink)
  const written0 = nodes.size
  const t1 = applyChanges(t0, new Map([[37, rec(37, 999)]]))
  const id1 = persist(t1, sink)
  t.ok(nodes.size - written0 <= 5, `one change writes at most 4 nodes + 1 record (wrote ${nodes.size - written0})`)
  t.equal(persist(t1, sink), id1, 'persisting again writes nothing')
  const cacheN = new Map(); const cacheR = new Map()
  const l0 = await loadRoot(src, id0, cacheN)
  await loadAll(src, l0, cacheN, cacheR)
  t.equal([...allRecords(l0)].length, 3000, 'all records load')
  const l1 = await loadRoot(src, id1, cacheN)
  await loadDifferences(src, l0, l1, cacheN, cacheR)
  t.same([...differences(l0, l1)], [37], 'difference found between loaded tables')
  t.equal(lookup(l1, 37)?.size, 999)
  t.equal(lookup(l0, 37)?.size, 1)
})
