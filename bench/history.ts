/**
 * Per-path history and selective restore (issue 16) against git, in the
 * same run, on the same history:
 *
 *  - a workspace of BENCH_HISTORY_FILES small files (100 per directory,
 *    written before the mount, so served from the lower layer) gets
 *    BENCH_HISTORY_STEPS checkpoints; each step rewrites one file through
 *    the mount, the tracked file `d0/target.txt` every 10th step;
 *  - the same steps are committed to a git repository on a native copy;
 *  - **history**: `history` of the tracked file over the lineage (wall
 *    clock at a connected client, median of 5) vs `git log --format=%H --
 *    d0/target.txt` (process start-up included, as a caller pays it); also
 *    the history of its directory, and of a file that never changed;
 *  - **selective restore**: `restore` of one file from the first checkpoint
 *    (paths, wall clock, median of 5, each followed by a restore of the
 *    head so the next has work to do) vs `git checkout FIRST -- FILE`, and
 *    the full restore of the first checkpoint for scale.
 *
 *   node dist/bench/history.js        (BENCH_HISTORY_STEPS=1000, BENCH_HISTORY_FILES=10000)
 */
import fs from 'node:fs'
import path from 'node:path'
import { pathToFileURL } from 'node:url'
import { Cleanup, mountRewind, now, sh, timeSh, fmt, table, median, tempRoot } from './lib.js'

async function main (): Promise<void> {
  const steps = Number(process.env.BENCH_HISTORY_STEPS ?? 1000)
  const files = Number(process.env.BENCH_HISTORY_FILES ?? 10000)
  const cleanup = new Cleanup()
  try {
    const dirs = Math.ceil(files / 100)
    const populate = (dir: string): void => {
      for (let d = 0; d < dirs; d++) {
        fs.mkdirSync(path.join(dir, `d${d}`))
        for (let i = 0; i < 100 && d * 100 + i < files; i++) fs.writeFileSync(path.join(dir, `d${d}`, `f${i}.txt`), `file ${d}/${i}\n`)
      }
      fs.writeFileSync(path.join(dir, 'd0', 'target.txt'), 'target 0\n')
    }
    const m = await mountRewind(cleanup, 'history', populate)
    const c = m.client
    const git = tempRoot('history-git')
    cleanup.push('git copy', () => fs.rmSync(git, { recursive: true, force: true }))
    populate(git)
    sh('git init -q && git config user.email b@b && git config user.name b && git config gc.auto 0 && git add -A && git commit -qm base', { cwd: git })
    const first = (await c.log({ limit: 1 }))[0].id
    console.log(`${files} files; ${steps} steps...`)
    const t0 = now()
    // one git process per step would dominate the run: the steps are replayed into git with fast-import
    const stream: string[] = []
    for (let s = 1; s <= steps; s++) {
      const rel = s % 10 === 0 ? 'd0/target.txt' : `d${s % dirs}/f${s % 100}.txt`
      const body = `step ${s}\n`
      fs.writeFileSync(path.join(m.dir, rel), body)
      await c.mark({ label: `step ${s}` })
      stream.push(`commit refs/heads/master\ncommitter b <b@b> ${1700000000 + s} +0000\ndata 0\n${s === 1 ? 'from refs/heads/master^0\n' : ''}M 100644 inline ${rel}\ndata ${Buffer.byteLength(body)}\n${body}\n`)
    }
    console.log(`marks: ${fmt((now() - t0) / 1000)} s`)
    fs.writeFileSync(path.join(git, '.stream'), stream.join(''))
    sh('git fast-import --quiet < .stream && rm .stream && git reset -q --hard master', { cwd: git, timeoutMs: 600000 })
    const time = async (fn: () => Promise<unknown>, n = 5): Promise<number> => {
      const xs: number[] = []
      for (let i = 0; i < n; i++) { const a = now(); await fn(); xs.push(now() - a) }
      return median(xs)
    }
    const hist = await c.history({ path: 'd0/target.txt', limit: 100000 })
    const hFile = await time(async () => await c.history({ path: 'd0/target.txt', limit: 100000 }))
    const hDir = await time(async () => await c.history({ path: 'd0', limit: 100000 }), 3)
    const hSame = await time(async () => await c.history({ path: `d${dirs - 1}/f50.txt`, limit: 100000 }))
    const gLog = median([0, 1, 2, 3, 4].map(() => timeSh('git log --format=%H -- d0/target.txt > /dev/null', { cwd: git })))
    const gLogDir = median([0, 1, 2].map(() => timeSh('git log --format=%H -- d0 > /dev/null', { cwd: git })))
    const gitCount = Number(sh('git log --format=%H -- d0/target.txt | wc -l', { cwd: git }).trim())
    // selective restore of one file, then back to the head
    const markMs: number[] = []
    for (let i = 0; i < 5; i++) {
      fs.writeFileSync(path.join(m.dir, 'd1', 'f1.txt'), `mark ${i}\n`)
      markMs.push((await c.mark({})).ms)
    }
    const sel: number[] = []; const selDaemon: number[] = []
    for (let i = 0; i < 5; i++) {
      const a = now()
      const r = await c.restore({ id: first, paths: ['d0/target.txt'] })
      sel.push(now() - a); selDaemon.push(r.ms)
      fs.writeFileSync(path.join(m.dir, 'd0', 'target.txt'), `again ${i}\n`)
      await c.mark({})
    }
    const gSel = median([0, 1, 2, 3, 4].map(() => timeSh(`git checkout -q $(git rev-list --max-parents=0 HEAD) -- d0/target.txt && git checkout -q HEAD -- d0/target.txt`, { cwd: git }) / 2))
    const full = await time(async () => { await c.restore({ id: first }) }, 1)
    console.log(`\nHistory of one path over ${steps} checkpoints (${files} files; the file changed ${hist.length} times, git lists ${gitCount} commits)\n`)
    console.log(table(['operation', 'rewindfs ms', 'git ms', 'ratio'], [
      ['history of a file (d0/target.txt)', fmt(hFile, 1), fmt(gLog, 1), fmt(hFile / gLog, 2)],
      ['history of a directory (d0)', fmt(hDir, 1), fmt(gLogDir, 1), fmt(hDir / gLogDir, 2)],
      ['history of a file never changed (in the last directory)', fmt(hSame, 1), '–', '–'],
      ['selective restore of one file (wall)', fmt(median(sel), 2), fmt(gSel, 1), fmt(median(sel) / gSel, 2)],
      ['selective restore of one file (daemon ms)', fmt(median(selDaemon), 2), '–', '–'],
      ['mark of one changed file (daemon ms, for scale: fsync + batch)', fmt(median(markMs), 2), '–', '–'],
      ['full restore of the first checkpoint', fmt(full, 1), '–', '–']
    ]))
  } finally { await cleanup.run() }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main().catch(e => { console.error(e instanceof Error ? e.stack : e); process.exitCode = 1 })
}
