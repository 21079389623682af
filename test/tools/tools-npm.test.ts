/**
 * Real tools at scale through the mount: npm ci (issue 4, item 3).
 *
 * What is real: the project's own package.json and package-lock.json (about
 * 290 lockfile entries, 283 installed on linux-x64: some 13 000 files, 150 MB
 * including a native tsgo binary) installed with
 * `npm ci --prefer-offline --ignore-scripts --no-audit --no-fund`
 * (the npm cache filled by `npm run setup`; the registry when it is not).
 *
 * Checks that can fail: npm ci exits 0; `npm ls --all` exits 0; every
 * lockfile entry is installed at its locked version (the ones left out must
 * be optional and for another os/cpu) and nothing else is; a checksum
 * manifest (path, type, mode, size, sha256 of every file) equal to the same
 * `npm ci` run on a native directory next to the mount; the installed
 * packages load (`require`).
 *
 * Rewind: checkpoint + manifest, damage (rm -rf of two package trees, a
 * package.json overwritten, .package-lock.json removed: npm ls must fail),
 * restore, identical manifest, the checks again. Finally unmount
 * (write-back): the directory on disk must equal the last manifest.
 *
 * Sizes: CI form one install (about 20 s through the mount);
 * REWINDFS_TOOLS_SCALE=large: 4 rounds of `rm -rf node_modules && npm ci`,
 * a checkpoint after each, then restores back to the first round and
 * forward to the last, checked each time.
 */
import t, { type Test } from 'tap'
import fs from 'node:fs'
import path from 'node:path'
import { mountWorkspace } from '../helpers/mount.js'
import { PROJECT, scale, run, ok, Timings, manifest, fields, sameManifest, markWithManifest, restoreAndCompare, rewindCycle, unmountAndCompare, type Manifest, type Marked } from '../helpers/tools.js'

const ROUNDS = scale(1, 4)
const NPM_CI = 'npm ci --prefer-offline --ignore-scripts --no-audit --no-fund --loglevel=error'
const env = { ...process.env, npm_config_update_notifier: 'false' }

interface LockEntry { version?: string, optional?: boolean, os?: string[], cpu?: string[], link?: boolean }

/** whether npm would install a lockfile entry on this machine (os/cpu lists, "!x" negations) */
function forThisMachine (e: LockEntry): boolean {
  const fits = (list: string[] | undefined, v: string): boolean => {
    if (list === undefined || list.length === 0) return true
    if (list.some(x => x === `!${v}`)) return false
    const pos = list.filter(x => !x.startsWith('!'))
    return pos.length === 0 || pos.includes(v)
  }
  return fits(e.os, process.platform) && fits(e.cpu, process.arch)
}

/** package directories under node_modules (nested node_modules included), relative to `dir` */
function installedPackages (dir: string): string[] {
  const out: string[] = []
  const walkModules = (nm: string): void => {
    if (!fs.existsSync(path.join(dir, nm))) return
    for (const e of fs.readdirSync(path.join(dir, nm), { withFileTypes: true })) {
      if (e.name.startsWith('.') || !e.isDirectory()) continue
      if (e.name.startsWith('@')) {
        for (const s of fs.readdirSync(path.join(dir, nm, e.name), { withFileTypes: true })) if (s.isDirectory()) pkg(`${nm}/${e.name}/${s.name}`)
      } else pkg(`${nm}/${e.name}`)
    }
  }
  const pkg = (p: string): void => {
    if (fs.existsSync(path.join(dir, p, 'package.json'))) out.push(p)
    walkModules(`${p}/node_modules`)
  }
  walkModules('node_modules')
  return out.sort()
}

/** The lockfile check: every entry for this machine installed at its version, the others absent, nothing extra. */
function lockCheck (t: Test, dir: string, when: string): number {
  const lock = JSON.parse(fs.readFileSync(path.join(dir, 'package-lock.json'), 'utf8')) as { packages: Record<string, LockEntry> }
  const want = Object.entries(lock.packages).filter(([k, e]) => k !== '' && e.link !== true)
  const wrong: string[] = []
  let installed = 0
  for (const [k, e] of want) {
    let version: string | undefined
    try { version = (JSON.parse(fs.readFileSync(path.join(dir, k, 'package.json'), 'utf8')) as { version?: string }).version } catch {}
    if (version === undefined) {
      if (!(e.optional === true && !forThisMachine(e))) wrong.push(`${k}: missing`)
    } else {
      installed++
      if (version !== e.version) wrong.push(`${k}: ${version}, locked ${String(e.version)}`)
    }
  }
  const extra = installedPackages(dir).filter(p => lock.packages[p] === undefined)
  t.same(wrong, [], `every lockfile entry is installed at its locked version ${when} (${installed} of ${want.length} entries; the rest optional for another os/cpu)`)
  t.same(extra, [], `no package outside the lockfile ${when}`)
  return installed
}

/** npm's own check (npm ls), the lockfile check and a require of installed packages. */
async function npmCheck (t: Test, dir: string, when: string): Promise<void> {
  const ls = await run('npm ls --all --loglevel=error', { cwd: dir, env })
  t.equal(ls.code, 0, `npm ls --all exits 0 ${when}`, ls.code === 0 ? {} : { stderr: ls.stderr.slice(-2000), stdout: ls.stdout.slice(-2000) })
  lockCheck(t, dir, when)
  const req = await run(`node -e "const { WebSocketServer } = require('ws'); const { pack, unpack } = require('msgpackr'); console.log(typeof WebSocketServer, unpack(pack({ a: [1, 'x'] })).a[1])"`, { cwd: dir, env })
  t.equal(req.stdout.trim(), 'function x', `installed packages load ${when}`, req.code === 0 ? {} : { stderr: req.stderr.slice(-2000) })
}

/** The node_modules lines of a workspace manifest, as a manifest of node_modules itself, with path, type, mode, size and hash only. */
function modulesPart (mf: Manifest): Manifest {
  const lines = mf.lines.filter(l => l.startsWith('./node_modules ') || l.startsWith('./node_modules/')).map(l => '.' + l.slice('./node_modules'.length))
  return fields({ lines, files: lines.filter(l => / f \d+ \d+ \d+ \d+ /.test(l)).length, paths: lines.length }, [0, 1, 2, 6, 8])
}

t.test('npm ci of the project lockfile through the mount, checked, damaged, restored', { timeout: scale(240000, 1800000) }, async t => {
  const times = new Timings()
  const m = await mountWorkspace(t)
  for (const f of ['package.json', 'package-lock.json']) fs.copyFileSync(path.join(PROJECT, f), path.join(m.dir, f))

  // the reference: the same npm ci on a native directory next to the mount
  const native = path.join(m.root, 'native')
  fs.mkdirSync(native)
  for (const f of ['package.json', 'package-lock.json']) fs.copyFileSync(path.join(PROJECT, f), path.join(native, f))
  // (started now, it runs while round 1 installs through the mount)
  const referenceReady = (async () => {
    await times.time('npm ci (native reference, alongside round 1)', async () => await ok(t, NPM_CI, { cwd: native, env, timeoutMs: 600000 }))
    return fields(await times.time('manifest (native reference)', async () => await manifest(path.join(native, 'node_modules'))), [0, 1, 2, 6, 8])
  })()
  let reference: Manifest | undefined

  // each round: npm ci, the checks, a checkpoint whose manifest (taken right
  // after the mark) must match the native install's checksums; restores
  // compare against that manifest, so after a restore the checksums hold too
  const rounds: Marked[] = []
  for (let round = 1; round <= ROUNDS; round++) {
    if (round > 1) await ok(t, 'rm -rf node_modules', { cwd: m.dir })
    await times.time(`npm ci through the mount (round ${round})`, async () => await ok(t, NPM_CI, { cwd: m.dir, env, timeoutMs: 600000 }))
    await times.time(`npm check (round ${round})`, async () => await npmCheck(t, m.dir, `after npm ci round ${round}`))
    const cp = await markWithManifest(m, `npm: round ${round}`, times)
    reference ??= await referenceReady
    sameManifest(t, modulesPart(cp.good), reference, `round ${round}: node_modules has the same paths, types, modes, sizes and sha256 as the native npm ci`)
    rounds.push(cp)
  }

  const installed = lockCheck(t, native, 'natively')

  await rewindCycle(t, m, times, {
    tool: 'npm',
    checkpoint: rounds[rounds.length - 1],
    damage: async () => {
      await ok(t, `rm -rf node_modules/@tapjs node_modules/typescript node_modules/.package-lock.json && echo '{"name":"ws","version":"0.0.1"}' > node_modules/ws/package.json`, { cwd: m.dir, msg: 'damage' })
    },
    damagedCheck: async () => {
      const ls = await run('npm ls --all --loglevel=silent', { cwd: m.dir, env })
      t.not(ls.code, 0, 'npm ls --all fails on the damaged tree')
    },
    check: async () => await npmCheck(t, m.dir, 'after restore')
  })
  const last = rounds[rounds.length - 1]

  if (rounds.length > 1) {
    // the first round's tree (other inodes, same content), then forward to the last
    await restoreAndCompare(t, m, rounds[0], times, 'back to round 1')
    await npmCheck(t, m.dir, 'at round 1, restored')
    await restoreAndCompare(t, m, last, times, `forward to round ${ROUNDS}`)
    await npmCheck(t, m.dir, `at round ${ROUNDS}, restored`)
  }

  await unmountAndCompare(t, m, last, times)
  const ls = await run('npm ls --all --loglevel=error', { cwd: m.dir, env })
  t.equal(ls.code, 0, 'npm ls --all exits 0 on disk after unmount')
  times.print(t, `npm: ${installed} packages, ${reference?.files ?? 0} files, ${ROUNDS} round(s)`)
})
