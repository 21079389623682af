/**
 * The benchmark harness's own logic, on made-up samples (no timing): the
 * statistics (quantiles, IQR, rotation of the modes, request-count deltas),
 * the restore judge (manifest comparison and its classes of loss), and the
 * report (session summary and ratios, Markdown tables, SVG charts that parse
 * and carry every mode's series).
 */
import t from 'tap'
import { XMLParser, XMLValidator } from 'fast-xml-parser'
import { quantile, median, summarize, rotation, countDelta } from '../../bench/helpers/stats.js'
import { parseManifestLine, checkRestore, verdict, isIgnored } from '../../bench/helpers/compare.js'
import { summarizeSession, sessionTotalsTable, sessionRequestsTables } from '../../bench/report/session.js'
import { charts, markdown, headline, mergeResults, type BenchResults } from '../../bench/report/report.js'
import type { SessionResult } from '../../bench/session/run.js'
import type { CheckpointResult } from '../../bench/checkpoint/run.js'

t.test('quantiles: definition 7 (linear between closest ranks)', async t => {
  t.equal(median([3, 1, 2]), 2)
  t.equal(median([4, 1, 3, 2]), 2.5)
  t.equal(quantile([1, 2, 3, 4, 5], 0.25), 2)
  t.equal(quantile([1, 2, 3, 4], 0.25), 1.75, 'numpy.percentile([1,2,3,4], 25) = 1.75')
  t.equal(quantile([10], 0.9), 10)
  t.ok(Number.isNaN(median([])))
  t.equal(median([NaN, 5, Infinity, 1]), 3, 'non-finite samples are left out')
  t.throws(() => quantile([1], 1.5), RangeError)
  const s = summarize([5, 1, 4, 2, 3])
  t.same([s.n, s.median, s.q1, s.q3, s.iqr, s.min, s.max], [5, 3, 2, 4, 2, 1, 5])
  t.equal(summarize([7]).iqr, 0)
})

t.test('rotation: every mode once in every position over n rounds', async t => {
  const modes = ['a', 'b', 'c']
  t.same(rotation(modes, 0), ['a', 'b', 'c'])
  t.same(rotation(modes, 1), ['b', 'c', 'a'])
  t.same(rotation(modes, 4), ['b', 'c', 'a'])
  for (let pos = 0; pos < 3; pos++) t.same(new Set([0, 1, 2].map(r => rotation(modes, r)[pos])), new Set(modes), `position ${pos}`)
  t.same(rotation([], 3), [])
})

t.test('request-count deltas: positive differences only; a restart is an error', async t => {
  t.same(countDelta({ getattr: 10, open: 2 }, { getattr: 15, open: 2, create: 1 }), { getattr: 5, create: 1 })
  t.throws(() => countDelta({ getattr: 10 }, { getattr: 3 }), /went down/)
})

const line = (p: string, type: string, mode: string, size: string, hash: string): string => `${p} ${type} ${mode} 0 0 1 ${size} 1700000000.0000000000 ${hash}`
const base = [
  line('.', 'd', '755', '-', '-'),
  line('./.gitignore', 'f', '644', '15', 'aa'),
  line('./bin', 'd', '755', '-', '-'),
  line('./bin/run.sh', 'f', '755', '20', 'bb'),
  line('./empty', 'd', '755', '-', '-'),
  line('./empty/sub', 'd', '755', '-', '-'),
  line('./ignored', 'd', '755', '-', '-'),
  line('./ignored/cache.bin', 'f', '644', '8', 'cc'),
  line('./build.log', 'f', '644', '6', 'dd'),
  line('./vendor', 'd', '755', '-', '-'),
  line('./vendor/lib', 'd', '755', '-', '-'),
  line('./vendor/lib/.git', 'd', '755', '-', '-'),
  line('./vendor/lib/.git/HEAD', 'f', '644', '21', 'ee'),
  line('./link', 'l', '777', '5', '-> bin/run.sh')
]

t.test('manifest lines parse; a bad line is refused', async t => {
  t.same(parseManifestLine(base[13]), { path: './link', type: 'l', mode: '777', size: '5', hash: '-> bin/run.sh' })
  t.throws(() => parseManifestLine('garbage'), /cannot parse manifest line: garbage/)
})

t.test('gitignore patterns (the forms the bench tree uses)', async t => {
  t.ok(isIgnored('./ignored/cache.bin', ['ignored/']))
  t.ok(isIgnored('./ignored', ['ignored/']))
  t.ok(isIgnored('./a/b.log', ['*.log']))
  t.notOk(isIgnored('./a/b.txt', ['*.log', 'ignored/']))
  t.ok(isIgnored('./x/node_modules/y', ['node_modules']))
})

t.test('restore judge: identical trees are correct; mtime and nlink are not compared', async t => {
  const c = checkRestore(base, base.map(l => l.replace(' 1 ', ' 2 ').replace('1700000000.0000000000', '1800000000.5')), ['ignored/', '*.log'])
  t.ok(c.correct)
  t.equal(verdict(c), 'correct')
})

t.test('restore judge: each class of loss is named', async t => {
  // what git's reset --hard + clean -fdx leaves: no empty dirs, no ignored files, the nested .git's change kept, a mode lost
  const restored = base
    .filter(l => !l.startsWith('./empty/sub ') && !l.startsWith('./ignored') && !l.startsWith('./build.log'))
    .map(l => l.startsWith('./vendor/lib/.git/HEAD') ? line('./vendor/lib/.git/HEAD', 'f', '644', '21', 'ff') : l)
    .map(l => l.startsWith('./bin/run.sh') ? line('./bin/run.sh', 'f', '644', '20', 'bb') : l)
    .concat([line('./new-0.txt', 'f', '644', '4', '00')])
  const c = checkRestore(base, restored, ['ignored/', '*.log'])
  t.notOk(c.correct)
  t.same(c.modes, ['./bin/run.sh'])
  t.same(c.emptyDirs, ['./empty/sub'])
  t.same(c.ignored.sort(), ['./build.log', './ignored', './ignored/cache.bin'])
  t.same(c.nestedGit, ['./vendor/lib/.git/HEAD'])
  t.same(c.content, ['./new-0.txt'], 'an extra path left behind is a loss too')
  t.match(verdict(c), /^INCORRECT: loses modes \(1: \.\/bin\/run\.sh\), empty dirs \(1: \.\/empty\/sub\), ignored files \(3: .*\), nested \.git \(1: .*\), other paths \(1: \.\/new-0\.txt\)$/)
  t.same(checkRestore(base, base.filter(l => !l.startsWith('./empty ') && !l.startsWith('./empty/')), []).emptyDirs, ['./empty/sub'],
    'a directory that held only an empty directory is not itself counted as empty')
})

/** A made-up session: native 10 s, rewindfs 15 s (+1 s of marks), git one failed round, btrfs skipped. */
function fakeSession (): SessionResult {
  const steps = [{ name: 'clone', cmd: 'git clone' }, { name: 'npm ci', cmd: 'npm ci' }]
  const round = (k: number): SessionResult['rounds'][number] => ({
    order: ['native', 'rewindfs', 'git'],
    runs: {
      native: { stepMs: [2000 + k, 8000 - k], ckptMs: [] },
      rewindfs: { stepMs: [3000, 11000 + 100 * k], ckptMs: [400, 600], requests: [{ getattr: 100 + k, create: 10 }, { write: 500, getattr: 50 }], daemonCpuMs: [200 + k, 900] },
      git: k === 1 ? { stepMs: [2500], ckptMs: [], error: 'step 2 (npm ci): exit 1' } : { stepMs: [2500, 9000], ckptMs: [100, 400] }
    }
  })
  return {
    kind: 'session', steps, source: { path: '/repo', commit: 'abc123def456' }, prime: { name: 'prime', cmd: 'npm ci', ms: 5000 },
    modes: [{ name: 'native', label: 'plain' }, { name: 'rewindfs', label: 'mount' }, { name: 'git', label: 'git' }, { name: 'btrfs', label: 'btrfs', skipped: 'needs root' }],
    rounds: [round(0), round(1), round(2)]
  }
}

t.test('session summary: medians, ratios to native, checkpoints share, failed rounds left out', async t => {
  const sums = summarizeSession(fakeSession())
  const by = Object.fromEntries(sums.map(s => [s.name, s]))
  t.equal(by.native.total.median, 10)
  t.equal(by.native.ratio, 1)
  t.equal(by.rewindfs.total.median, 15.1)
  t.ok(Math.abs(by.rewindfs.ratio - 1.51) < 1e-9)
  t.equal(by.rewindfs.checkpoints.median, 1)
  t.ok(Math.abs(by.rewindfs.ckptShare - 1 / 15.1) < 1e-9)
  t.equal(by.git.okRounds, 2)
  t.same(by.git.errors, ['step 2 (npm ci): exit 1'])
  t.equal(by.btrfs.skipped, 'needs root')
  t.equal(by.rewindfs.requests![0].getattr, 101, 'requests: median over rounds per opcode')
  t.equal(by.native.requests, undefined)
  const table = sessionTotalsTable(sums)
  t.match(table, /\| rewindfs: mount +\| 15\.1 /)
  t.match(table, /btrfs +\| skipped: needs root/)
  t.match(table, /2 \(\+1 failed\)/)
  t.match(sessionRequestsTables(fakeSession(), sums), /\| 1 +\| clone +\| 111 +\| [0-9.]+ +\| 201 +\| getattr 101, create 10/, 'the daemon\'s CPU time per step: median over rounds')
  t.match(sessionRequestsTables(fakeSession(), sums), /\| +\| all steps +\| 661 +\| +\| 1101 +\|/, 'and over all steps')
})

function fakeCheckpoint (): CheckpointResult {
  const cells = ['rewindfs', 'git'].flatMap(peer => [1000, 10000].map(files => ({ peer, files, changed: 10, ckptMs: [peer === 'git' ? files / 100 : 3, 4], restoreMs: [2, 3], missed: 0 })))
  return {
    kind: 'checkpoint', sizes: [1000, 10000], changed: [10], reps: { 1000: 2, 10000: 2 },
    peers: [{ name: 'rewindfs', label: 'r' }, { name: 'git', label: 'g' }, { name: 'overlay', label: 'o', skipped: 'needs root' }],
    cells, correctness: {}, rss: { 1000: { afterBase: 50 * 2 ** 20, afterReps: 60 * 2 ** 20 } }, setupMs: {}, errors: []
  }
}

function fakeResults (): BenchResults {
  return {
    version: 1, mode: 'full', started: '2026-12-02T09:15:00.000Z', finished: '2026-12-02T09:55:00.000Z',
    machine: { cpu: 'Test CPU', cores: 2, memoryBytes: 8 * 2 ** 30, kernel: '6.1', node: 'v20', tmpFs: 'ext4', hostname: 'h' },
    load: [{ t: 1, load1: 3, load5: 2, load15: 1 }, { t: 2, load1: 5, load5: 2, load15: 1 }],
    session: fakeSession(), checkpoint: fakeCheckpoint(),
    hifreq: { kind: 'hifreq', seconds: 1, fileBytes: 65536, phases: [{ target: 0, achieved: 0, marks: 0, markMs: [], writerMBps: 100, writerFilesPerS: 1500 }, { target: 10, achieved: 9.9, marks: 10, markMs: [1, 2], writerMBps: 90, writerFilesPerS: 1400 }] }
  }
}

t.test('charts: every SVG parses and carries every mode\'s (and peer\'s) series', async t => {
  const r = fakeResults()
  const cs = charts(r)
  t.same(Object.keys(cs).sort(), ['checkpoint-latency.svg', 'restore-latency.svg', 'session-steps.svg', 'session-total.svg'])
  const parser = new XMLParser({ ignoreAttributes: false })
  const seriesOf = (svg: string): string[] => [...svg.matchAll(/<g class="series" data-series="([^"]+)"/g)].map(m => m[1])
  for (const [f, svg] of Object.entries(cs)) {
    t.equal(XMLValidator.validate(svg), true, `${f} is well-formed XML`)
    t.ok(parser.parse(svg).svg, `${f} has an <svg> root`)
  }
  t.same(seriesOf(cs['session-total.svg']), ['native', 'rewindfs', 'git'], 'one bar per mode that ran')
  t.same(seriesOf(cs['session-steps.svg']), ['rewindfs', 'git'], 'a ratio line per mode but native')
  t.same(seriesOf(cs['checkpoint-latency.svg']), ['rewindfs', 'git'])
  t.same(seriesOf(cs['restore-latency.svg']), ['rewindfs', 'git'])
  t.match(cs['session-total.svg'], /<title>rewindfs: 15\.1 seconds/)
})

t.test('markdown report: machine, load, every section, skipped modes, QUICK said', async t => {
  const r = fakeResults()
  const md = markdown(r, Object.keys(charts(r)))
  t.match(md, /2 cores \(Test CPU\), 8 GiB RAM, Linux 6\.1/)
  t.match(md, /load average \(1 min\) during the run: min 3\.0, median 4\.0, max 5\.0/)
  t.match(md, /!\[session time per mode\]\(session-total\.svg\)/)
  t.match(md, /## High-frequency marks/)
  t.match(md, /## Checkpoint and restore against the peers/)
  t.match(md, /overlay .*skipped: needs root/)
  t.notMatch(md, /QUICK/)
  t.match(markdown({ ...r, mode: 'quick' }, []), /QUICK run: one round of a subset/)
  t.match(headline(r), /^Measured 2026-12-02 09:15 UTC on 2 cores/)
})

t.test('merging the results of runs of different parts: each part once, loads in time order, the runs named', async t => {
  const full = fakeResults()
  const a: BenchResults = { ...full, started: '2026-12-02T09:15:00.000Z', finished: '2026-12-02T10:40:00.000Z', load: [{ t: 1, load1: 3, load5: 2, load15: 1 }, { t: 5, load1: 9, load5: 2, load15: 1 }], hifreq: undefined, checkpoint: undefined, note: 'partial' }
  const b: BenchResults = { ...full, started: '2026-12-02T09:20:00.000Z', finished: '2026-12-02T10:00:00.000Z', load: [{ t: 2, load1: 4, load5: 2, load15: 1 }], session: undefined }
  const m = mergeResults([a, b])
  t.equal(m.session, full.session)
  t.equal(m.checkpoint, full.checkpoint)
  t.equal(m.hifreq, full.hifreq)
  t.same(m.load.map(l => l.t), [1, 2, 5], 'load samples of both runs, in time order')
  t.equal(m.started, '2026-12-02T09:15:00.000Z')
  t.equal(m.finished, '2026-12-02T10:40:00.000Z')
  t.match(m.note, /merged from 2 runs .*session \(09:15–10:40 UTC; partial\), hifreq \+ checkpoint \(09:20–10:00 UTC\)/)
  t.throws(() => mergeResults([a, { ...b, session: full.session }]), /2 runs hold the session part/)
  t.throws(() => mergeResults([a, { ...b, mode: 'quick' }]), /different forms/)
  t.throws(() => mergeResults([]), /no results/)
})
