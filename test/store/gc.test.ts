/**
 * Garbage collection through a real mount: a history with branches, a
 * pinned checkpoint and runs, then
 *  - a dry run changes nothing and says what would go;
 *  - gc removes exactly the checkpoints the policy does not keep (computed
 *    here independently from the log), returns the space of content only
 *    they used, while a writer keeps writing the dropped content through
 *    the mount (the dedup race: a block gc is deleting must never be handed
 *    to a writer);
 *  - every kept checkpoint restores exactly, a removed one is unknown,
 *    parents are re-linked, verify is clean after unmount;
 *  - gc of the stopped store (CLI) then keeps only what it must, and the
 *    next mount works.
 */
import t from 'tap'
import fs from 'node:fs'
import path from 'node:path'
import crypto from 'node:crypto'
import { execFileSync, spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { mountWorkspace } from '../helpers/mount.js'
import { verifyStore } from '../../fs/maint/verify.js'
import type { CheckpointInfo } from '../../daemon/api.js'

const MiB = 1024 * 1024
const MANIFEST = fileURLToPath(new URL('../../../scripts/manifest.sh', import.meta.url))
const manifest = (dir: string): string => execFileSync('bash', [MANIFEST, dir], { maxBuffer: 64 * MiB }).toString()
const packsBytes = (store: string): number => fs.readdirSync(path.join(store, 'packs')).reduce((n, f) => n + fs.statSync(path.join(store, 'packs', f)).size, 0)

const m = await mountWorkspace(t, dir => {
  fs.mkdirSync(path.join(dir, 'src'))
  fs.writeFileSync(path.join(dir, 'src/lower.txt'), 'from before the mount\n')
})
const p = (r: string): string => path.join(m.dir, r)
const want = new Map<number, string>([[(await m.client.log({}))[0]!.id, manifest(m.dir)]]) // #1, the mount checkpoint
const mark = async (label: string, context?: unknown): Promise<CheckpointInfo> => {
  const c = await m.client.mark(context === undefined ? { label } : { label, context })
  want.set(c.id, manifest(m.dir))
  return c
}

// main: #1 mount; #2 a; #3 a' ; then a branch from #2 with unique content C
const a1 = crypto.randomBytes(MiB)
const a2 = crypto.randomBytes(MiB)
const onlyDropped = crypto.randomBytes(3 * MiB) // content only the dropped branch holds; a writer writes it again during gc
const reallyGone = crypto.randomBytes(2 * MiB) // content only the dropped branch holds, and nobody writes again
const pinnedData = crypto.randomBytes(MiB)
fs.writeFileSync(p('a.bin'), a1)
const c2 = await mark('a')
fs.writeFileSync(p('a.bin'), a2)
const c3 = await mark('a changed')
await m.client.restore({ id: c2.id })
fs.writeFileSync(p('dropped.bin'), onlyDropped)
fs.writeFileSync(p('gone.bin'), reallyGone)
fs.mkdirSync(p('empty-dir'))
const c4 = await mark('abandoned branch', { run: 'finished-run', messages: [] })
await m.client.runEnd({ run: 'finished-run' })
fs.rmSync(p('dropped.bin')) // from here on only #4 holds them
fs.rmSync(p('gone.bin'))
fs.writeFileSync(p('pinned.bin'), pinnedData)
const c5 = await mark('pinned on the abandoned branch')
await m.client.pin({ id: c5.id })
fs.writeFileSync(p('note.txt'), 'a live run was here\n')
const c6 = await mark('live run', { run: 'live-run', messages: [{ role: 'user', content: 'x' }] })
fs.rmSync(p('note.txt'))
const c7 = await mark('after the live run')
// back to the main line: #3 is restored; its lineage is the current one
await m.client.restore({ id: c3.id })
fs.writeFileSync(p('b.txt'), 'on the current branch\n')
const c8 = await mark('current head')

const all = await m.client.log({ limit: 1000 })
const byId = new Map(all.map(c => [c.id, c]))

t.test('dry run: nothing changes', async tt => {
  const before = packsBytes(m.store)
  const r = await m.client.gc({ keepLast: 1, abandonedAfterMs: 0, dryRun: true })
  tt.equal(r.dryRun, true)
  tt.ok(r.checkpoints.removed.length > 0, 'it would remove some checkpoints')
  tt.same((await m.client.log({ limit: 1000 })).map(c => c.id), all.map(c => c.id), 'every checkpoint is still there')
  tt.equal(packsBytes(m.store), before, 'packs are unchanged')
})

t.test('gc while a writer writes the dropped content', async tt => {
  // independently: what the policy keeps
  const keep = new Set<number>([Math.max(...all.map(c => c.id))]) // keepLast 1
  for (let id: number | null = c8.id; id !== null; id = byId.get(id)!.parent) keep.add(id) // lineage of the head
  keep.add(c5.id) // pinned
  keep.add(c6.id) // live run (not ended, marked just now)
  const expectRemoved = all.map(c => c.id).filter(id => !keep.has(id)).sort((x, y) => x - y)
  tt.ok(expectRemoved.includes(c4.id) && expectRemoved.includes(c7.id), `the abandoned branch's unpinned checkpoints go (#${c4.id}, #${c7.id})`)

  const before = packsBytes(m.store)
  // a writer in another process rewrites the dropped content again and again while gc runs
  const copyFile = p('rewritten.bin')
  const src = path.join(m.root, 'dropped-copy.bin')
  fs.writeFileSync(src, onlyDropped)
  const writer = spawn('bash', ['-c', `for i in $(seq 1 40); do cp ${src} ${copyFile}.tmp && mv ${copyFile}.tmp ${copyFile}; done`], { stdio: 'ignore' })
  const wrote = new Promise<number>(resolve => writer.on('exit', code => resolve(code ?? 1)))
  const r = await m.client.gc({ keepLast: 1, abandonedAfterMs: 0 })
  tt.equal(await wrote, 0, 'the writer finished without an error')
  tt.same(r.checkpoints.removed, expectRemoved, `removed exactly #${expectRemoved.join(', #')}`)
  tt.equal(r.checkpoints.kept, keep.size)
  tt.ok(r.nodes > 0, `table nodes and records removed (${r.nodes})`)
  tt.ok(r.blocks.bytes >= reallyGone.length, `the blocks only the removed checkpoints held went (${r.blocks.removed} blocks, ${r.blocks.bytes} bytes)`)
  tt.ok(r.bytes.packsAfter <= r.bytes.packsBefore - reallyGone.length, `packs shrank by at least their bytes: ${r.bytes.packsBefore} -> ${r.bytes.packsAfter} bytes`)
  tt.ok(r.packs.compacted + r.packs.deleted > 0, 'a pack was compacted or deleted')
  tt.same(fs.readFileSync(copyFile), onlyDropped, 'the file written during gc holds the dropped content, byte for byte')
  const c9 = await mark('after gc')
  tt.ok(packsBytes(m.store) < before + onlyDropped.length, 'space was returned')
  const log = await m.client.log({ limit: 1000 })
  tt.same(log.map(c => c.id).sort((x, y) => x - y), [...keep, c9.id].sort((x, y) => x - y), 'the log lists the kept checkpoints')
  for (const c of log) {
    if (c.parent !== null) tt.ok(log.some(x => x.id === c.parent), `#${c.id}'s parent #${c.parent} exists`)
  }
  tt.equal(log.find(c => c.id === c5.id)?.parent, c2.id, `#${c5.id}'s parent is now #${c2.id} (its dropped parent #${c4.id} skipped)`)
  tt.equal(log.find(c => c.id === c5.id)?.pinned, true)
  await tt.rejects(m.client.restore({ id: c4.id }), { code: 'E_UNKNOWN_CHECKPOINT' }, 'a removed checkpoint is unknown')
  for (const id of [...keep, c9.id]) {
    await m.client.restore({ id })
    tt.equal(manifest(m.dir), want.get(id), `kept checkpoint #${id} restores exactly`)
  }
  await m.client.restore({ id: c9.id })
  tt.same(fs.readFileSync(copyFile), onlyDropped, 'after restores, the file written during gc is still intact')
})

t.test('after unmount: verify clean; gc of the stopped store; remount', async tt => {
  await m.unmount()
  const v = await verifyStore(m.store)
  tt.same(v.problems, [], 'verify is clean after gc in the daemon')
  const r = await m.cli(['gc', '--store', m.store, '--keep-last', '0', '--abandoned-after', '0', '--run-idle', '0', '--json'])
  tt.equal(r.code, 0, r.stderr)
  const rep = JSON.parse(r.stdout)
  tt.ok(rep.checkpoints.removed.includes(c6.id), 'the idle run\'s checkpoint goes when runs idle for 0 ms are over')
  tt.notOk(rep.checkpoints.removed.includes(c5.id), 'the pinned checkpoint stays')
  const v2 = await verifyStore(m.store)
  tt.same(v2.problems, [], 'verify is clean after gc of the stopped store')
  const text = await m.cli(['gc', '--store', m.store, '--dry-run'])
  tt.match(text.stdout, /^dry run: 0 of \d+ checkpoints would be removed; \d+ kept/m, 'a second (dry) run finds nothing more')
  await m.remount()
  tt.same(fs.readFileSync(p('rewritten.bin')), onlyDropped, 'the workspace written back holds the final state')
  await m.client.restore({ id: c5.id })
  tt.equal(manifest(m.dir).split('\n').filter(l => l.includes('pinned.bin'))[0]?.split(' ').pop(),
    crypto.createHash('sha256').update(pinnedData).digest('hex'), 'the pinned checkpoint of the first session still restores its content')
})
