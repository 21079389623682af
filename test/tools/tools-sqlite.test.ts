/**
 * Real tools at scale through the mount: sqlite in WAL mode with concurrent
 * writers and readers (issue 4, item 3).
 *
 * Python's sqlite3 module (Debian's python3) and the sqlite3 CLI, on one
 * database in the mount: W writer processes, each committing T transactions
 * of R rows (BEGIN IMMEDIATE; rows (w, seq, body, sha256(body)); the
 * writer's counter in `totals` raised in the same transaction; the default
 * synchronous=FULL, so every commit fsyncs the WAL through the mount) while
 * reader processes loop over read transactions and check, in every snapshot,
 * that each writer's rows are exactly seq 1..n with n = its counter (a torn
 * or reordered commit would break it), re-hashing recent bodies. WAL
 * checkpoints into the database file happen along the way (autocheckpoint).
 *
 * While the writers run, a rewindfs checkpoint is marked (a cut through live
 * WAL traffic). Checks that can fail: every process exits 0, the readers
 * checked > 0 snapshots without a violation, `PRAGMA integrity_check` = ok
 * (CLI), each writer has exactly T×R rows, seq 1..T×R, counters equal, every
 * body matches its hash.
 *
 * Rewind: checkpoint + manifest at the end; damage (rows deleted, a table
 * dropped, garbage written into a page: the check must fail), restore,
 * identical manifest, the check again. Then the mid-write checkpoint is
 * restored: sqlite must recover it (integrity ok, the invariants hold, each
 * writer has at least every commit it had reported before the mark and at
 * most T×R), and forward again to the end. Finally unmount (write-back): the
 * directory on disk must equal the last manifest, and the check must pass
 * there too.
 *
 * Sizes: CI form 2 writers × 600 transactions × 5 rows, 1 reader;
 * REWINDFS_TOOLS_SCALE=large: 4 writers × 2000 × 10, 2 readers, 2 rounds
 * (each round appends to the same database; a mid-write checkpoint per round).
 */
import t, { type Test } from 'tap'
import fs from 'node:fs'
import path from 'node:path'
import { mountWorkspace } from '../helpers/mount.js'
import { PYTHON, scale, run, ok, background, Timings, markWithManifest, restoreAndCompare, rewindCycle, unmountAndCompare } from '../helpers/tools.js'

const WRITERS = scale(2, 4)
const READERS = scale(1, 2)
const TXS = scale(600, 2000)
const ROWS = scale(5, 10)
const ROUNDS = scale(1, 2)

/** writer: DB W TXS ROWS START GOFILE — connects, prints "ready", waits for GOFILE, commits TXS transactions of ROWS rows, seq from START+1; prints its last seq after each commit */
const WRITER_PY = `
import sqlite3, sys, hashlib, os, time, random
db, w, txs, per, seq, go = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), sys.argv[6]
# timeout=0 and our own short random backoff: sqlite's busy handler sleeps 1, 2, 5, 10... ms
# and lets one writer starve the other; this keeps the two writers interleaved
# connecting waits for the lock as sqlite does by default: the first connection to open the WAL
# database rebuilds its index under an exclusive lock, and a writer starting beside it would get
# "database is locked" at once (seen in CI); the transactions below then run with timeout 0
con = sqlite3.connect(db, timeout=30, isolation_level=None)
mode = con.execute('PRAGMA journal_mode').fetchone()[0]
if mode != 'wal': sys.exit('journal_mode is %s, not wal' % mode)
con.execute('PRAGMA busy_timeout = 0')
print('ready', flush=True)
while not os.path.exists(go): time.sleep(0.005)
rnd = random.Random(w)
busy = 0
for i in range(txs):
    while True:
        try:
            con.execute('BEGIN IMMEDIATE')
            break
        except sqlite3.OperationalError as e:
            if 'locked' not in str(e) and 'busy' not in str(e): raise
            busy += 1
            if busy > 2000000: sys.exit('writer %d: the database stayed locked' % w)
            time.sleep(rnd.random() * 0.0005)
    for j in range(per):
        seq += 1
        body = hashlib.sha256(b'%d:%d' % (w, seq)).digest() * (1 + seq % 40)
        con.execute('INSERT INTO rows(w, seq, body, sum) VALUES (?, ?, ?, ?)', (w, seq, body, hashlib.sha256(body).hexdigest()))
    con.execute('UPDATE totals SET n = n + ? WHERE w = ?', (per, w))
    con.execute('COMMIT')
    print(seq, flush=True)
    time.sleep(rnd.random() * 0.001)
con.close()
`

/** reader: DB STOPFILE — connects, prints "ready", then read transactions (2 ms apart) until STOPFILE exists; exits 1 on the first inconsistent snapshot; prints {"snapshots": n, "last": {w: n}} */
const READER_PY = `
import sqlite3, sys, os, hashlib, json, time
db, stop = sys.argv[1], sys.argv[2]
con = sqlite3.connect(db, timeout=120, isolation_level=None)
con.execute('SELECT count(*) FROM totals').fetchone()
print('ready', flush=True)
snapshots, last = 0, {}
while True:
    time.sleep(0.002)
    done = os.path.exists(stop)
    con.execute('BEGIN')
    tot = dict(con.execute('SELECT w, n FROM totals'))
    agg = {w: (c, lo, hi) for w, c, lo, hi in con.execute('SELECT w, count(*), min(seq), max(seq) FROM rows GROUP BY w')}
    recent = con.execute('SELECT w, seq, body, sum FROM rows ORDER BY rowid DESC LIMIT 20').fetchall()
    con.execute('COMMIT')
    for w, n in tot.items():
        c, lo, hi = agg.get(w, (0, None, None))
        if not (c == n and (n == 0 or (lo == 1 and hi == n))):
            sys.exit('snapshot %d: writer %d has %d rows, seq %s..%s, counter %d' % (snapshots, w, c, lo, hi, n))
        if n < last.get(w, 0):
            sys.exit('snapshot %d: writer %d went back from %d to %d rows' % (snapshots, w, last[w], n))
        last[w] = n
    for w, seq, body, s in recent:
        if hashlib.sha256(body).hexdigest() != s:
            sys.exit('snapshot %d: writer %d row %d: body does not match its hash' % (snapshots, w, seq))
    snapshots += 1
    if done: break
print(json.dumps({'snapshots': snapshots, 'last': last}))
`

/** check: DB — {"integrity": ..., "writers": {w: [count, min, max, counter]}, "badHashes": n} */
const CHECK_PY = `
import sqlite3, sys, hashlib, json
db = sys.argv[1]
con = sqlite3.connect(db, timeout=120, isolation_level=None)
out = {}
try:
    out['integrity'] = ' '.join(r[0] for r in con.execute('PRAGMA integrity_check'))
    tot = dict(con.execute('SELECT w, n FROM totals'))
    agg = {w: (c, lo, hi) for w, c, lo, hi in con.execute('SELECT w, count(*), min(seq), max(seq) FROM rows GROUP BY w')}
    out['writers'] = {str(w): [*agg.get(w, (0, None, None)), n] for w, n in tot.items()}
    order = [r[0] for r in con.execute('SELECT w FROM rows ORDER BY id')]
    out['switches'] = sum(1 for a, b in zip(order, order[1:]) if a != b)
    out['badHashes'] = sum(1 for body, s in con.execute('SELECT body, sum FROM rows') if hashlib.sha256(body).hexdigest() != s)
except sqlite3.Error as e:
    out['error'] = str(e)
con.close()
print(json.dumps(out))
`

interface Check { switches?: number, integrity?: string, writers?: Record<string, [number, number, number, number | null]>, badHashes?: number, error?: string }

t.test('sqlite WAL: concurrent writers and readers through the mount, a cut mid-write, damage, restore', { timeout: scale(240000, 1800000) }, async t => {
  const times = new Timings()
  const m = await mountWorkspace(t)
  const scripts = path.join(m.root, 'py')
  fs.mkdirSync(scripts)
  for (const [f, src] of [['writer.py', WRITER_PY], ['reader.py', READER_PY], ['check.py', CHECK_PY]]) fs.writeFileSync(path.join(scripts, f), src)
  const dataDir = path.join(m.dir, 'data')
  fs.mkdirSync(dataDir)
  const db = path.join(dataDir, 'rows.db')

  const mode = await ok(t, `sqlite3 ${JSON.stringify(db)} "PRAGMA journal_mode=WAL; CREATE TABLE rows(id INTEGER PRIMARY KEY, w INTEGER NOT NULL, seq INTEGER NOT NULL, body BLOB NOT NULL, sum TEXT NOT NULL, UNIQUE(w, seq)); CREATE TABLE totals(w INTEGER PRIMARY KEY, n INTEGER NOT NULL); ${Array.from({ length: WRITERS }, (_, i) => `INSERT INTO totals VALUES (${i + 1}, 0);`).join(' ')}"`, { cwd: m.dir, msg: 'create the database in WAL mode' })
  t.equal(mode.stdout.trim(), 'wal', 'journal_mode is wal through the mount')

  const check = async (want: number, when: string, o: { atLeast?: number[] } = {}): Promise<Check> => {
    const integ = await run(`sqlite3 ${JSON.stringify(db)} "PRAGMA integrity_check;"`, { cwd: m.dir })
    t.equal(integ.stdout.trim(), 'ok', `sqlite3 PRAGMA integrity_check = ok ${when}`, integ.code === 0 ? {} : { stderr: integ.stderr })
    const r = await run(`${PYTHON} ${JSON.stringify(path.join(scripts, 'check.py'))} ${JSON.stringify(db)}`, { cwd: m.dir })
    let c: Check = { error: `check.py exited ${r.code}: ${r.stderr}` }
    try { c = JSON.parse(r.stdout) as Check } catch {}
    t.equal(c.error, undefined, `the database reads ${when}`)
    t.equal(c.integrity, 'ok', `integrity_check (python) = ok ${when}`)
    t.equal(c.badHashes, 0, `every body matches its hash ${when}`)
    const per = c.writers ?? {}
    for (let w = 1; w <= WRITERS; w++) {
      const [count, lo, hi, counter] = per[String(w)] ?? [0, null, null, null]
      if (o.atLeast === undefined) {
        t.same([count, lo, hi, counter], [want, 1, want, want], `writer ${w}: exactly ${want} rows, seq 1..${want}, counter ${want} ${when}`)
      } else {
        t.ok(count === counter && (count === 0 ? lo === null && hi === null : lo === 1 && hi === count), `writer ${w}: ${count} rows, seq ${String(lo)}..${String(hi)}, counter ${String(counter)} ${when}`)
        t.ok(count >= o.atLeast[w - 1] && count <= want, `writer ${w}: ${count} rows, at least the ${o.atLeast[w - 1]} reported committed before the mark, at most ${want} ${when}`)
      }
    }
    return c
  }

  const mids: Array<{ id: number, reported: number[], round: number }> = []
  let written = 0
  let snapshots = 0
  for (let round = 1; round <= ROUNDS; round++) {
    const stop = path.join(m.root, `stop-${round}`)
    const go = path.join(m.root, `go-${round}`)
    const s0 = Date.now()
    const readers = Array.from({ length: READERS }, () => background(t, PYTHON, [path.join(scripts, 'reader.py'), db, stop], { cwd: m.dir }))
    const writers = Array.from({ length: WRITERS }, (_, i) => background(t, PYTHON, [path.join(scripts, 'writer.py'), db, String(i + 1), String(TXS), String(ROWS), String(written), go], { cwd: m.dir }))
    const all = [...readers, ...writers]
    const until = async (cond: () => boolean): Promise<void> => await new Promise<void>(resolve => {
      const poll = (): void => { if (cond() || all.some(p => p.child.exitCode !== null && p.child.exitCode !== 0)) resolve(); else setTimeout(poll, 10) }
      poll()
    })
    // every process connected (each holds the database open), then all writers start at once
    await until(() => all.every(p => p.lines.length > 0))
    fs.writeFileSync(go, '')
    // a checkpoint once a third of the round's rows are reported committed, writers still running
    const reported = (): number[] => writers.map(w => { const l = w.lines[w.lines.length - 1]; return l === undefined || l === 'ready' ? written : Number(l) })
    await until(() => reported().reduce((a, n) => a + n - written, 0) >= WRITERS * TXS * ROWS / 3)
    const before = reported()
    const mid = await m.client.mark({ label: `sqlite: mid-write round ${round}` })
    mids.push({ id: mid.id, reported: before, round })
    t.comment(`round ${round}: checkpoint #${mid.id} while writing (writers had reported ${before.join(', ')} rows)`)
    const ws = await Promise.all(writers.map(async w => await w.done))
    fs.writeFileSync(stop, '')
    const rs = await Promise.all(readers.map(async r => await r.done))
    times.add(`round ${round}: ${WRITERS} writers × ${TXS} tx × ${ROWS} rows, ${READERS} reader(s)`, Date.now() - s0)
    ws.forEach((w, i) => t.equal(w.code, 0, `writer ${i + 1} exits 0`, w.code === 0 ? {} : { stderr: w.stderr.slice(-2000) }))
    rs.forEach((r, i) => {
      t.equal(r.code, 0, `reader ${i + 1} saw no inconsistent snapshot`, r.code === 0 ? {} : { stderr: r.stderr.slice(-2000) })
      let n = 0
      try { n = (JSON.parse(r.stdout.trim().split('\n').pop() ?? '') as { snapshots: number }).snapshots } catch {}
      t.ok(n > 0, `reader ${i + 1} checked ${n} snapshots`)
      snapshots += n
    })
    written += TXS * ROWS
    const c = await times.time(`check after round ${round}`, async () => await check(written, `after round ${round}`))
    t.comment(`round ${round}: commits of different writers alternate ${String(c.switches)} times in the table's order`)
  }
  t.comment(`${WRITERS} writers wrote ${written} rows each; readers checked ${snapshots} snapshots`)

  // the check opened the database (-wal/-shm come and go, the directory's mtime moves):
  // the checkpoint below is of the tree as it is now
  const done = await rewindCycle(t, m, times, {
    tool: 'sqlite',
    damage: async () => {
      await ok(t, `sqlite3 data/rows.db "DELETE FROM rows WHERE w = 1 AND seq % 3 = 0; DROP TABLE totals;" && printf 'garbage%.0s' $(seq 1 200) | dd of=data/rows.db bs=1 seek=$((4096 * 3 + 100)) conv=notrunc status=none`, { cwd: m.dir, msg: 'damage' })
    },
    damagedCheck: async () => {
      const r = await run(`${PYTHON} ${JSON.stringify(path.join(scripts, 'check.py'))} ${JSON.stringify(db)}`, { cwd: m.dir })
      const c = JSON.parse(r.stdout) as Check
      t.ok(c.error !== undefined || c.integrity !== 'ok' || c.writers?.['1']?.[0] !== written, `the check fails on the damaged database (${c.error ?? c.integrity?.slice(0, 80) ?? ''})`)
    },
    check: async () => { await check(written, 'after restore') }
  })

  // the cuts taken mid-write: sqlite recovers each from its WAL
  for (const mid of mids) {
    const r = await times.time(`restore #${mid.id} (mid-write, round ${mid.round})`, async () => await m.client.restore({ id: mid.id }), i => `daemon ${i.ms.toFixed(1)} ms, ${i.changed} paths changed`)
    t.ok(r.changed > 0, `restore to the mid-write checkpoint #${mid.id} changed ${r.changed} inodes`)
    // before anything opens the database (the last connection to close folds the WAL in and deletes it)
    t.ok(fs.existsSync(`${db}-wal`) && fs.statSync(`${db}-wal`).size > 0, 'the mid-write checkpoint holds a WAL file (the cut is inside WAL traffic)')
    await check((mid.round) * TXS * ROWS, `at the mid-write checkpoint of round ${mid.round}`, { atLeast: mid.reported })
  }
  await restoreAndCompare(t, m, done, times, 'forward to the end')
  await check(written, 'at the end, restored')
  await restoreAndCompare(t, m, done, times, 'undo the check\'s -wal/-shm')

  await unmountAndCompare(t, m, done, times)
  await check(written, 'on disk after unmount')
  times.print(t, `sqlite: ${WRITERS} writers × ${ROUNDS} round(s) × ${TXS} tx × ${ROWS} rows, ${READERS} reader(s), ${snapshots} snapshots`)
})
