/**
 * The agent half of localisation (issue 16 item 4), without FUSE:
 * backtrack_candidates with `files` (per candidate the files its segment
 * changed: from the daemon's attribution, naming the call; from the
 * recorder's segment metadata; from the diff; nothing for the oldest
 * listed) and backtrack_localise (client/localise.ts: a binary search over
 * the candidates, each probe in a scratch export, never in a workspace).
 * The client is a scripted stand-in: five checkpoints, where the file
 * `flag` exists from checkpoint 4 on, and export writes each checkpoint's
 * files into the probe's directory.
 */
import t from 'tap'
import fs from 'node:fs'
import path from 'node:path'
import { backtrackCandidates, ToolArgumentError } from '../../client/tools.js'
import { backtrackLocalise, parseLocaliseArgs } from '../../client/localise.js'
import type { CandidateInfo, CallChanges, DiffEntry } from '../../proto/messages.js'

const call = (over: Partial<CallChanges>): CallChanges => ({
  call: null, tool: null, args: null, exitStatus: null, open: false, mechanism: null, created: [], modified: [], deleted: [],
  totals: { created: 0, modified: 0, deleted: 0, bytesCreated: 0, bytesModifiedDelta: 0, bytesDeleted: 0 }, ...over
})

/** checkpoint id → its files (name → content) */
const TREES: Record<number, Record<string, string>> = {
  1: { 'a.txt': 'a' },
  2: { 'a.txt': 'a', 'b.txt': 'b' },
  3: { 'a.txt': 'a2', 'b.txt': 'b' },
  4: { 'a.txt': 'a2', 'b.txt': 'b', flag: 'x' },
  5: { 'a.txt': 'a2', flag: 'x' }
}
const CANDIDATES: CandidateInfo[] = [5, 4, 3, 2, 1].map(id => ({ id, step: id - 1, label: `step ${id}`, time: id * 1000, branch: 'main', meta: null }))
// checkpoint 4 was attributed by the daemon; 3 has recorder metadata; 5 and 2 have neither (diff); 1 is the oldest
CANDIDATES[1].calls = { calls: [call({ call: 7, tool: 'write_flag', args: '{}', exitStatus: 0, mechanism: 'cgroup', created: [{ path: 'flag', type: 'file', bytes: 1 }] })] }
CANDIDATES[2].meta = {
  kind: 'rewindfs.segment/1', run: 'r', from: 2, llmCalls: 1, tools: [],
  files: { created: [], modified: [{ path: 'a.txt', bytes: 2, bytesBefore: 1 }], deleted: [] },
  totals: { created: 0, modified: 1, deleted: 0, bytesCreated: 0, bytesModifiedDelta: 1, bytesDeleted: 0 }
}

function fakeClient () {
  const seen = { exports: [] as Array<{ id: number, dir: string }>, diffs: [] as Array<[number, number]> }
  return {
    seen,
    candidates: async ({ limit }: { limit?: number }) => CANDIDATES.slice(0, limit ?? 80),
    export: async ({ id, dir }: { id: number, dir: string }) => {
      seen.exports.push({ id, dir })
      for (const [n, c] of Object.entries(TREES[id])) fs.writeFileSync(path.join(dir, n), c)
      return { id, dir, files: 0, bytes: 0, ms: 0 }
    },
    diff: async ({ a, b }: { a: number, b: number }): Promise<DiffEntry[]> => {
      seen.diffs.push([a, b])
      const out: DiffEntry[] = []
      for (const n of new Set([...Object.keys(TREES[a]), ...Object.keys(TREES[b])])) {
        const x = TREES[a][n]; const y = TREES[b][n]
        if (x === y) continue
        out.push({ path: '/' + n, change: x === undefined ? 'added' : y === undefined ? 'deleted' : 'modified' } as DiffEntry)
      }
      return out
    }
  }
}

t.test('backtrack_candidates with files: from the attribution, the metadata, the diff', async t => {
  const c = fakeClient()
  const plain = await backtrackCandidates(c as any, { reason: 'which step' })
  t.notOk(plain.candidates.some(v => 'files' in v), 'without files: no file lists (and no diff asked)')
  t.same(c.seen.diffs, [])
  const r = await backtrackCandidates(c as any, { reason: 'which step wrote flag', files: true })
  const files = Object.fromEntries(r.candidates.map(v => [v.id, v.files]))
  t.same(files[4], ['A flag (call 7: write_flag)'], 'the daemon\'s attribution names the call')
  t.same(files[3], ['M a.txt'], 'the recorder\'s metadata')
  t.same(files[5], ['D b.txt'], 'the diff from the next older candidate')
  t.same(files[2], ['A b.txt'])
  t.equal(files[1], undefined, 'the oldest listed has no parent to compare with: no list')
  t.same(c.seen.diffs, [[4, 5], [1, 2]], 'the diff is asked only where nothing else knows')
  await t.rejects(backtrackCandidates(c as any, { reason: 'x', files: 'yes' }), ToolArgumentError, 'files must be a boolean')
})

t.test('backtrack_localise finds the first failing candidate in scratch exports', async t => {
  const c = fakeClient()
  const r = await backtrackLocalise(c as any, { command: ['sh', '-c', 'test ! -e flag'], reason: 'flag must not exist' })
  t.equal(r.first_bad, 4)
  t.equal(r.last_good, 3)
  t.same(r.files, ['A flag (call 7: write_flag)'], 'with the files the failing step changed and the call')
  t.equal(r.label, 'step 4')
  t.ok(r.probes.length <= 2 + Math.ceil(Math.log2(5)), `${r.probes.length} probes`)
  t.same(r.probes.map(p => p.checkpoint).slice(0, 2), [5, 1], 'the bad end and the good end are probed first')
  t.ok(r.probes.every(p => p.fails === (p.checkpoint >= 4) && (p.exit_status === 0) === !p.fails), 'each probe\'s outcome matches its checkpoint')
  t.ok(c.seen.exports.every(e => !fs.existsSync(e.dir)), 'every scratch directory is removed')

  const narrowed = await backtrackLocalise(c as any, { command: ['sh', '-c', 'test ! -e flag'], good: 2, bad: 4, reason: 'x' })
  t.same([narrowed.first_bad, narrowed.last_good], [4, 3], 'good and bad narrow the search')
  t.ok(narrowed.probes.every(p => p.checkpoint >= 2 && p.checkpoint <= 4))

  await t.rejects(backtrackLocalise(c as any, { command: ['sh', '-c', 'test ! -e flag'], good: 9, reason: 'x' }), { name: 'ToolArgumentError', field: 'good' }, 'a good that is not a candidate')
  await t.rejects(backtrackLocalise(c as any, { command: ['true'], reason: 'x' }), { name: 'ToolArgumentError', field: 'bad' }, 'a check that passes at bad')
  await t.rejects(backtrackLocalise(c as any, { command: ['false'], reason: 'x' }), { name: 'ToolArgumentError', field: 'good' }, 'a check that fails at good')
  await t.rejects(backtrackLocalise(c as any, { command: ['/nonexistent/check'], reason: 'x' }), { name: 'ToolArgumentError', field: 'command' }, 'a command that cannot run')
  await t.rejects(backtrackLocalise(c as any, { command: ['sh'], good: 4, bad: 3, reason: 'x' }), { name: 'ToolArgumentError', field: 'bad' }, 'good must be older than bad')
  // a probe that hangs is killed and counts as failing (the bound is the tool's, not an assertion on time)
  const slow = await backtrackLocalise(c as any, { command: ['sh', '-c', 'if [ -e flag ]; then exec sleep 600; fi'], reason: 'x' }, { timeoutMs: 300 })
  t.equal(slow.first_bad, 4, 'a probe killed at its timeout fails')
  t.ok(slow.probes.filter(p => p.fails).every(p => p.exit_status === 137), 'with exit status 137 (SIGKILL)')
})

t.test('backtrack_localise arguments', async t => {
  t.throws(() => parseLocaliseArgs({ command: [], reason: 'x' }), { name: 'ToolArgumentError', field: 'command' })
  t.throws(() => parseLocaliseArgs({ command: 'npm test', reason: 'x' }), { name: 'ToolArgumentError', field: 'command' }, 'a string is not an argv')
  t.throws(() => parseLocaliseArgs({ command: ['x'] }), { name: 'ToolArgumentError', field: 'reason' })
  t.throws(() => parseLocaliseArgs({ command: ['x'], reason: 'x', good: 0 }), { name: 'ToolArgumentError', field: 'good' })
  t.throws(() => parseLocaliseArgs({ command: ['x'], reason: 'x', extra: 1 }), { name: 'ToolArgumentError', field: 'extra' })
  t.same(parseLocaliseArgs({ command: ['npm', 'test'], reason: 'r', good: 3, bad: null }), { command: ['npm', 'test'], reason: 'r', good: 3 })
})
