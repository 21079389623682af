/**
 * The agent operations against a real daemon and mount: candidates (the
 * current lineage, newest first, steps, limit, segment metadata), rewind
 * memory (order, per run, kill -9, validation), and the Python client end to
 * end (test/python/agent_roundtrip.py).
 */
import t, { type Test } from 'tap'
import fs from 'node:fs'
import path from 'node:path'
import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import { fileURLToPath } from 'node:url'
import { mountWorkspace } from '../helpers/mount.js'
import { RewindClient, RewindError } from '../../client/client.js'

const run = promisify(execFile)
/** the repository root (this file runs from dist/test) */
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..')
/** Debian's python3 (it has python3-websockets); a version-manager shim on PATH may not */
const PYTHON = fs.existsSync('/usr/bin/python3') ? '/usr/bin/python3' : 'python3'

async function rejectsCode (t: Test, p: Promise<unknown>, code: string, field?: string): Promise<void> {
  try {
    await p
    t.fail(`expected ${code}`)
  } catch (e) {
    t.ok(e instanceof RewindError, 'a RewindError')
    t.equal((e as RewindError).code, code, code)
    if (field !== undefined) t.same((e as RewindError).details, { field }, `details name ${field}`)
  }
}

t.test('candidates: the current lineage newest first, steps, limit, meta; an abandoned branch is left out', async t => {
  const m = await mountWorkspace(t, dir => { fs.writeFileSync(path.join(dir, 'f'), '0') })
  const c = m.client
  const start = await c.candidates()
  t.equal(start.length, 1, 'after mount: checkpoint "mount" only')
  t.same(start[0], { id: start[0].id, step: 0, label: 'mount', time: start[0].time, branch: 'main', meta: null })
  fs.writeFileSync(path.join(m.dir, 'f'), 'a')
  const a = await c.mark({ label: 'a', meta: { seg: 'a', tools: [{ name: 'write', exit: 0 }] } })
  fs.writeFileSync(path.join(m.dir, 'f'), 'b')
  const b = await c.mark({ label: 'b', meta: 'just a string' })
  fs.writeFileSync(path.join(m.dir, 'f'), 'c')
  const cc = await c.mark({ label: 'c' })

  const all = await c.candidates()
  t.same(all.map(x => x.id), [cc.id, b.id, a.id, start[0].id], 'newest first')
  t.same(all.map(x => x.step), [3, 2, 1, 0], 'step 0 is the oldest, +1 per checkpoint')
  t.same(all[2].meta, { seg: 'a', tools: [{ name: 'write', exit: 0 }] }, 'object meta round-trips')
  t.equal(all[1].meta, 'just a string', 'any JSON meta round-trips')
  t.equal(all[0].meta, null, 'no meta: null')
  t.same(all.map(x => x.label), ['c', 'b', 'a', 'mount'])
  t.equal(all[0].time, cc.time)
  t.same((await c.candidates({ limit: 2 })).map(x => [x.id, x.step]), [[cc.id, 3], [b.id, 2]], 'limit keeps the newest, steps unchanged')

  await c.restore({ id: a.id })
  t.same((await c.candidates()).map(x => x.id), [a.id, start[0].id], 'after a restore the lineage ends at the restored checkpoint')
  fs.writeFileSync(path.join(m.dir, 'f'), 'd')
  const d = await c.mark({ label: 'd', meta: { seg: 'd' } })
  const after = await c.candidates()
  t.same(after.map(x => x.id), [d.id, a.id, start[0].id], 'b and c (the abandoned branch) are not on the new lineage')
  t.same(after.map(x => x.step), [2, 1, 0])
  t.same(after.map(x => x.branch), [d.branch, 'main', 'main'], 'the lineage crosses branches')
  t.not(d.branch, 'main', 'd is on the new branch')
  t.same(after[0].meta, { seg: 'd' })
  t.ok((await c.log()).some(x => x.id === cc.id), 'the abandoned checkpoints are still in log')

  const json = await RewindClient.connect({ storeDir: m.store, encoding: 'json' })
  t.teardown(() => json.close())
  t.same(await json.candidates(), after, 'JSON frames give the same answer')
  await rejectsCode(t, c.candidates({ limit: 0 }), 'E_BAD_REQUEST', 'limit')
  await rejectsCode(t, c.candidates({ limit: 81 }), 'E_BAD_REQUEST', 'limit')
  await rejectsCode(t, c.candidates({ limit: 1.5 }), 'E_BAD_REQUEST', 'limit')
})

t.test('candidates: at most 80 by default', async t => {
  const m = await mountWorkspace(t)
  for (let i = 0; i < 84; i++) await m.client.mark({ label: `m${i}` })
  const all = await m.client.candidates()
  t.equal(all.length, 80)
  t.equal(all[0].label, 'm83')
  t.equal(all[0].step, 84, 'steps count the whole lineage, not the page')
  t.equal(all[79].step, 5)
})

t.test('rewind memory: insertion order per run, durable across kill -9, validated', async t => {
  const m = await mountWorkspace(t)
  const entries = [
    { tried: 'run the generator with --normalize', abandoned: 'it overwrote the fixtures', instead: 'use --check' },
    { fact: 'tests need python3', nested: { list: [1, 2, { x: null }] } },
    { milestone: 'bug fixed in lib/parse.js' },
  ]
  for (const [i, e] of entries.entries()) t.same(await m.client.memoryAdd({ run: 'run-1', entry: e }), { count: i + 1 }, `count ${i + 1}`)
  t.same(await m.client.memoryAdd({ run: 'run-1 b', entry: { other: true } }), { count: 1 }, 'runs are separate')
  t.same(await m.client.memoryAdd({ run: 'run-1"', entry: { other: 2 } }), { count: 1 }, 'a run sorting right after is separate too')
  t.same((await m.client.memoryGet({ run: 'run-1' })).entries, entries, 'insertion order')
  t.same((await m.client.memoryGet({ run: 'unknown' })).entries, [], 'unknown run: no entries')

  await m.kill9()
  await m.remount()
  t.same((await m.client.memoryGet({ run: 'run-1' })).entries, entries, 'every acknowledged entry survives kill -9')
  t.same((await m.client.memoryAdd({ run: 'run-1', entry: { after: 'crash' } })).count, 4, 'it keeps growing after a restart')
  const json = await RewindClient.connect({ storeDir: m.store, encoding: 'json' })
  t.teardown(() => json.close())
  t.same((await json.memoryGet({ run: 'run-1' })).entries, [...entries, { after: 'crash' }], 'JSON frames')
  t.same((await json.memoryGet({ run: 'run-1 b' })).entries, [{ other: true }])

  const bad = (x: unknown): Record<string, unknown> => x as Record<string, unknown>
  await rejectsCode(t, m.client.memoryAdd({ run: 'run-1', entry: bad([1, 2]) }), 'E_BAD_REQUEST', 'entry')
  await rejectsCode(t, json.memoryAdd({ run: 'run-1', entry: bad('text') }), 'E_BAD_REQUEST', 'entry')
  await rejectsCode(t, m.client.memoryAdd({ run: 'run-1', entry: bad(null) }), 'E_BAD_REQUEST', 'entry')
  await rejectsCode(t, m.client.memoryAdd({ run: 'run-1', entry: bad(new Uint8Array([1])) }), 'E_BAD_REQUEST', 'entry')
  for (const run of ['', 'a!b', 'x'.repeat(201), 'line\nbreak', 'nul\u0000']) {
    await rejectsCode(t, m.client.memoryAdd({ run, entry: { x: 1 } }), 'E_BAD_REQUEST', 'run')
  }
  await rejectsCode(t, m.client.memoryGet({ run: 'a!b' }), 'E_BAD_REQUEST', 'run')
  await rejectsCode(t, m.client.call('memory_add', { run: 'run-1', entry: { x: 1 }, extra: 1 } as never), 'E_BAD_REQUEST', 'extra')
  t.same((await m.client.memoryGet({ run: 'run-1' })).entries.length, 4, 'nothing stored by refused requests')
  t.ok((await m.client.memoryAdd({ run: 'x'.repeat(200), entry: {} })).count === 1, '200 characters and an empty object are accepted')
})

t.test('Python client end to end: mark with context, candidates, restore, context, memory', async t => {
  const m = await mountWorkspace(t, dir => { fs.writeFileSync(path.join(dir, 'notes.txt'), 'original\n') })
  const script = path.join(ROOT, 'test/python/agent_roundtrip.py')
  const r = await run(PYTHON, [script, m.store, m.dir], { timeout: 60000 })
  const out = JSON.parse(r.stdout)
  t.equal(out.status_workspace, m.dir)
  t.equal(out.mark.label, 'before edit')
  t.equal(out.candidates[0].id, out.mark.id, 'the new checkpoint is the newest candidate')
  t.same(out.candidates[0].meta, { tools: ['sed'] }, 'meta given by Python')
  t.same(out.candidates.map((c: { step: number }) => c.step), [1, 0])
  t.equal(out.restore.checkpoint, out.mark.id)
  t.same(out.context, { messages: [{ role: 'user', content: 'fix the build' }], turn: 3 }, 'context read back')
  t.equal(out.memory_count, 1)
  t.same(out.memory, [{ tried: 'edit notes', why: 'test' }])
  t.equal(out.error, 'E_UNKNOWN_CHECKPOINT', 'error replies raise RewindError with the code')
  t.equal(out.log_ids.length, 3, 'mount, the mark and the unsaved change sealed before the restore')
  t.equal(out.pin.pinned, true, 'pin from Python')
  t.equal(out.run_end.run, 'py-run')
  t.equal(out.gc.dryRun, true, 'gc dry run from Python')
  t.notOk(out.gc.checkpoints.removed.includes(out.mark.id), 'the pinned checkpoint would be kept')
  t.equal(fs.readFileSync(path.join(m.dir, 'notes.txt'), 'utf8'), 'original\n', 'the workspace file is back')
  t.same((await m.client.context({ id: out.mark.id })), out.context, 'the same context through the TypeScript client')

  fs.chmodSync(path.join(m.store, 'token'), 0o640)
  const refused = await run(PYTHON, [script, m.store, m.dir], { timeout: 60000 }).then(() => null, (e: { stderr: string }) => e)
  t.ok(refused, 'a token file readable by group is refused')
  t.match(refused?.stderr ?? '', /group or others/)
  fs.chmodSync(path.join(m.store, 'token'), 0o600)
})
