/**
 * The per-path history index (store format 5, fs/history/path-index.ts):
 *
 *  - the frozen format-4 store test/fixtures/store-format4 (written by
 *    f0212c1, test/fixtures/make-store-format4.sh) opens, migrates to 5,
 *    is backfilled (every checkpoint with a parent covered), and answers
 *    each path's history, on the lineage and on all branches, exactly as
 *    the walk of that old code did (its history.json) and as the walk of
 *    this code does;
 *  - property: random workspaces (files, directories, renames of both,
 *    deletes and re-creation, attribute changes, hard links, restores that
 *    start branches, selective restores, reopens of the store) where the
 *    index's answer equals the walk's for every path, on the lineage and on
 *    all branches, and the index leaves checkpoints out;
 *  - garbage collection that gives a checkpoint a new parent indexes it
 *    again and deletes the dropped checkpoints' keys; a checkpoint the index
 *    does not cover is examined, and the next open indexes it.
 */
import t, { type Test } from 'tap'
import fs from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { tempRoot, open, write, me } from '../helpers/workspace.js'
import { StoreDb, STORE_FORMAT } from '../../store/db.js'
import { candidates, covered } from '../../fs/history/path-index.js'
import { collectGarbage } from '../../fs/maint/gc.js'
import type { Generations } from '../../fs/history/generations.js'
import type { Workspace } from '../../fs/workspace.js'

const FIXTURE4 = fileURLToPath(new URL('../../../test/fixtures/store-format4', import.meta.url))
const noInvalidate = async (): Promise<void> => {}

/** Index and walk answers for `paths`, lineage and all; each mismatch is one failed assertion naming the path. */
async function compareAll (t: Test, gens: Generations, ws: Workspace, paths: Iterable<string>, what: string): Promise<number> {
  let n = 0
  for (const p of paths) {
    for (const all of [false, true]) {
      const walk = await gens.history(ws, p, { all, index: false, limit: 100000 })
      const idx = await gens.history(ws, p, { all, limit: 100000 })
      if (JSON.stringify(idx) !== JSON.stringify(walk)) t.same(idx, walk, `${what}: /${p}${all ? ' (all branches)' : ''}: the index answers as the walk`)
      n++
    }
  }
  return n
}

t.test('a format-4 store migrates to 5, is backfilled, and answers history as the old walk did', async t => {
  const { root, lowerDir } = tempRoot(t, 'rewindfs-hindex4-')
  fs.mkdirSync(path.join(root, 'store'))
  for (const d of ['meta', 'packs']) fs.cpSync(path.join(FIXTURE4, d), path.join(root, 'store', d), { recursive: true })
  fs.cpSync(path.join(FIXTURE4, 'ws'), lowerDir, { recursive: true })
  const before = await StoreDb.open(path.join(root, 'store'))
  t.equal(STORE_FORMAT, 5)
  t.equal(await before.get('meta', 'format'), 5, 'opening raises the format to 5')
  let keys = 0
  for await (const _ of before.keys('hist')) keys++
  t.equal(keys, 0, 'the migration step itself writes no key (the backfill is fs/history\'s)')
  await before.close()
  const s = await open(root, lowerDir)
  t.teardown(s.close)
  const cps = [...s.gens.checkpoints.values()]
  t.equal(cps.length, 8, 'the fixture\'s 8 checkpoints')
  t.ok(cps.every(c => c.calls === undefined), 'a store written before attribution has no calls (its checkpoints are not attributed; nothing to migrate)')
  t.same(cps.filter(c => c.parent !== null && !covered(s.gens, c)).map(c => c.id), [], 'the backfill covers every checkpoint with a parent')
  for await (const _ of s.db.keys('hist')) keys++
  t.ok(keys > 20, `the backfill wrote index keys (${keys})`)
  const frozen = JSON.parse(fs.readFileSync(path.join(FIXTURE4, 'history.json'), 'utf8')) as Record<string, { lineage: unknown[], all: unknown[] }>
  t.equal(Object.keys(frozen).length, 14)
  for (const [p, want] of Object.entries(frozen)) {
    t.same(await s.gens.history(s.ws, p, { limit: 1000 }), want.lineage, `/${p}: as format-4 rewindfs answered, on the lineage`)
    t.same(await s.gens.history(s.ws, p, { all: true, limit: 1000 }), want.all, `/${p}: and on all branches`)
  }
  t.equal(await compareAll(t, s.gens, s.ws, Object.keys(frozen), 'fixture'), 28)
  const cand = await candidates(s.gens, 'before.txt')
  t.notOk(cand.has(6), 'the index leaves out a checkpoint that did not touch the path')
})

/** A small deterministic PRNG (mulberry32). */
function rng (seed: number): (n: number) => number {
  let a = seed >>> 0
  return (n: number) => {
    a = (a + 0x6D2B79F5) >>> 0
    let x = a
    x = Math.imul(x ^ (x >>> 15), x | 1)
    x ^= x + Math.imul(x ^ (x >>> 7), x | 61)
    return (((x ^ (x >>> 14)) >>> 0) % n)
  }
}

const DIRS = ['d', 'e', 'd/s', 'e/s', 'd/s/t']
const NAMES = ['a', 'b', 'c']
const universe = (): string[] => {
  const out = new Set<string>(['', ...DIRS])
  for (const d of ['', ...DIRS]) for (const n of NAMES) out.add(d === '' ? n : `${d}/${n}`)
  return [...out]
}

/** One random change of the workspace; failures (ENOENT, EEXIST, ENOTEMPTY...) are part of the game and change nothing. */
function step (ws: Workspace, r: (n: number) => number, k: number): void {
  const file = (): string => { const d = ['', ...DIRS][r(DIRS.length + 1)]!; return `/${d === '' ? '' : d + '/'}${NAMES[r(NAMES.length)]}` }
  const dir = (): string => `/${DIRS[r(DIRS.length)]}`
  try {
    switch (r(10)) {
      case 0: case 1: case 2: write(ws, file(), `v${k} `.repeat(1 + r(5))); break
      case 3: ws.unlink(file()); break
      case 4: ws.rename(file(), file()); break
      case 5: ws.mkdir(dir(), 0o755, me); break
      case 6: ws.rename(dir(), dir()); break
      case 7: ws.chmod(file(), 0o600 + r(0o100)); break
      case 8: ws.link(file(), file()); break
      case 9: ws.rmdir(dir()); break
    }
  } catch {}
}

t.test('property: the index answers every path as the walk does', async t => {
  let compared = 0
  for (const seed of [1, 2, 3, 4]) {
    const { root, lowerDir } = tempRoot(t, `rewindfs-hindex-${seed}-`)
    // a lower layer too: a directory never listed, a file in it
    fs.mkdirSync(path.join(lowerDir, 'd')); fs.writeFileSync(path.join(lowerDir, 'd', 'a'), 'lower\n')
    fs.mkdirSync(path.join(lowerDir, 'e')); fs.writeFileSync(path.join(lowerDir, 'e', 'b'), 'lower b\n')
    const r = rng(seed)
    let s = await open(root, lowerDir)
    const ids: number[] = [(await s.gens.mark(s.ws, { label: 'start' })).id]
    for (let k = 0; k < 60; k++) {
      for (let i = r(4); i >= 0; i--) step(s.ws, r, k)
      const what = r(12)
      if (what === 0 && ids.length > 1) {
        await s.gens.restore(s.ws, ids[r(ids.length)]!, noInvalidate) // a branch
      } else if (what === 1 && ids.length > 1) {
        const p = universe()[1 + r(universe().length - 1)]!
        await s.gens.restorePaths(s.ws, ids[r(ids.length)]!, [{ path: p }], noInvalidate).catch(() => {})
      } else if (what === 2) {
        ids.push((await s.gens.mark(s.ws, { label: `before reopen ${k}` })).id)
        await s.close()
        s = await open(root, lowerDir) // as a remount: the store read afresh
      } else {
        ids.push((await s.gens.mark(s.ws, { label: `step ${k}` })).id)
      }
      if (k % 20 === 19) compared += await compareAll(t, s.gens, s.ws, universe(), `seed ${seed} step ${k}`)
    }
    const all = [...s.gens.checkpoints.values()]
    t.ok(all.filter(c => c.parent !== null).every(c => covered(s.gens, c)), `seed ${seed}: every checkpoint with a parent is covered (${all.length})`)
    const c = await candidates(s.gens, 'e/s/c')
    t.ok(c.size < all.length, `seed ${seed}: the index names ${c.size} of ${all.length} checkpoints for /e/s/c`)
    await s.close()
  }
  t.ok(compared >= 4 * 3 * universe().length * 2, `${compared} answers compared`)
})

t.test('gc gives a checkpoint a new parent: it is indexed again, the dropped keys go, answers stay exact', async t => {
  const { root, lowerDir } = tempRoot(t, 'rewindfs-hindex-gc-')
  let s = await open(root, lowerDir)
  write(s.ws, '/a', '1'); s.ws.mkdir('/d', 0o755, me); write(s.ws, '/d/x', 'x1')
  const c1 = await s.gens.mark(s.ws, {})
  write(s.ws, '/a', '2') // only in the segment gc drops
  s.ws.rename('/d/x', '/d/y')
  await s.gens.mark(s.ws, {})
  write(s.ws, '/b', 'b')
  const c3 = await s.gens.mark(s.ws, {})
  await s.gens.pin(c3.id, true) // kept, on a branch left behind: its parent goes
  await s.gens.restore(s.ws, c1.id, noInvalidate)
  write(s.ws, '/c', 'c')
  const last = await s.gens.mark(s.ws, {})
  await collectGarbage({ db: s.db, blocks: s.blocks, gens: s.gens, ws: s.ws, storeDir: s.store }, { keepLast: 1, abandonedAfterMs: 0, runIdleMs: 0 })
  t.equal(s.gens.checkpoints.get(c3.id)?.parent, c1.id, 'gc gave the pinned checkpoint its nearest kept ancestor as parent')
  t.ok(covered(s.gens, s.gens.checkpoint(c3.id)), 'gc indexed it against its new parent')
  let stale = 0
  for await (const k of s.db.keys('hist')) if (!s.gens.checkpoints.has(parseInt(k.slice(-16), 16))) stale++
  t.equal(stale, 0, 'no index key of a dropped checkpoint is left')
  const paths = ['', 'a', 'b', 'c', 'd', 'd/x', 'd/y']
  await compareAll(t, s.gens, s.ws, paths, 'after gc')
  // a checkpoint the index does not cover (as gc of an older rewindfs leaves it) is examined by every query
  const cp3 = s.gens.checkpoint(c3.id)
  s.gens.checkpoints.set(c3.id, { ...cp3, hist: 999 })
  t.notOk(covered(s.gens, s.gens.checkpoint(c3.id)), 'indexed against another parent: not covered')
  await compareAll(t, s.gens, s.ws, paths, 'uncovered')
  await s.db.batch().put('checkpoint', c3.id, { ...cp3, hist: 999 }).write()
  t.same((await s.gens.history(s.ws, 'a', { all: true })).map(e => e.checkpoint), [c3.id, c1.id], '/a changed in the dropped segment: shown at the checkpoint that now ends it')
  await s.close()
  s = await open(root, lowerDir)
  t.teardown(s.close)
  t.ok(covered(s.gens, s.gens.checkpoint(c3.id)), 'the next open indexed it again')
  await compareAll(t, s.gens, s.ws, paths, 'after reopen')
  t.same((await s.gens.history(s.ws, 'd/y', { all: true })).map(e => e.checkpoint), [c3.id], '/d/y: added at the checkpoint that now ends the segment')
  t.equal(s.gens.state.head, last.id)
})
