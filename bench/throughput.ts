/**
 * Throughput of the rewindfs mount against the native directory and a bare
 * fuse-native passthrough (bench/passthrough.ts, separate process, same
 * binding and mount options as fuse/adapter.ts). Same workloads, same run,
 * interleaved per round (native, passthrough, rewindfs), medians over
 * BENCH_ROUNDS (default 3). Nothing here is asserted.
 *
 * Workloads: git clone / status / add+commit on a clone of this repository,
 * npm install of a small package set (warm npm cache, lock file given),
 * creating 10,000 small files, a 1 GiB sequential write of random bytes
 * (dd bs=1M conv=fsync) and its read after drop_caches.
 *
 *   node dist/bench/throughput.js
 *   BENCH_ROUNDS=1 BENCH_SKIP=npm,dd node dist/bench/throughput.js
 */
import fs from 'node:fs'
import path from 'node:path'
import { spawn, type ChildProcess } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { Cleanup, mountRewind, tempRoot, now, median, sh, timeSh, fmt, table, machine, forceUnmount, isMounted, alive, sleep } from './lib.js'

const here = path.dirname(fileURLToPath(import.meta.url))
const REPO = path.resolve(here, '../..')
const ROUNDS = Math.max(1, Number(process.env.BENCH_ROUNDS ?? 3))
const SKIP = new Set((process.env.BENCH_SKIP ?? '').split(',').map(s => s.trim()).filter(Boolean))
const BIG_MIB = Number(process.env.BENCH_BIG_MIB ?? 1024)
const SMALL_FILES = 10000

/** A small package set already in this project's lock (so the npm cache is warm). */
const NPM_DEPS = ['commander', 'ws', 'msgpackr', 'xxhash-wasm', 'typescript', '@types/node', '@types/ws']

const cleanup = new Cleanup()

interface Target { name: string, dir: string }

async function startPassthrough (): Promise<Target> {
  const root = tempRoot('pt')
  const src = path.join(root, 'src'); const mnt = path.join(root, 'mnt')
  fs.mkdirSync(src); fs.mkdirSync(mnt)
  const child: ChildProcess = spawn(process.execPath, [path.join(here, 'passthrough.js'), src, mnt], { stdio: ['pipe', 'pipe', 'inherit'] })
  cleanup.push(`passthrough ${mnt}`, async () => {
    if (alive(child)) {
      child.kill('SIGTERM')
      const deadline = Date.now() + 10000
      while (Date.now() < deadline && alive(child)) await sleep(25)
      if (alive(child)) child.kill('SIGKILL')
    }
    forceUnmount(mnt)
    fs.rmSync(root, { recursive: true, force: true })
  })
  await new Promise<void>((resolve, reject) => {
    let out = ''
    child.stdout!.on('data', (d: Buffer) => { out += d.toString(); if (out.includes('ready')) resolve() })
    child.once('exit', (code) => reject(new Error(`passthrough exited (${code}) before mounting`)))
    setTimeout(() => reject(new Error('passthrough did not mount within 30 s')), 30000).unref()
  })
  if (!isMounted(mnt)) throw new Error('passthrough reported ready but is not mounted')
  return { name: 'passthrough', dir: mnt }
}

function dropCaches (): void { sh('sync && echo 3 > /proc/sys/vm/drop_caches') }

type Workload = { name: string, unit: 's' | 'MB/s', group: string, prep?: (base: string) => void, run: (base: string) => number }

function workloads (fixtures: { bare: string, npm: string, big: string }): Workload[] {
  const gitEnv = { ...process.env, GIT_AUTHOR_NAME: 'bench', GIT_AUTHOR_EMAIL: 'bench@localhost', GIT_COMMITTER_NAME: 'bench', GIT_COMMITTER_EMAIL: 'bench@localhost' }
  return [
    { name: 'git clone (this repo, no hardlinks)', unit: 's', group: 'git', run: base => timeSh(`git clone -q --no-hardlinks ${fixtures.bare} ${base}/repo && git -C ${base}/repo config gc.auto 0`) / 1000 },
    { name: 'git status, 1st', unit: 's', group: 'git', run: base => timeSh('git status --porcelain >/dev/null', { cwd: `${base}/repo` }) / 1000 },
    { name: 'git status, 2nd', unit: 's', group: 'git', run: base => timeSh('git status --porcelain >/dev/null', { cwd: `${base}/repo` }) / 1000 },
    {
      name: 'git add -A + commit (every tracked file changed)', unit: 's', group: 'git',
      prep: base => { for (const f of sh('git ls-files -z', { cwd: `${base}/repo` }).split('\0').filter(Boolean)) { const p = path.join(base, 'repo', f); if (fs.lstatSync(p).isFile()) fs.appendFileSync(p, '\n// bench\n') } },
      run: base => timeSh('git add -A && git commit -q -m bench', { cwd: `${base}/repo`, env: gitEnv }) / 1000
    },
    {
      name: `npm install (${NPM_DEPS.length} packages, warm cache)`, unit: 's', group: 'npm',
      prep: base => { fs.mkdirSync(`${base}/npm`); for (const f of ['package.json', 'package-lock.json']) fs.copyFileSync(path.join(fixtures.npm, f), `${base}/npm/${f}`) },
      run: base => timeSh('npm install --prefer-offline --no-audit --no-fund --loglevel=error >/dev/null', { cwd: `${base}/npm` }) / 1000
    },
    {
      name: `create ${SMALL_FILES} files × 4 KiB (100 dirs)`, unit: 's', group: 'small',
      run: base => {
        const buf = Buffer.alloc(4096, 'a')
        const t0 = now()
        for (let d = 0; d < SMALL_FILES / 100; d++) {
          const dir = path.join(base, 'small', `d${d}`)
          fs.mkdirSync(dir, { recursive: true })
          for (let i = 0; i < 100; i++) fs.writeFileSync(path.join(dir, `f${i}`), buf)
        }
        return (now() - t0) / 1000
      }
    },
    { name: `seq write ${BIG_MIB} MiB (dd bs=1M conv=fsync, random bytes)`, unit: 'MB/s', group: 'dd', run: base => BIG_MIB * 1.048576 / (timeSh(`dd if=${fixtures.big} of=${base}/big bs=1M conv=fsync status=none`) / 1000) },
    { name: `seq read ${BIG_MIB} MiB, cold (after drop_caches)`, unit: 'MB/s', group: 'dd', prep: () => dropCaches(), run: base => BIG_MIB * 1.048576 / (timeSh(`dd if=${base}/big of=/dev/null bs=1M status=none`) / 1000) }
  ]
}

async function main (): Promise<void> {
  const started = now()
  console.log(`rewindfs throughput bench — ${new Date().toISOString()}`)
  console.log(`machine: ${machine()}`)
  console.log(`${ROUNDS} rounds, interleaved (native, passthrough, rewindfs), medians${SKIP.size ? `; skipped: ${[...SKIP].join(', ')}` : ''}\n`)

  // fixtures, native, shared by all targets
  const fx = tempRoot('fixtures')
  cleanup.push(`fixtures ${fx}`, () => fs.rmSync(fx, { recursive: true, force: true }))
  const bare = path.join(fx, 'repo.git')
  sh(`git clone -q --bare ${REPO} ${bare}`)
  const npmDir = path.join(fx, 'npm')
  fs.mkdirSync(npmDir)
  const lock = JSON.parse(fs.readFileSync(path.join(REPO, 'package-lock.json'), 'utf8'))
  const deps: Record<string, string> = {}
  for (const d of NPM_DEPS) deps[d] = lock.packages?.[`node_modules/${d}`]?.version ?? '*'
  fs.writeFileSync(path.join(npmDir, 'package.json'), JSON.stringify({ name: 'bench-npm', version: '1.0.0', private: true, dependencies: deps }, null, 2))
  if (!SKIP.has('npm')) {
    console.log(`npm set: ${Object.entries(deps).map(([k, v]) => `${k}@${v}`).join(' ')}; warming the cache natively`)
    sh('npm install --prefer-offline --no-audit --no-fund --loglevel=error >/dev/null', { cwd: npmDir })
    fs.rmSync(path.join(npmDir, 'node_modules'), { recursive: true, force: true })
  }
  const big = path.join(fx, 'big.bin')
  if (!SKIP.has('dd')) sh(`head -c ${BIG_MIB}M /dev/urandom > ${big}`)

  const nativeRoot = tempRoot('native')
  cleanup.push(`native ${nativeRoot}`, () => fs.rmSync(nativeRoot, { recursive: true, force: true }))
  const targets: Target[] = [{ name: 'native', dir: nativeRoot }, await startPassthrough()]
  const rw = await mountRewind(cleanup, 'tput')
  targets.push({ name: 'rewindfs', dir: rw.dir })

  const ws = workloads({ bare, npm: npmDir, big }).filter(w => !SKIP.has(w.group))
  const results = new Map<string, Map<string, number[]>>()
  for (const w of ws) results.set(w.name, new Map(targets.map(t => [t.name, []])))
  for (let r = 0; r < ROUNDS; r++) {
    // rotate the order per round so no target always runs first
    const order = targets.map((_, i) => targets[(i + r) % targets.length])
    for (const group of [...new Set(ws.map(w => w.group))]) {
      for (const t of order) {
        const base = path.join(t.dir, `r${r}-${group}`)
        fs.mkdirSync(base)
        try {
          for (const w of ws.filter(x => x.group === group)) {
            w.prep?.(base)
            const v = w.run(base)
            results.get(w.name)!.get(t.name)!.push(v)
            console.log(`  round ${r + 1} ${t.name.padEnd(11)} ${w.name}: ${fmt(v)} ${w.unit}`)
          }
        } catch (e) {
          console.log(`  round ${r + 1} ${t.name}: ${group} FAILED: ${String(e).split('\n').slice(0, 3).join(' | ')}`)
        } finally {
          const t0 = now()
          sh(`rm -rf ${base}`)
          if (group === 'dd' || group === 'npm' || group === 'small') console.log(`  round ${r + 1} ${t.name.padEnd(11)} (rm -rf ${group}: ${fmt((now() - t0) / 1000)} s)`)
        }
      }
    }
  }

  const rows: string[][] = []
  for (const w of ws) {
    const m = results.get(w.name)!
    const [n, p, x] = ['native', 'passthrough', 'rewindfs'].map(k => median(m.get(k)!))
    // speed fraction: time ratio inverted for seconds, direct for MB/s
    const frac = (a: number, b: number): number => w.unit === 's' ? b / a : a / b
    const rp = frac(x, p)
    rows.push([w.name, w.unit, fmt(n), fmt(p), fmt(x), `${(frac(p, n) * 100).toFixed(0)}%`, `${(frac(x, n) * 100).toFixed(0)}%`,
      Number.isFinite(rp) ? `${(rp * 100).toFixed(0)}%${rp >= 0.7 ? '' : ' (below 70%)'}` : '–'])
  }
  console.log(`\nThroughput, medians of ${ROUNDS} (s = seconds, lower is better; MB/s higher is better). % = speed relative to the named peer\n`)
  console.log(table(['workload', 'unit', 'native', 'passthrough', 'rewindfs', 'passthrough % native', 'rewindfs % native', 'rewindfs % passthrough (goal ≥ 70%)'], rows))
  const st = await rw.client.status().catch(() => null)
  if (st) console.log(`\nrewindfs status after the run: ${JSON.stringify(st).slice(0, 400)}`)
  console.log(`\ntotal bench time ${((now() - started) / 1000).toFixed(0)} s`)
}

main().then(() => cleanup.run(), async (e) => {
  console.error(e)
  await cleanup.run()
  process.exitCode = 1
})
