/**
 * Checkpoint/restore latency of rewindfs against peers on the same tree, in
 * the same run: a git snapshot (separate GIT_DIR, a native copy as the work
 * tree) and a btrfs read-only subvolume snapshot on a loop-mounted image.
 *
 * For each size (BENCH_SIZES, default 1000,10000,100000 small files, 100 per
 * directory): the tree is created in the lower directory before mounting,
 * listed once through the mount (find), checkpointed once (the base); then
 * BENCH_REPS times (default 9): change 10 files, time mark() from a connected
 * client (websocket round trip, no CLI start-up), time restore() of the base.
 * The same steps run on the peers. Figures are medians; ratios are peer /
 * rewindfs (> 1 means rewindfs is faster). Nothing here is asserted.
 *
 *   npm run bench                    (builds, then node dist/bench/checkpoint.js)
 *   BENCH_SIZES=1000,10000 BENCH_REPS=5 node dist/bench/checkpoint.js
 *   BENCH_NO_BTRFS=1 ...             skip the btrfs peer
 */
import fs from 'node:fs'
import path from 'node:path'
import { spawnSync } from 'node:child_process'
import { Cleanup, mountRewind, tempRoot, now, median, sh, timeSh, fmt, table, machine, isMounted } from './lib.js'

const SIZES = (process.env.BENCH_SIZES ?? '1000,10000,100000').split(',').map(s => Number(s.trim())).filter(n => Number.isInteger(n) && n > 0)
const REPS = Math.max(1, Number(process.env.BENCH_REPS ?? 9))
const CHANGED = 10
const PER_DIR = 100

const cleanup = new Cleanup()

/** relative path of file i */
function rel (i: number): string {
  return path.join(`d${String(Math.floor(i / PER_DIR)).padStart(4, '0')}`, `f${String(i % PER_DIR).padStart(2, '0')}.txt`)
}

function original (i: number): string { return `file ${i}\n${'x'.repeat(64 + (i % 64))}\n` }

function populate (dir: string, n: number): void {
  for (let d = 0; d * PER_DIR < n; d++) fs.mkdirSync(path.join(dir, `d${String(d).padStart(4, '0')}`), { recursive: true })
  for (let i = 0; i < n; i++) fs.writeFileSync(path.join(dir, rel(i)), original(i))
}

/** the 10 files changed in repetition r (spread over the tree) */
function changedSet (n: number, r: number): number[] {
  const out: number[] = []
  for (let k = 0; k < CHANGED; k++) out.push((Math.floor(k * n / CHANGED) + r * 7 + 3) % n)
  return out
}

function change (dir: string, n: number, r: number): number[] {
  const set = changedSet(n, r)
  for (const i of set) fs.writeFileSync(path.join(dir, rel(i)), `changed in repetition ${r}\n${original(i)}`)
  return set
}

function checkRestored (dir: string, set: number[], who: string): void {
  for (const i of set) {
    const got = fs.readFileSync(path.join(dir, rel(i)), 'utf8')
    if (got !== original(i)) { console.log(`  WARNING: ${who}: ${rel(i)} not restored`); return }
  }
}

interface Result { mark: number[], restore: number[], daemonMark?: number[], daemonRestore?: number[], changed?: number[], setup: Record<string, number> }

async function benchRewind (n: number): Promise<Result> {
  const res: Result = { mark: [], restore: [], daemonMark: [], daemonRestore: [], changed: [], setup: {} }
  let t0 = now()
  const m = await mountRewind(cleanup, `ckpt${n}`, dir => populate(dir, n))
  res.setup['populate+mount ms'] = now() - t0
  try {
    t0 = now()
    const count = Number(sh(`find ${JSON.stringify(m.dir)} | wc -l`).trim())
    res.setup['find through mount ms'] = now() - t0
    if (count < n) throw new Error(`find listed ${count} entries, expected at least ${n}`)
    t0 = now()
    const base = await m.client.mark({ label: 'base' })
    res.setup['first mark ms'] = now() - t0
    for (let r = 0; r < REPS; r++) {
      const set = change(m.dir, n, r)
      t0 = now()
      const info = await m.client.mark({ label: `rep ${r}` })
      res.mark.push(now() - t0)
      res.daemonMark!.push(info.ms)
      t0 = now()
      const ri = await m.client.restore({ id: base.id })
      res.restore.push(now() - t0)
      res.daemonRestore!.push(ri.ms)
      res.changed!.push(ri.changed)
      checkRestored(m.dir, set, 'rewindfs')
    }
  } finally {
    await m.close()
  }
  return res
}

function benchGit (n: number): Result {
  const res: Result = { mark: [], restore: [], setup: {} }
  const root = tempRoot(`git${n}`)
  const done = cleanup.push(`git temp ${root}`, () => fs.rmSync(root, { recursive: true, force: true }))
  try {
    const tree = path.join(root, 'tree')
    fs.mkdirSync(tree)
    populate(tree, n)
    const env = { ...process.env, GIT_DIR: path.join(root, 'git'), GIT_WORK_TREE: tree, GIT_AUTHOR_NAME: 'bench', GIT_AUTHOR_EMAIL: 'bench@localhost', GIT_COMMITTER_NAME: 'bench', GIT_COMMITTER_EMAIL: 'bench@localhost' }
    sh('git init -q && git config gc.auto 0', { env, cwd: tree })
    res.setup['first commit ms'] = timeSh('git add -A && git commit -q -m base', { env, cwd: tree })
    const base = sh('git rev-parse HEAD', { env, cwd: tree }).trim()
    for (let r = 0; r < REPS; r++) {
      const set = change(tree, n, r)
      res.mark.push(timeSh(`git add -A && git commit -q -m 'rep ${r}'`, { env, cwd: tree }))
      res.restore.push(timeSh(`git reset -q --hard ${base} && git clean -fdxq`, { env, cwd: tree }))
      checkRestored(tree, set, 'git')
    }
  } finally {
    void done()
  }
  return res
}

/** A loop-mounted btrfs image shared by all sizes; null (with a printed note) when it cannot be set up. */
function setupBtrfs (): string | null {
  if (process.env.BENCH_NO_BTRFS) { console.log('note: btrfs peer skipped (BENCH_NO_BTRFS)'); return null }
  try {
    if (spawnSync('bash', ['-c', 'command -v mkfs.btrfs && command -v btrfs'], { stdio: 'ignore' }).status !== 0) {
      console.log('note: installing btrfs-progs (apt-get install -y btrfs-progs)')
      sh('DEBIAN_FRONTEND=noninteractive apt-get install -y -qq btrfs-progs >/dev/null 2>&1 || (apt-get update -qq >/dev/null 2>&1 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq btrfs-progs >/dev/null)', { timeoutMs: 300000 })
    }
    const root = tempRoot('btrfs')
    cleanup.push(`btrfs temp ${root}`, () => fs.rmSync(root, { recursive: true, force: true }))
    const img = path.join(root, 'btrfs.img')
    const mnt = path.join(root, 'mnt')
    fs.mkdirSync(mnt)
    sh(`truncate -s 8G ${img}`)
    const loop = sh(`losetup --find --show ${img}`).trim()
    cleanup.push(`loop device ${loop}`, () => { spawnSync('losetup', ['-d', loop], { stdio: 'ignore' }) })
    sh(`mkfs.btrfs -q -f ${loop}`)
    sh(`mount -t btrfs ${loop} ${mnt}`)
    cleanup.push(`btrfs mount ${mnt}`, () => {
      if (spawnSync('umount', [mnt], { stdio: 'ignore' }).status !== 0 && isMounted(mnt)) spawnSync('umount', ['-l', mnt], { stdio: 'ignore' })
    })
    return mnt
  } catch (e) {
    console.log(`note: btrfs peer skipped, it could not be set up: ${String(e).split('\n').slice(0, 2).join(' ')}`)
    return null
  }
}

function benchBtrfs (mnt: string, n: number): Result {
  const res: Result = { mark: [], restore: [], setup: {} }
  const top = path.join(mnt, `n${n}`)
  fs.mkdirSync(top)
  const work = path.join(top, 'work')
  try {
    sh(`btrfs -q subvolume create ${work}`)
    populate(work, n)
    res.setup['first snapshot ms (incl. sync)'] = timeSh(`sync -f ${work} && btrfs -q subvolume snapshot -r ${work} ${top}/base`)
    for (let r = 0; r < REPS; r++) {
      const set = change(work, n, r)
      res.mark.push(timeSh(`btrfs -q subvolume snapshot -r ${work} ${top}/rep${r}`))
      res.restore.push(timeSh(`btrfs -q subvolume delete ${work} && btrfs -q subvolume snapshot ${top}/base ${work}`))
      checkRestored(work, set, 'btrfs')
    }
  } finally {
    spawnSync('bash', ['-c', `for s in ${top}/*; do btrfs -q subvolume delete "$s"; done; rm -rf ${top}`], { stdio: 'ignore' })
  }
  return res
}

async function main (): Promise<void> {
  const started = now()
  console.log(`rewindfs checkpoint bench — ${new Date().toISOString()}`)
  console.log(`machine: ${machine()}`)
  console.log(`sizes: ${SIZES.join(', ')} files (${PER_DIR} per directory), ${CHANGED} files changed per repetition, ${REPS} repetitions, medians\n`)
  const btrfs = setupBtrfs()
  const rows: string[][] = []
  const detail: string[][] = []
  let target: { mark: number, restore: number } | null = null
  for (const n of SIZES) {
    console.log(`== ${n} files`)
    const rw = await benchRewind(n)
    console.log(`  rewindfs: mark ${rw.mark.map(x => x.toFixed(1)).join(' ')} | restore ${rw.restore.map(x => x.toFixed(1)).join(' ')} ms`)
    const git = benchGit(n)
    console.log(`  git:      ckpt ${git.mark.map(x => x.toFixed(1)).join(' ')} | restore ${git.restore.map(x => x.toFixed(1)).join(' ')} ms`)
    const bt = btrfs ? benchBtrfs(btrfs, n) : null
    if (bt) console.log(`  btrfs:    ckpt ${bt.mark.map(x => x.toFixed(1)).join(' ')} | restore ${bt.restore.map(x => x.toFixed(1)).join(' ')} ms`)
    const rm = median(rw.mark); const rr = median(rw.restore)
    const gm = median(git.mark); const gr = median(git.restore)
    const bm = bt ? median(bt.mark) : NaN; const br = bt ? median(bt.restore) : NaN
    rows.push([String(n), fmt(rm, 2), fmt(rr, 2), fmt(gm), fmt(gr), fmt(bm), fmt(br),
      `${fmt(gm / rm)}× / ${fmt(gr / rr)}×`, bt ? `${fmt(bm / rm)}× / ${fmt(br / rr)}×` : '–'])
    const setup = Object.entries({ ...rw.setup }).map(([k, v]) => `${k} ${fmt(v, 0)}`).join(', ')
    detail.push([String(n), fmt(median(rw.daemonMark!), 2), fmt(median(rw.daemonRestore!), 2), String(median(rw.changed!)), setup,
      `git first commit ${fmt(git.setup['first commit ms'], 0)}`])
    if (n === 100000) target = { mark: rm, restore: rr }
  }
  console.log('\nCheckpoint / restore, median ms (wall clock at the caller: websocket round trip for rewindfs, process run for git and btrfs); ratio = peer / rewindfs\n')
  console.log(table(['files', 'rewindfs mark', 'rewindfs restore', 'git ckpt', 'git restore', 'btrfs ckpt', 'btrfs restore', 'git/rewindfs (ckpt / restore)', 'btrfs/rewindfs (ckpt / restore)'], rows))
  console.log('\nrewindfs detail: time inside the daemon (reply .ms), inodes swapped by restore, set-up\n')
  console.log(table(['files', 'daemon mark ms', 'daemon restore ms', 'restore changed', 'rewindfs set-up (ms)', 'peer set-up (ms)'], detail))
  if (target) {
    console.log(`\ntargets at 100,000 files with ${CHANGED} changed: checkpoint < 5 ms: ${target.mark < 5 ? 'MET' : 'NOT MET'} (${fmt(target.mark, 2)} ms); restore < 50 ms: ${target.restore < 50 ? 'MET' : 'NOT MET'} (${fmt(target.restore, 2)} ms)`)
  } else {
    console.log('\ntargets (100,000 files): not measured in this run (BENCH_SIZES has no 100000)')
  }
  console.log(`\ntotal bench time ${((now() - started) / 1000).toFixed(0)} s`)
}

main().then(() => cleanup.run(), async (e) => {
  console.error(e)
  await cleanup.run()
  process.exitCode = 1
})
