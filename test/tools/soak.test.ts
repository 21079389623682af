/**
 * The soak test (issue 11): a realistic tool workload in one mount for
 * REWINDFS_SOAK_SECONDS (default 30 in `npm test`; `npm run test:long` gives it up to
 * 30 minutes), with a checkpoint every second and a restore every 30 s
 * while other processes read and write; then the workspace must unmount,
 * `verify` clean, and every checkpoint must have held exactly what the
 * workspace held when it was marked.
 *
 * Writers (each a bash loop in its own process group, running real tools
 * in the mount): an editor (atomic saves: write a temporary file, rename it
 * over; sed -i; appends to a log), git (edits, add, commit, now and then
 * gc --prune=now), a build (rm -rf, cp -r, tar, dd into a sparse data file
 * at random offsets, chmod), sqlite3 in WAL mode (inserts, deletes).
 * Readers (find + cat of everything, git log) are never paused.
 *
 * The oracle never races the writers: each second it stops every writer
 * process (SIGSTOP to the group; it waits until each is stopped, so no
 * system call of theirs is in flight), takes the independent manifest of
 * the mount (treeManifest: lstat, readlink and sha256 of every path through
 * the kernel, not rewindfs's own view), marks the checkpoint,
 * and lets the writers go on (SIGCONT). The manifest taken there is what
 * the checkpoint must hold:
 * - online, while the workload goes on, each checkpoint is read back
 *   through the protocol (readdir, stat, read at the checkpoint) and
 *   compared with its manifest (path, type, mode, size, sha256 or link
 *   target); when the checker falls behind it skips to the newest and the
 *   skipped ones are counted;
 * - every 30 s, at a pause, a random earlier checkpoint is restored and the
 *   mount's whole manifest (owners, nlink, ns mtimes too) must equal it;
 * - at the end, a sample of checkpoints is exported and compared whole, and
 *   the directory after the unmount must equal the last manifest.
 * The figures are printed as a `# soak:` comment (test/REPORT.md).
 */
import t from 'tap'
import fs from 'node:fs'
import path from 'node:path'
import { createHash } from 'node:crypto'
import { spawn, execFile, type ChildProcess } from 'node:child_process'
import { mountWorkspace, CLI } from '../helpers/mount.js'
import { manifestDiff } from '../../scripts/manifest.js'
import type { RewindClient } from '../../client/client.js'

const SECONDS = Number(process.env.REWINDFS_SOAK_SECONDS ?? 30)
/** a restore every 30 s, or three in a shorter run (npm test's 30 s) */
const RESTORE_EVERY_MS = Number(process.env.REWINDFS_SOAK_RESTORE_MS ?? Math.min(30000, SECONDS * 1000 / 4))
const sleep = async (ms: number): Promise<void> => await new Promise(resolve => setTimeout(resolve, ms))

/** Bash loops run in the mount; `$OPS` is a file outside it where each writes its count of rounds (renamed into place: a kill between truncate and write would leave it empty). */
const WRITERS: Record<string, string> = {
  editor: `i=0; while :; do i=$((i+1)); n=$((RANDOM % 40))
    printf 'line %s of save %s\\n' $RANDOM $i > src/.f$n.tmp && mv src/.f$n.tmp src/f$n.txt
    sed -i "s/line [0-9]*/line $RANDOM/" src/f$((RANDOM % 40)).txt 2>/dev/null
    echo "edit $i" >> edit.log; [ $((i % 200)) -eq 0 ] && : > edit.log
    echo $i > "$OPS.new" && mv "$OPS.new" "$OPS"; sleep 0.02; done`,
  git: `i=0; while :; do i=$((i+1))
    echo "change $i $RANDOM" >> repo/notes.md; printf 'v%s\\n' $RANDOM > repo/src/m$((RANDOM % 20)).c
    (cd repo && { git add -A && git commit -q -m "commit $i"; } >/dev/null 2>&1 || rm -f .git/index.lock)
    [ $((i % 60)) -eq 0 ] && (cd repo && git gc -q --prune=now >/dev/null 2>&1)
    echo $i > "$OPS.new" && mv "$OPS.new" "$OPS"; sleep 0.05; done`,
  build: `i=0; while :; do i=$((i+1))
    rm -rf build && mkdir -p build/out && cp -r src build/ && tar cf build/out/src.tar build/src 2>/dev/null
    dd if=/dev/urandom of=data.bin bs=4096 count=$((RANDOM % 8 + 1)) seek=$((RANDOM % 600)) conv=notrunc status=none
    [ $((i % 25)) -eq 0 ] && truncate -s $(( (RANDOM % 600) * 4096 )) data.bin
    chmod $([ $((i % 2)) -eq 0 ] && echo 755 || echo 644) build/out/src.tar
    ln -sfn "out/src.tar" build/latest
    echo $i > "$OPS.new" && mv "$OPS.new" "$OPS"; sleep 0.05; done`,
  sqlite: `i=0; while :; do i=$((i+1))
    sqlite3 db/app.sqlite "PRAGMA journal_mode=WAL; CREATE TABLE IF NOT EXISTS t(k INTEGER PRIMARY KEY, v TEXT); INSERT INTO t(v) VALUES (hex(randomblob(200)));" >/dev/null 2>&1
    [ $((i % 10)) -eq 0 ] && sqlite3 db/app.sqlite "DELETE FROM t WHERE k % 3 = 0;" >/dev/null 2>&1
    echo $i > "$OPS.new" && mv "$OPS.new" "$OPS"; sleep 0.05; done`
}
const READERS: Record<string, string> = {
  find: 'while :; do find . -type f -exec cat {} + > /dev/null 2>&1; sleep 0.2; done',
  gitlog: 'while :; do (cd repo && git log --oneline | wc -l) > /dev/null 2>&1; sleep 0.3; done'
}

const populate = async (dir: string): Promise<void> => {
  fs.mkdirSync(path.join(dir, 'src')); fs.mkdirSync(path.join(dir, 'db')); fs.mkdirSync(path.join(dir, 'repo', 'src'), { recursive: true })
  for (let i = 0; i < 40; i++) fs.writeFileSync(path.join(dir, 'src', `f${i}.txt`), `line ${i}\n`.repeat(50))
  for (let i = 0; i < 20; i++) fs.writeFileSync(path.join(dir, 'repo', 'src', `m${i}.c`), `int m${i};\n`)
  fs.writeFileSync(path.join(dir, 'data.bin'), '')
  await new Promise<void>((resolve, reject) => execFile('bash', ['-c', 'git init -q && git -c user.email=s@s -c user.name=s add -A && git -c user.email=s@s -c user.name=s commit -q -m init && git config user.email s@s && git config user.name s'],
    { cwd: path.join(dir, 'repo') }, err => err ? reject(err) : resolve()))
}

/** pgrp and state of every process, from /proc/PID/stat. */
function processes (): Array<{ pid: number, pgrp: number, state: string }> {
  const out: Array<{ pid: number, pgrp: number, state: string }> = []
  for (const n of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(n)) continue
    try {
      const s = fs.readFileSync(`/proc/${n}/stat`, 'utf8')
      const f = s.slice(s.lastIndexOf(')') + 2).split(' ')
      out.push({ pid: Number(n), state: f[0], pgrp: Number(f[2]) })
    } catch {}
  }
  return out
}

/** Stops every process of the groups and waits until none of them is between system calls (all T, or gone). */
async function stopGroups (pgids: number[]): Promise<void> {
  for (const g of pgids) try { process.kill(-g, 'SIGSTOP') } catch {}
  const set = new Set(pgids)
  for (let i = 0; i < 6000; i++) {
    if (processes().every(p => !set.has(p.pgrp) || p.state === 'T' || p.state === 't' || p.state === 'Z')) return
    await sleep(5)
  }
  throw new Error('writers did not stop within 30 s')
}

const contGroups = (pgids: number[]): void => { for (const g of pgids) try { process.kill(-g, 'SIGCONT') } catch {} }

/**
 * The manifest of `dir` as seen through the kernel (lstat, readlink, file
 * bytes; never rewindfs's own view), in the test process (it may touch the
 * mount: the daemon is a child): one line per path, the root included,
 * sorted: `<path> <type> <perms octal> <uid> <gid> <nlink> <size | -> <mtime ns> <sha256 | -> target | ->`
 * (scripts/manifest.sh's fields, faster: it runs at every pause).
 */
function treeManifest (dir: string): { lines: string[], files: number, paths: number } {
  const lines: string[] = []
  let files = 0
  const visit = (rel: string): void => {
    const abs = rel === '.' ? dir : path.join(dir, rel)
    const st = fs.lstatSync(abs, { bigint: true })
    const type = st.isFile() ? 'f' : st.isDirectory() ? 'd' : st.isSymbolicLink() ? 'l' : st.isFIFO() ? 'p' : st.isSocket() ? 's' : st.isCharacterDevice() ? 'c' : 'b'
    let h = '-'
    if (type === 'f') { h = createHash('sha256').update(fs.readFileSync(abs)).digest('hex'); files++ } else if (type === 'l') h = `-> ${fs.readlinkSync(abs)}`
    lines.push(`${rel} ${type} ${(st.mode & 0o7777n).toString(8)} ${st.uid} ${st.gid} ${st.nlink} ${type === 'd' ? '-' : st.size} ${st.mtimeNs} ${h}`)
    if (type === 'd') for (const name of fs.readdirSync(abs)) visit(rel === '.' ? `./${name}` : `${rel}/${name}`)
  }
  visit('.')
  lines.sort()
  return { lines, files, paths: lines.length }
}

/** Manifest lines projected to what the protocol can show: path, type, mode, size (files), sha256 or target. */
function project (lines: string[]): string[] {
  return lines.map(l => {
    const f = l.split(' ')
    return [f[0], f[1], f[2], f[1] === 'd' ? '-' : f[6], f.slice(8).join(' ')].join(' ')
  }).sort()
}

/** The same projection of checkpoint `id`, read back through the protocol. */
async function viaProtocol (c: RewindClient, id: number): Promise<string[]> {
  const out: string[] = []
  const perms = (mode: number): string => (mode & 0o7777).toString(8)
  const walk = async (rel: string): Promise<void> => {
    for (const e of await c.readdir({ id, path: rel === '' ? '/' : `/${rel}` })) {
      const name = path.basename(e.path)
      const r = rel === '' ? name : `${rel}/${name}`
      if (e.type === 'dir') { out.push(`./${r} d ${perms(e.mode)} - -`); await walk(r); continue }
      if (e.type === 'symlink') { out.push(`./${r} l ${perms(e.mode)} ${e.size} -> ${e.target ?? ''}`); continue }
      if (e.type !== 'file') { out.push(`./${r} ${e.type[0]} ${perms(e.mode)} ${e.size} -`); continue }
      const h = createHash('sha256')
      for (let off = 0; off < e.size;) {
        const b = await c.read({ id, path: `/${r}`, offset: off, length: 16 * 1024 * 1024 })
        if (b.length === 0) break
        h.update(b); off += b.length
      }
      out.push(`./${r} f ${perms(e.mode)} ${e.size} ${h.digest('hex')}`)
    }
  }
  const root = await c.stat({ id, path: '/' })
  out.push(`. d ${perms(root!.mode)} - -`)
  await walk('')
  return out.sort()
}

const pct = (xs: number[], p: number): number => { const s = [...xs].sort((a, b) => a - b); return s.length === 0 ? 0 : s[Math.min(s.length - 1, Math.floor(s.length * p))] }

t.test(`soak: ${SECONDS} s of tools with a checkpoint a second and a restore every ${RESTORE_EVERY_MS / 1000} s`, { timeout: (SECONDS + 900) * 1000 }, async t => {
  const m = await mountWorkspace(t, populate)
  const procs: Array<{ name: string, p: ChildProcess, writer: boolean, ops: string }> = []
  const killAll = (): void => { for (const x of procs) try { process.kill(-x.p.pid!, 'SIGKILL') } catch {} }
  t.teardown(killAll)
  const start = (name: string, script: string, writer: boolean): void => {
    const ops = path.join(m.root, `ops-${name}`)
    const p = spawn('bash', ['-c', script], { cwd: m.dir, detached: true, stdio: 'ignore', env: { ...process.env, OPS: ops, GIT_CONFIG_NOSYSTEM: '1' } })
    procs.push({ name, p, writer, ops })
  }
  for (const [n, s] of Object.entries(WRITERS)) start(n, s, true)
  for (const [n, s] of Object.entries(READERS)) start(n, s, false)
  const writers = procs.filter(x => x.writer).map(x => x.p.pid!)

  const expectDir = path.join(m.root, 'manifests')
  fs.mkdirSync(expectDir)
  const expected = new Map<number, string>() // id -> sha256 of its manifest lines
  const ids: number[] = []
  const markMs: number[] = []; const pauseMs: number[] = []; const restoreMs: number[] = []
  let rssMax = 0; let restores = 0; let checked = 0; let skipped = 0; let bad = 0
  const failures: string[] = []

  // the online checker: newest unchecked first, the rest skipped when it falls behind
  const queue: number[] = []
  let checking = true
  const checker = (async () => {
    while (checking || queue.length > 0) {
      if (queue.length === 0) { await sleep(50); continue }
      if (queue.length > 3) { skipped += queue.length - 1; queue.splice(0, queue.length - 1) }
      const id = queue.shift()!
      const want = project(fs.readFileSync(path.join(expectDir, `${id}.txt`), 'utf8').split('\n').filter(l => l !== ''))
      try {
        const got = await viaProtocol(m.client, id)
        const d = manifestDiff(want, got, 6)
        if (d.count > 0) { bad++; failures.push(`checkpoint ${id} read back differs in ${d.count} lines:\n${d.shown.join('\n')}`) } else checked++
      } catch (e: any) { bad++; failures.push(`checkpoint ${id} could not be read back: ${e.message}`) }
    }
  })()

  const t0 = Date.now()
  let lastRestore = t0
  let cycle = Date.now()
  while (Date.now() - t0 < SECONDS * 1000 && failures.length < 5) {
    // a checkpoint a second: the writers run for what the last pause left of it (at least 200 ms)
    await sleep(Math.max(200, cycle + 1000 - Date.now()))
    cycle = Date.now()
    const p0 = performance.now()
    await stopGroups(writers)
    try {
      // pages a stopped process dirtied through mmap (sqlite's -shm) reach the daemon now, not later behind the manifest's back
      await new Promise<void>(resolve => execFile('sync', ['-f', m.dir], () => resolve()))
      const restoreNow = Date.now() - lastRestore >= RESTORE_EVERY_MS && ids.length > 2
      if (restoreNow) {
        lastRestore = Date.now()
        const k = ids[Math.floor(Math.random() * (ids.length - 1))]
        const r0 = performance.now()
        await m.client.restore({ id: k })
        restoreMs.push(performance.now() - r0)
        restores++
        const now = treeManifest(m.dir)
        const want = fs.readFileSync(path.join(expectDir, `${k}.txt`), 'utf8').split('\n').filter(l => l !== '')
        const d = manifestDiff(want, now.lines, 6)
        if (d.count > 0) failures.push(`after restore ${k} the mount differs from its manifest in ${d.count} lines:\n${d.shown.join('\n')}`)
      }
      const mf = treeManifest(m.dir)
      const m0 = performance.now()
      const cp = await m.client.mark({ label: `soak ${ids.length + 1}` })
      markMs.push(performance.now() - m0)
      fs.writeFileSync(path.join(expectDir, `${cp.id}.txt`), mf.lines.join('\n') + '\n')
      expected.set(cp.id, createHash('sha256').update(mf.lines.join('\n')).digest('hex'))
      ids.push(cp.id)
      queue.push(cp.id)
    } finally { contGroups(writers) }
    pauseMs.push(performance.now() - p0)
    try { rssMax = Math.max(rssMax, Number(/VmRSS:\s+(\d+)/.exec(fs.readFileSync(`/proc/${m.daemon.pid!}/status`, 'utf8'))![1]) * 1024) } catch {}
  }
  const ran = (Date.now() - t0) / 1000
  await stopGroups(writers)
  killAll()
  await sleep(300)
  checking = false
  await checker
  const ops = Object.fromEntries(procs.filter(x => x.writer).map(x => [x.name, Number((() => { try { return fs.readFileSync(x.ops, 'utf8').trim() } catch { return '0' } })())]))

  // a sample of checkpoints exported and compared whole (owners, nlink, ns mtimes)
  const sample = [...new Set([ids[0], ids[ids.length - 1], ...Array.from({ length: 8 }, () => ids[Math.floor(Math.random() * ids.length)])])]
  let exported = 0
  for (const id of sample) {
    const out = path.join(m.root, `export-${id}`)
    await m.client.export({ id, dir: out })
    const got = treeManifest(out)
    const want = fs.readFileSync(path.join(expectDir, `${id}.txt`), 'utf8').split('\n').filter(l => l !== '')
    const d = manifestDiff(want, got.lines, 6)
    if (d.count > 0) failures.push(`export of checkpoint ${id} differs from its manifest in ${d.count} lines:\n${d.shown.join('\n')}`)
    else exported++
    fs.rmSync(out, { recursive: true, force: true })
  }
  const last = treeManifest(m.dir)
  const storeBytes = Number((await new Promise<string>(resolve => execFile('du', ['-sb', m.store], (_e, o) => resolve(o)))).split('\t')[0])
  await m.unmount()
  const after = treeManifest(m.dir)
  const wb = manifestDiff(last.lines, after.lines, 6)
  if (wb.count > 0) failures.push(`the directory after the unmount differs from the last state in ${wb.count} lines:\n${wb.shown.join('\n')}`)
  const v = await new Promise<{ code: number, out: string }>(resolve => execFile(process.execPath, [CLI, 'verify', '--store', m.store], { env: { ...process.env, REWINDFS_HOME: m.home }, timeout: 1800000, maxBuffer: 64 * 1024 * 1024 },
    (err: any, so, se) => resolve({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, out: so + se })))

  t.same(failures, [], 'every checkpoint read back, restored and exported holds what the workspace held when it was marked')
  t.equal(v.code, 0, `verify is clean: ${v.out.trim().split('\n').slice(-3).join(' / ')}`)
  t.ok(ids.length >= 3, `checkpoints were made (${ids.length})`)
  t.ok(SECONDS < 60 || restores > 0, `restores were made (${restores})`)
  t.ok(checked + exported > 0, 'checkpoints were checked')
  t.comment(`soak: ${Math.round(ran)} s, ${ids.length} checkpoints (mark p50 ${pct(markMs, 0.5).toFixed(0)} ms, p99 ${pct(markMs, 0.99).toFixed(0)} ms), ` +
    `${restores} restores (p50 ${pct(restoreMs, 0.5).toFixed(0)} ms, exact ${restores - failures.filter(f => f.startsWith('after restore')).length}/${restores}), ` +
    `read back exact ${checked}, skipped ${skipped}, differing ${bad}; exports exact ${exported}/${sample.length}; ` +
    `writer pause p50 ${pct(pauseMs, 0.5).toFixed(0)} ms p99 ${pct(pauseMs, 0.99).toFixed(0)} ms; writer rounds ${JSON.stringify(ops)}; ` +
    `final tree ${last.paths} paths, ${last.files} files; store ${(storeBytes / 1048576).toFixed(1)} MiB; daemon RSS max ${(rssMax / 1048576).toFixed(0)} MiB; ` +
    `write-back exact ${wb.count === 0 ? 'yes' : 'no'}; verify exit ${v.code}`)
})
