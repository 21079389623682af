/**
 * The main job (`npm run demo`): a real repository, a realistic agent session
 * of real tools through a rewindfs mount, damage the way agents do it, a
 * restore, and proof with an independent manifest (scripts/manifest.sh: GNU
 * find + sha256sum, not rewindfs's own view) that the tree is exactly the
 * checkpointed one — through the mount, and on disk after unmount.
 *
 *   workspace: a `git clone` of the repository this script runs from, made
 *              before mounting (so it is the lower layer), plus an empty
 *              directory and a symlink
 *   steps:     (1) npm install from the registry  (2) sed -i + editor-style
 *              atomic save  (3) git add/commit  (4) sqlite3 in WAL mode
 *              (5) chmod +x of a script; a checkpoint (RewindClient.mark,
 *              timed) and a manifest after each
 *   damage:    git reset --hard HEAD~1 + reflog expire + gc --prune=now,
 *              rm -rf of a source directory, a dropped sqlite table,
 *              chmod -x, a stray file
 *   restore:   the checkpoint taken before the damage (timed); the manifest
 *              must equal the good one exactly; git fsck, git log, sqlite
 *              rows and the execute bit are checked with the tools themselves
 *   unmount:   write-back; the directory on disk must equal the good
 *              manifest (mtime compared at microsecond precision)
 *
 * Exits non-zero, saying what differed, on any failure. Always unmounts and
 * removes its temporary directories (rewindfs-demo-*), also on failure or
 * SIGINT/SIGTERM. This process is not the daemon: it may use the mount, but
 * runs the tools as child processes.
 */
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { spawn, spawnSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { performance } from 'node:perf_hooks'
import { RewindClient, CONNECTION_FILE } from '../client/client.js'
import { type Manifest, manifest, manifestDiff, truncateMtime } from './manifest.js'

const here = path.dirname(fileURLToPath(import.meta.url))

// ------------------------------------------------------------ helpers

class JobError extends Error {}

interface RunResult { stdout: string, stderr: string, code: number }

/** Runs `cmd` with bash in `cwd`; throws JobError on a non-zero exit unless `allowFail`. */
async function sh (cmd: string, o: { cwd: string, env?: NodeJS.ProcessEnv, timeoutMs?: number, allowFail?: boolean }): Promise<RunResult> {
  return await new Promise((resolve, reject) => {
    const child = spawn('bash', ['-c', cmd], { cwd: o.cwd, env: o.env ?? process.env, stdio: ['ignore', 'pipe', 'pipe'] })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (d: Buffer) => { stdout += d.toString() })
    child.stderr.on('data', (d: Buffer) => { stderr += d.toString() })
    const limit = o.timeoutMs ?? 120000
    const timer = setTimeout(() => { child.kill('SIGKILL') }, limit)
    child.on('error', e => { clearTimeout(timer); reject(e) })
    child.on('close', (code, signal) => {
      clearTimeout(timer)
      const r = { stdout, stderr, code: code ?? (signal ? 128 : 1) }
      if (signal === 'SIGKILL' && code === null) { reject(new JobError(`\`${cmd}\` (in ${o.cwd}) timed out after ${limit} ms`)); return }
      if (r.code !== 0 && o.allowFail !== true) {
        reject(new JobError(`\`${cmd}\` (in ${o.cwd}) exited ${r.code}:\n${(stderr || stdout).trim().split('\n').slice(-10).join('\n')}`))
        return
      }
      resolve(r)
    })
  })
}

function isMounted (dir: string): boolean {
  return fs.readFileSync('/proc/mounts', 'utf8').split('\n').some(l => l.split(' ')[1] === dir)
}

const sleep = async (ms: number): Promise<void> => await new Promise(resolve => setTimeout(resolve, ms))

function fmt (ms: number): string { return ms.toFixed(1) }

// ------------------------------------------------------------ the job

interface Row { step: string, id: number | string, markMs: number | null, daemonMs: number | null, files: number, paths: number }

async function main (): Promise<void> {
  const t0 = performance.now()
  const repo = spawnSync('git', ['rev-parse', '--show-toplevel'], { cwd: here, encoding: 'utf8' })
  if (repo.status !== 0) throw new JobError(`cannot find the repository of ${here}: ${repo.stderr.trim()}`)
  const repoDir = repo.stdout.trim()
  const cliJs = path.resolve(here, '../cli/main.js')

  const root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'rewindfs-demo-')))
  const ws = path.join(root, 'ws')
  const home = path.join(root, 'home')
  const store = path.join(root, 'store')
  fs.mkdirSync(home)
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    REWINDFS_HOME: home,
    npm_config_update_notifier: 'false',
  }
  const inWs = async (cmd: string, o: { allowFail?: boolean, timeoutMs?: number } = {}): Promise<RunResult> => await sh(cmd, { cwd: ws, env, ...o })
  const cli = async (args: string, o: { allowFail?: boolean, timeoutMs?: number } = {}): Promise<RunResult> =>
    await sh(`${JSON.stringify(process.execPath)} ${JSON.stringify(cliJs)} ${args}`, { cwd: root, env, ...o })

  let client: RewindClient | null = null
  let daemonPid: number | null = null
  let cleaned = false

  const cleanup = async (): Promise<void> => {
    if (cleaned) return
    cleaned = true
    if (client !== null) await client.close().catch(() => {})
    if (isMounted(ws)) {
      console.error(`cleanup: ${ws} still mounted; unmounting with --discard`)
      await cli(`unmount -w ${JSON.stringify(ws)} --discard`, { allowFail: true, timeoutMs: 60000 }).catch(() => {})
    }
    for (const args of [['-u', ws], ['-uz', ws]]) {
      if (!isMounted(ws)) break
      spawnSync('fusermount', args, { stdio: 'ignore' })
      await sleep(200)
    }
    if (daemonPid !== null) {
      try { process.kill(daemonPid, 0); process.kill(daemonPid, 'SIGKILL') } catch {}
    }
    if (isMounted(ws)) { console.error(`cleanup: ${ws} is still mounted; leaving ${root} in place`); return }
    fs.rmSync(root, { recursive: true, force: true })
  }
  const onSignal = (sig: NodeJS.Signals): void => {
    console.error(`main-job: ${sig}: cleaning up`)
    cleanup().finally(() => process.exit(1))
  }
  process.once('SIGINT', onSignal)
  process.once('SIGTERM', onSignal)

  const failures: string[] = []
  const rows: Row[] = []
  const restores: Array<{ what: string, id: number, ms: number, daemonMs: number, changed: number }> = []
  try {
    // --- the workspace: a clone of this repository, before mounting
    console.log(`repository ${repoDir}\nworkspace  ${ws}\nstore      ${store}\n`)
    await sh(`git clone --quiet --no-hardlinks ${JSON.stringify(repoDir)} ws`, { cwd: root, env })
    fs.mkdirSync(path.join(ws, 'empty-dir'))
    fs.symlinkSync('package.json', path.join(ws, 'package-link.json'))
    fs.symlinkSync('no/such/target', path.join(ws, 'dangling-link'))
    const pristine = await manifest(ws)
    console.log(`cloned: ${pristine.files} files, ${pristine.paths} paths (.git included)`)
    if (pristine.lines.some(l => l.split(' ').length > 9 && !/ l \d+ /.test(l))) throw new JobError('a path holds a space: the mtime comparison cannot parse the manifest')

    // --- mount
    const m0 = performance.now()
    const mounted = await cli(`mount ${JSON.stringify(ws)} --store ${JSON.stringify(store)}`, { timeoutMs: 90000 })
    daemonPid = (JSON.parse(fs.readFileSync(path.join(store, CONNECTION_FILE), 'utf8')) as { pid: number }).pid
    console.log(`${mounted.stdout.trim()} in ${fmt(performance.now() - m0)} ms`)
    if (!isMounted(ws)) throw new JobError(`${ws} is not in /proc/mounts after mount`)
    client = await RewindClient.connect({ storeDir: store, timeoutMs: 120000 })
    const c = client

    const afterMount = await manifest(ws)
    const dm = manifestDiff(pristine.lines, afterMount.lines)
    if (dm.count !== 0) failures.push(`the mount does not show the directory as it is on disk (${dm.count} lines differ):\n  ${dm.shown.join('\n  ')}`)

    const checkpoint = async (step: string): Promise<{ id: number, m: Manifest }> => {
      const s = performance.now()
      const info = await c.mark({ label: step })
      const ms = performance.now() - s
      const m = await manifest(ws)
      rows.push({ step, id: info.id, markMs: ms, daemonMs: info.ms, files: m.files, paths: m.paths })
      console.log(`  checkpoint #${info.id} "${step}": ${fmt(ms)} ms (daemon ${fmt(info.ms)} ms, ${info.dirtyBytes} bytes dirtied), ${m.files} files / ${m.paths} paths`)
      return { id: info.id, m }
    }
    await checkpoint('0 cloned')

    // --- (1) npm install from the registry, inside the mount
    console.log('step 1: npm install')
    fs.mkdirSync(path.join(ws, 'agent-pkg'))
    await inWs('cd agent-pkg && npm init -y >/dev/null && npm install --no-audit --no-fund --loglevel=error is-number@7 left-pad', { timeoutMs: 120000 })
    const req = await inWs('cd agent-pkg && node -e "const n=require(\'is-number\'), p=require(\'left-pad\'); console.log(n(5), p(\'7\', 3, \'0\'))"')
    if (req.stdout.trim() !== 'true 007') failures.push(`the installed packages do not work through the mount: got "${req.stdout.trim()}"`)
    await checkpoint('1 npm install')

    // --- (2) sed -i + an editor-style atomic save
    console.log('step 2: sed -i and an atomic save')
    await inWs(`sed -i '1i // agent: reviewed the error numbers' base/errno.ts`)
    await inWs(`${JSON.stringify(process.execPath)} -e '
      const fs = require("fs"), f = "daemon/paths.ts", tmp = "daemon/.paths.ts.swp-" + process.pid
      const st = fs.statSync(f)
      const fd = fs.openSync(tmp, "wx", st.mode & 0o7777)
      fs.writeSync(fd, fs.readFileSync(f, "utf8") + "\\n// agent: saved by an editor (write temp, fsync, rename)\\n")
      fs.fsyncSync(fd); fs.closeSync(fd)
      fs.renameSync(tmp, f)
      const d = fs.openSync("daemon", "r"); fs.fsyncSync(d); fs.closeSync(d)'`)
    const grep = await inWs(`grep -c '^// agent:' base/errno.ts daemon/paths.ts`)
    if (grep.stdout.trim() !== 'base/errno.ts:1\ndaemon/paths.ts:1') failures.push(`edits not visible through the mount: ${grep.stdout.trim()}`)
    await checkpoint('2 sed + atomic save')

    // --- (3) git add -A && git commit
    console.log('step 3: git commit')
    await inWs('git config user.name "Rewind Agent" && git config user.email agent@rewindfs.invalid && git add -A && git commit -q -m "agent: review errno and paths, add agent-pkg"')
    const commit = (await inWs('git rev-parse HEAD')).stdout.trim()
    console.log(`  commit ${commit}`)
    await checkpoint('3 git commit')

    // --- (4) sqlite3 in WAL mode
    console.log('step 4: sqlite3 (WAL)')
    fs.mkdirSync(path.join(ws, 'agent-data'))
    const mode = await inWs(`sqlite3 agent-data/data.db "PRAGMA journal_mode=WAL; CREATE TABLE notes(id INTEGER PRIMARY KEY, body TEXT NOT NULL); WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c WHERE x<500) INSERT INTO notes(body) SELECT 'note ' || x || ' ' || hex(randomblob(48)) FROM c; CREATE INDEX notes_body ON notes(body);"`)
    if (mode.stdout.trim() !== 'wal') failures.push(`sqlite3 did not switch to WAL mode through the mount (said "${mode.stdout.trim()}")`)
    await inWs(`sqlite3 agent-data/data.db "PRAGMA integrity_check;" | grep -qx ok`)
    fs.writeFileSync(path.join(ws, 'agent-data', 'count.sh'), '#!/bin/sh\ncd "$(dirname "$0")" && exec sqlite3 data.db "SELECT count(*) FROM notes"\n', { mode: 0o644 })
    await checkpoint('4 sqlite WAL')

    // --- (5) chmod +x a script and run it
    console.log('step 5: chmod +x')
    await inWs('chmod +x agent-data/count.sh')
    const cnt = await inWs('./agent-data/count.sh')
    if (cnt.stdout.trim() !== '500') failures.push(`count.sh through the mount said "${cnt.stdout.trim()}", expected 500`)
    const last = await checkpoint('5 chmod +x')

    // --- the good state
    const good = await manifest(ws)
    const dg = manifestDiff(last.m.lines, good.lines)
    if (dg.count !== 0) failures.push(`two manifests in a row differ (reading changed the tree?):\n  ${dg.shown.join('\n  ')}`)
    const cg = await checkpoint('good (before damage)')
    const goodId = cg.id

    // --- damage
    console.log('damage: git reset --hard HEAD~1 + reflog expire + gc --prune=now, rm -rf daemon, DROP TABLE, chmod -x, a stray file')
    await inWs('git reset -q --hard HEAD~1 && git reflog expire --expire=now --all && git gc --quiet --prune=now')
    const gone = await inWs(`git cat-file -e ${commit}`, { allowFail: true })
    if (gone.code === 0) failures.push('git gc --prune=now did not remove the agent commit (the damage is not real)')
    await inWs('rm -rf daemon')
    await inWs(`sqlite3 agent-data/data.db "DROP TABLE notes;"`)
    await inWs('chmod -x agent-data/count.sh')
    await inWs('mkdir -p stray && echo "oops" > stray/notes.txt && echo junk > STRAY.tmp')
    const damaged = await manifest(ws)
    const dd = manifestDiff(good.lines, damaged.lines)
    console.log(`  damaged tree: ${dd.count} manifest lines differ from the good one; ${damaged.files} files / ${damaged.paths} paths; e.g.\n    ${dd.shown.slice(0, 6).join('\n    ')}`)
    if (dd.count === 0) failures.push('the damage did not change the manifest')
    rows.push({ step: 'damaged', id: '-', markMs: null, daemonMs: null, files: damaged.files, paths: damaged.paths })

    // --- restore
    const restore = async (what: string): Promise<void> => {
      const s = performance.now()
      const r = await c.restore({ id: goodId })
      const ms = performance.now() - s
      restores.push({ what, id: goodId, ms, daemonMs: r.ms, changed: r.changed })
      console.log(`  restore #${goodId} (${what}): ${fmt(ms)} ms (daemon ${fmt(r.ms)} ms, ${r.changed} inodes changed), now on branch ${r.branch}`)
    }
    console.log(`restore: checkpoint #${goodId}`)
    await restore('after damage')
    const after = await manifest(ws)
    const da = manifestDiff(good.lines, after.lines)
    if (da.count !== 0) failures.push(`after restore, the manifest differs from the good one in ${da.count} lines:\n  ${da.shown.join('\n  ')}`)
    else console.log(`  manifest after restore equals the good one (${after.paths} paths)`)

    // --- the tools agree
    const fsck = await inWs('git fsck --full --strict --no-progress 2>&1', { allowFail: true })
    if (fsck.code !== 0) failures.push(`git fsck failed after restore: ${fsck.stdout.trim().split('\n').slice(0, 5).join(' | ')}`)
    const glog = await inWs('git log --format=%H%x20%s -n 3', { allowFail: true })
    if (!glog.stdout.startsWith(`${commit} agent:`)) failures.push(`git log after restore does not show the agent commit ${commit} at HEAD: ${glog.stdout.trim()} ${glog.stderr.trim()}`)
    const rows2 = await inWs('./agent-data/count.sh', { allowFail: true })
    if (rows2.stdout.trim() !== '500') failures.push(`sqlite after restore: count.sh said "${rows2.stdout.trim()}${rows2.stderr.trim()}" (exit ${rows2.code}), expected 500`)
    const integ = await inWs(`sqlite3 agent-data/data.db "PRAGMA integrity_check;"`, { allowFail: true })
    if (integ.stdout.trim() !== 'ok') failures.push(`sqlite integrity_check after restore: ${integ.stdout.trim()} ${integ.stderr.trim()}`)
    const src = await inWs('grep -c "^// agent:" base/errno.ts daemon/paths.ts', { allowFail: true })
    if (src.stdout.trim() !== 'base/errno.ts:1\ndaemon/paths.ts:1') failures.push(`edited sources after restore: ${src.stdout.trim()} ${src.stderr.trim()}`)
    const req2 = await inWs('cd agent-pkg && node -e "console.log(require(\'left-pad\')(\'7\', 3, \'0\'))"', { allowFail: true })
    if (req2.stdout.trim() !== '007') failures.push(`npm packages after restore: ${req2.stdout.trim()} ${req2.stderr.trim()}`)
    console.log(`  git fsck ${fsck.code === 0 ? 'ok' : 'FAILED'}; git log HEAD ${glog.stdout.split('\n')[0]?.slice(0, 12)}; sqlite rows ${rows2.stdout.trim()}; count.sh executable; left-pad ${req2.stdout.trim()}`)

    // The checks ran sqlite3 (which creates and removes -wal/-shm, changing
    // the directory's mtime): restore once more so the state written back is
    // exactly the good checkpoint, and check it again.
    await restore('after the tool checks')
    const final = await manifest(ws)
    const df = manifestDiff(good.lines, final.lines)
    if (df.count !== 0) failures.push(`after the second restore, the manifest differs from the good one in ${df.count} lines:\n  ${df.shown.join('\n  ')}`)

    // --- unmount (write-back) and compare the directory on disk
    await c.close()
    client = null
    const u0 = performance.now()
    await cli(`unmount -w ${JSON.stringify(ws)}`, { timeoutMs: 120000 })
    const unmountMs = performance.now() - u0
    if (isMounted(ws)) throw new JobError(`${ws} is still mounted after unmount`)
    console.log(`unmounted (write-back) in ${fmt(unmountMs)} ms`)
    const disk = await manifest(ws)
    if (process.env.REWINDFS_DEMO_DUMP) {
      fs.writeFileSync(path.join(process.env.REWINDFS_DEMO_DUMP, 'good.txt'), good.lines.join('\n') + '\n')
      fs.writeFileSync(path.join(process.env.REWINDFS_DEMO_DUMP, 'disk.txt'), disk.lines.join('\n') + '\n')
    }
    const dk = manifestDiff(good.lines.map(truncateMtime), disk.lines.map(truncateMtime))
    if (dk.count !== 0) failures.push(`after unmount, the directory on disk differs from the good manifest (mtime at µs) in ${dk.count} lines:\n  ${dk.shown.join('\n  ')}`)
    else {
      const ns = manifestDiff(good.lines, disk.lines).count
      console.log(`  directory on disk equals the good manifest (${disk.paths} paths, mtime at µs; ${ns === 0 ? 'exact to the ns too' : `${ns / 2} lines differ below the µs`})`)
    }
    const fsck2 = await inWs('git fsck --full --no-progress 2>&1 && git log -n1 --format=%H && ./agent-data/count.sh', { allowFail: true })
    if (fsck2.code !== 0 || !fsck2.stdout.includes(commit) || !fsck2.stdout.trim().endsWith('500')) failures.push(`on disk after unmount: git fsck / git log / sqlite: ${fsck2.stdout.trim()}`)

    // --- summary
    console.log('\nstep                      checkpoint  mark ms  daemon ms  files  paths')
    for (const r of rows) {
      console.log(`${r.step.padEnd(26)}${String(r.id === '-' ? '-' : '#' + r.id).padStart(10)}  ${(r.markMs === null ? '-' : fmt(r.markMs)).padStart(7)}  ${(r.daemonMs === null ? '-' : fmt(r.daemonMs)).padStart(9)}  ${String(r.files).padStart(5)}  ${String(r.paths).padStart(5)}`)
    }
    for (const r of restores) console.log(`restore #${r.id} (${r.what})`.padEnd(36) + `${fmt(r.ms).padStart(9)} ms (daemon ${fmt(r.daemonMs)} ms, ${r.changed} inodes changed)`)
    console.log(`unmount write-back${fmt(unmountMs).padStart(27)} ms`)
    console.log(`total ${fmt((performance.now() - t0) / 1000)} s`)
  } catch (e) {
    failures.push(e instanceof JobError ? e.message : `unexpected error: ${(e as Error).stack ?? String(e)}`)
    const log = path.join(store, 'daemon.log')
    if (fs.existsSync(log)) console.error(`daemon log (tail):\n${fs.readFileSync(log, 'utf8').trim().split('\n').slice(-15).join('\n')}`)
  } finally {
    await cleanup()
  }
  if (failures.length > 0) {
    console.log(`\nFAIL (${failures.length}):`)
    for (const f of failures) console.log(`- ${f}`)
    process.exitCode = 1
  } else {
    console.log('\nPASS: the restored tree equals the checkpointed one (independent manifest, through the mount and on disk after write-back)')
  }
}

await main()
