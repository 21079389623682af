/**
 * The CLI's messages say what to do next, through a real mount:
 *  - `show ID:PATH` of a path missing at that checkpoint names the nearest
 *    directory to list, diff and log (and says when the path exists now);
 *  - `verify --store S` while mounted names the real workspace to unmount;
 *  - `log` and `pin` work on a stopped store, and say so when another
 *    process holds it;
 *  - block problems in verify's report end with their next step, never
 *    "run `rewindfs verify`"; after a repair, with what repair could not do.
 */
import t from 'tap'
import fs from 'node:fs'
import path from 'node:path'
import { mountWorkspace } from '../helpers/mount.js'
import { StoreDb } from '../../store/db.js'
import { PACKS_DIR } from '../../store/pack.js'
import { flipByte } from '../helpers/damage.js'

t.test('show, verify while mounted, log and pin on a stopped store', async tt => {
  const m = await mountWorkspace(tt, dir => {
    fs.mkdirSync(path.join(dir, 'src'))
    fs.writeFileSync(path.join(dir, 'src/a.txt'), 'a\n')
  })
  const c = await m.client.mark({ label: 'first' })
  fs.writeFileSync(path.join(m.dir, 'later.txt'), 'later\n')

  const top = await m.cli(['show', `${c.id}:nonexist`])
  tt.equal(top.code, 1, 'show of a missing path exits 1')
  tt.match(top.stderr, new RegExp(`nonexist does not exist at checkpoint ${c.id}: rewindfs show ${c.id}:/ lists the top directory as it was then; rewindfs diff ${c.id} lists what changed since; rewindfs log lists the checkpoints`))
  const inDir = await m.cli(['show', `${c.id}:src/nope/deeper`])
  tt.match(inDir.stderr, new RegExp(`rewindfs show ${c.id}:src lists src as it was then`), 'names the nearest directory that exists there')
  const newer = await m.cli(['show', `${c.id}:later.txt`])
  tt.match(newer.stderr, new RegExp(`it exists in the workspace now, so it was created after checkpoint ${c.id}`), 'says a newer file exists now')
  const listed = await m.cli(['show', `${c.id}:/`])
  tt.equal(listed.code, 0, 'the suggested listing works')
  tt.match(listed.stdout, /^src\/$/m)

  const v = await m.cli(['verify', '--store', m.store])
  tt.equal(v.code, 1, 'verify refuses while mounted')
  tt.ok(v.stderr.includes(`rewindfs unmount -w ${m.dir}, then rewindfs verify --store ${m.store}`), `names the real workspace: ${v.stderr}`)
  tt.notMatch(v.stderr, /-w DIR/, 'no placeholder')

  await m.unmount()
  const log = await m.cli(['log'])
  tt.equal(log.code, 0, `log works on the stopped store: ${log.stderr}`)
  tt.match(log.stdout, new RegExp(`^[ *] #${c.id} .* first$`, 'm'), 'lists the checkpoint with its label')
  const byStore = await m.cli(['log', '--store', m.store, '--json'])
  tt.equal(byStore.code, 0)
  tt.ok(JSON.parse(byStore.stdout).some((x: { id: number }) => x.id === c.id), 'log --store --json lists it')
  const pin = await m.cli(['pin', String(c.id)])
  tt.equal(pin.code, 0, `pin works on the stopped store: ${pin.stderr}`)
  tt.match(pin.stdout, new RegExp(`checkpoint #${c.id} pinned`))
  const after = JSON.parse((await m.cli(['log', '--json'])).stdout)
  tt.equal(after.find((x: { id: number }) => x.id === c.id)?.pinned, true, 'the pin is in the store')
  const unknown = await m.cli(['pin', '999'])
  tt.equal(unknown.code, 1)
  tt.match(unknown.stderr, /no checkpoint 999.*rewindfs log/, 'an unknown id says so')
  const held = await StoreDb.open(m.store)
  try {
    const locked = await m.cli(['log'])
    tt.equal(locked.code, 1, 'log fails while another process holds the store')
    tt.match(locked.stderr, /is held by another process .*try again in a moment/)
  } finally { await held.close() }
  await m.remount()
  const live = await m.cli(['log'])
  tt.match(live.stdout, new RegExp(`^[ *] #${c.id} .*pinned +first$`, 'm'), 'the daemon sees the pin made offline')
})

t.test('block problems end with their next step', async tt => {
  const m = await mountWorkspace(tt)
  fs.writeFileSync(path.join(m.dir, 'big.bin'), Buffer.alloc(300000, 7))
  fs.writeFileSync(path.join(m.dir, 'other.bin'), Buffer.alloc(200000, 9))
  await m.client.mark({ label: 'data' })
  await m.unmount()
  const pack = path.join(m.store, PACKS_DIR, fs.readdirSync(path.join(m.store, PACKS_DIR)).sort()[0]!)
  flipByte(pack, 1000)
  const flipped = await m.cli(['verify'])
  tt.equal(flipped.code, 1)
  const hashLine = flipped.stdout.split('\n').find(l => l.startsWith('E_BLOCK_HASH'))
  tt.match(hashLine, /its bytes changed after they were written.*used by checkpoint.*\. Next: `rewindfs verify --repair` points the block at an intact copy/, 'E_BLOCK_HASH says what repair does')
  const repaired = await m.cli(['verify', '--repair'])
  tt.equal(repaired.code, 1, 'no intact copy: repair exits 1')
  const after = repaired.stdout.split('\n').find(l => l.startsWith('E_BLOCK_HASH'))
  tt.match(after, /No pack holds an intact copy of it, so repair cannot fix it/, 'after repair: what is left to do')
  tt.notMatch(after, /Next: `rewindfs verify --repair`/, 'not "run repair" again')

  fs.truncateSync(pack, fs.statSync(pack).size - 150000)
  const truncated = await m.cli(['verify'])
  const unreadable = truncated.stdout.split('\n').filter(l => l.startsWith('E_BLOCK_UNREADABLE'))
  tt.ok(unreadable.length > 0, 'the truncated blocks are unreadable')
  for (const l of unreadable) {
    tt.notMatch(l, /run `rewindfs verify`/, 'not circular')
    tt.match(l, /Next: `rewindfs verify --repair`/, 'says what to do')
  }
})

t.test('restore says when changed files were open across it, and what their holders see (ll)', async t => {
  const m = await mountWorkspace(t, dir => { fs.writeFileSync(path.join(dir, 'data.txt'), 'v1\n') }, { env: { REWINDFS_FUSE: 'll' } })
  const f = path.join(m.dir, 'data.txt')
  fs.readFileSync(f)
  const cp = await m.client.mark({ label: 'v1' })
  fs.writeFileSync(f, 'v2, abandoned\n')
  const fd = fs.openSync(f, 'r')
  t.teardown(() => { try { fs.closeSync(fd) } catch {} })
  const r = await m.cli(['restore', String(cp.id)])
  t.equal(r.code, 0, r.stderr)
  t.match(r.stdout, /note: 1 changed file was open \(1 descriptor\): the processes holding them keep reading the content from before the restore, and what they write through those descriptors is not kept; reopen the files/, `the restore says so: ${r.stdout}`)
  const b = Buffer.alloc(32)
  t.equal(b.subarray(0, fs.readSync(fd, b, 0, 32, 0)).toString(), 'v2, abandoned\n', 'as it says: the descriptor reads the content from before the restore')
  fs.closeSync(fd)
  t.equal(fs.readFileSync(f, 'utf8'), 'v1\n', 'and a new open the restored one')
  const again = await m.cli(['restore', String(cp.id)])
  t.notMatch(again.stdout, /note:/, 'no note when nothing was open')
})
