/**
 * The smoke form of every benchmark (`node dist/bench/run.js --smoke`): the
 * session replay in every mode (the steps that need no npm and no build, so
 * every file the steps name is still touched), the high-frequency marks and
 * the checkpoint peers, on tiny inputs, then the report. No timing is
 * asserted: only that each benchmark ran end to end and that its outputs have
 * the right shape (every mode and peer present or skipped with a note, the
 * JSON parses, every SVG parses and carries every series, the report names
 * every section), so a change that breaks a benchmark fails here.
 *
 * The run is a child process with TMPDIR set to this test's own directory:
 * every mount, loop image and temp dir of the bench lives under it, so the
 * teardown can clear what a failed run left without touching anything else.
 */
import t from 'tap'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { XMLParser, XMLValidator } from 'fast-xml-parser'
import { MODE_NAMES } from '../../bench/session/modes.js'
import { SMOKE_STEPS, STEPS, buildStepsNeed } from '../../bench/session/steps.js'
import type { BenchResults } from '../../bench/report/report.js'

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..')
const RUN = path.join(ROOT, 'dist/bench/run.js')

/** Mount points (from /proc/mounts) under `dir`, deepest first. */
function mountsUnder (dir: string): string[] {
  return fs.readFileSync('/proc/mounts', 'utf8').split('\n').map(l => l.split(' ')[1] ?? '')
    .map(p => p.replace(/\\040/g, ' ')).filter(p => p.startsWith(dir + '/')).sort((a, b) => b.length - a.length)
}

/** Clears what a failed run left under `dir`: mounts, loop devices backed by files there, then the files. */
function clearUnder (dir: string): void {
  for (const m of mountsUnder(dir)) {
    for (const [cmd, args] of [['fusermount3', ['-u', m]], ['fusermount', ['-u', m]], ['fusermount3', ['-uz', m]], ['umount', ['-l', m]]] as const) {
      if (!mountsUnder(dir).includes(m)) break
      spawnSync(cmd, [...args], { stdio: 'ignore' })
    }
  }
  const loops = spawnSync('losetup', ['-n', '-O', 'NAME,BACK-FILE', '-l'], { encoding: 'utf8' }).stdout ?? ''
  for (const l of loops.split('\n')) {
    const [dev, file] = l.trim().split(/\s+/)
    if (dev && file?.startsWith(dir + '/')) spawnSync('losetup', ['-d', dev], { stdio: 'ignore' })
  }
  fs.rmSync(dir, { recursive: true, force: true })
}

function runBench (args: string[], tmp: string, t: { teardown: (fn: () => unknown) => void }): Promise<{ code: number | null, out: string }> {
  return new Promise(resolve => {
    const child: ChildProcess = spawn(process.execPath, [RUN, ...args], { cwd: ROOT, env: { ...process.env, TMPDIR: tmp }, stdio: ['ignore', 'pipe', 'pipe'] })
    let out = ''
    child.stdout!.on('data', (d: Buffer) => { out += d.toString() })
    child.stderr!.on('data', (d: Buffer) => { out += d.toString() })
    t.teardown(async () => {
      if (child.exitCode !== null || child.signalCode !== null) return
      child.kill('SIGTERM') // the bench's Cleanup unmounts on SIGTERM
      const deadline = Date.now() + 30000
      while (child.exitCode === null && child.signalCode === null && Date.now() < deadline) await new Promise(resolve => setTimeout(resolve, 100))
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
    })
    child.on('close', code => resolve({ code, out }))
  })
}

const seriesOf = (svg: string): string[] => [...svg.matchAll(/<g class="series" data-series="([^"]+)"/g)].map(m => m[1])

t.test('the steps the smoke form leaves out find what they need in this checkout', async t => {
  t.ok(SMOKE_STEPS.length >= 5 && SMOKE_STEPS.length < STEPS.length, `${SMOKE_STEPS.length} of ${STEPS.length} steps`)
  t.same(SMOKE_STEPS[0].name, 'git clone', 'the smoke session starts with the clone')
  for (const p of buildStepsNeed()) t.ok(fs.existsSync(path.join(ROOT, p)), `${p} exists (needed by the npm / tsc / unit-test steps)`)
})

t.test('smoke form of every benchmark: each runs end to end and its report has every mode and peer', async t => {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'rewindfs-test-bench-smoke-'))
  fs.chmodSync(tmp, 0o755)
  t.teardown(() => clearUnder(tmp))
  const out = path.join(tmp, 'results')
  // this checkout again as build B: covers the two-build comparison (--rewindfs-b) a FUSE rework is judged by
  const { code, out: log } = await runBench(['--smoke', '--out', out, '--rewindfs-b', ROOT], tmp, t)
  t.equal(code, 0, 'bench/run.js --smoke exits 0')
  if (code !== 0) t.comment(log.slice(-3000))
  t.same(mountsUnder(tmp), [], 'the bench left no mount behind')
  t.match(log, /SMOKE form/, 'the run says it is the smoke form')

  const files = fs.existsSync(out) ? fs.readdirSync(out).sort() : []
  const jsonFile = files.find(f => /^smoke-\d{4}-\d\d-\d\d\.json$/.test(f))
  t.ok(jsonFile, `results JSON written (${files.join(', ')})`)
  t.notOk(files.some(f => f.endsWith('.partial.json')), 'the partial results file is removed at the end')
  if (!jsonFile) return
  const r = JSON.parse(fs.readFileSync(path.join(out, jsonFile), 'utf8')) as BenchResults
  t.equal(r.mode, 'smoke')
  t.ok(r.machine.cores > 0 && r.machine.kernel.length > 0 && Array.isArray(r.machine.loadAtStart), 'machine described, with its load average')
  t.ok(r.load.length >= 2 && r.load.every(l => Number.isFinite(l.load1)), 'load average sampled during the run')

  // the session: every mode ran every step, or was skipped with a note
  const s = r.session!
  t.ok(s, 'session result present')
  t.same(s.modes.map(m => m.name), [...MODE_NAMES], 'every mode listed, build B too')
  t.same(s.steps.map(x => x.name), SMOKE_STEPS.map(x => x.name))
  t.equal(s.rounds.length, 1)
  const ran = s.modes.filter(m => !m.skipped).map(m => m.name)
  for (const m of s.modes) {
    if (m.skipped) { t.ok(m.skipped.length > 5, `${m.name} skipped with a note: ${m.skipped}`); continue }
    const run = s.rounds[0].runs[m.name]
    t.notOk(run?.error, `${m.name} ran without error${run?.error ? ': ' + run.error : ''}`)
    t.equal(run?.stepMs.length, SMOKE_STEPS.length, `${m.name}: a time for every step`)
    t.ok(run?.stepMs.every(x => x > 0), `${m.name}: step times are positive`)
    if (['rewindfs', 'rewindfs-b', 'git', 'git -f', 'btrfs'].includes(m.name)) t.equal(run?.ckptMs.length, SMOKE_STEPS.length, `${m.name}: a checkpoint after every step`)
  }
  t.ok(ran.includes('native') && ran.includes('rewindfs') && ran.includes('rewindfs-b'), 'native, rewindfs and build B are never skipped')
  t.match(s.modes.find(m => m.name === 'rewindfs-b')?.label, new RegExp(`build B: ${ROOT.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`), 'build B labelled with its path')
  for (const name of ['rewindfs', 'rewindfs-b']) {
    const rw = s.rounds[0].runs[name]
    t.equal(rw?.requests?.length, SMOKE_STEPS.length, `${name}: FUSE requests per opcode for every step`)
    t.ok((rw?.requests?.[0].getattr ?? 0) > 0 && (rw?.requests?.[0].write ?? 0) > 0, `${name}: the clone step counted getattr and write requests`)
    t.ok((rw?.rssBytes ?? 0) > 0, `${name}: daemon resident memory recorded`)
  }

  // the high-frequency form: every phase, marks in every phase that asks for them
  const h = r.hifreq!
  t.same(h.phases.map(p => p.target), [0, null, 10, 100, 1000], 'writer alone, back to back, 10 / 100 / 1,000 marks/s')
  for (const p of h.phases) {
    t.ok(p.writerMBps > 0 && Number.isFinite(p.writerMBps), `phase ${String(p.target)}: writer throughput measured`)
    if (p.target !== 0) t.ok(p.marks > 0 && p.markMs.length === p.marks, `phase ${String(p.target)}: marks taken and timed`)
  }

  // the checkpoint peers: every peer measured and judged, or skipped with a note
  const c = r.checkpoint!
  t.same(c.peers.map(p => p.name), ['rewindfs', 'git', 'btrfs', 'rsync', 'overlay', 'hashcopy'], 'every checkpoint peer listed')
  t.same(c.errors, [], 'no checkpoint peer failed')
  const peersRan = c.peers.filter(p => !p.skipped).map(p => p.name)
  for (const p of c.peers) {
    if (p.skipped) { t.ok(p.skipped.length > 5, `${p.name} skipped with a note: ${p.skipped}`); continue }
    t.ok(c.correctness[p.name]?.verdict, `${p.name}: restore judged by the manifest (${c.correctness[p.name]?.verdict})`)
    for (const n of c.changed) {
      const cell = c.cells.find(x => x.peer === p.name && x.files === 100 && x.changed === n)
      t.ok(cell && cell.ckptMs.length === 1 && cell.restoreMs.length === 1, `${p.name}: ${n} changed: one checkpoint and one restore timed`)
    }
  }
  t.equal(c.correctness.rewindfs?.verdict, 'correct', 'rewindfs restores everything the manifest holds')
  t.ok(c.cells.filter(x => x.peer === 'rewindfs').every(x => x.missed === 0), 'rewindfs: every changed file came back')
  if (peersRan.includes('git')) t.match(c.correctness.git.verdict, /^INCORRECT: loses .*ignored files.*nested \.git/, 'git is judged incorrect: it loses ignored files and the nested .git')
  t.ok(c.rss['100']?.afterBase > 0, 'rewindfs daemon resident memory recorded')

  // the report: every chart parses and carries every series; the Markdown has every section
  const parser = new XMLParser({ ignoreAttributes: false })
  for (const f of ['session-total.svg', 'session-steps.svg', 'checkpoint-latency.svg', 'restore-latency.svg']) {
    const p = path.join(out, f)
    t.ok(fs.existsSync(p), `${f} written`)
    if (!fs.existsSync(p)) continue
    const svg = fs.readFileSync(p, 'utf8')
    t.equal(XMLValidator.validate(svg), true, `${f} is well-formed XML`)
    t.ok(parser.parse(svg).svg, `${f} has an <svg> root`)
    const want = f === 'session-total.svg' ? ran : f === 'session-steps.svg' ? ran.filter(n => n !== 'native') : peersRan
    t.same(seriesOf(svg), want, `${f}: one series per mode or peer that ran`)
  }
  const md = fs.readFileSync(path.join(out, 'report.md'), 'utf8')
  for (const re of [/SMOKE run/, /load average \(1 min\) during the run/, /## The agent session/, /## High-frequency marks/, /## Checkpoint and restore against the peers/, /FUSE requests per step/]) t.match(md, re)
  for (const m of s.modes) t.match(md, new RegExp(`\\| ${m.name.replace(/[-]/g, '\\-')}: `), `report row for ${m.name}`)

  // --from-json writes the report of a results file (what a stopped full run is finished with)
  const again = path.join(tmp, 'again')
  const fj = spawnSync(process.execPath, [RUN, '--from-json', path.join(out, jsonFile), '--out', again, '--note', 'rewritten by the smoke test'], { cwd: ROOT, encoding: 'utf8' })
  t.equal(fj.status, 0, `--from-json exits 0 ${fj.stderr}`)
  t.match(fs.existsSync(path.join(again, 'report.md')) ? fs.readFileSync(path.join(again, 'report.md'), 'utf8') : '', /Note: rewritten by the smoke test/)
})
