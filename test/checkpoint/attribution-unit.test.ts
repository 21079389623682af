/**
 * Attribution without FUSE (DECISIONS.md "Attribution of changes to tool
 * calls"):
 *
 *  - fs/history/attribution.ts: what the adapter reports (CallLog) becomes,
 *    at a mark, the segment's diff grouped by call: a lower file one call
 *    deleted (known by its name only), a file it created, a rename by
 *    another call (deleted at one path, added at the other), a change no
 *    call made; the record is stored with the checkpoint and reads back the
 *    same after the store is reopened; a segment without a call has none.
 *  - daemon/calls.ts ToolCalls: process ancestry (a child of the call's
 *    process is the call's, its parent is not, nothing after call_end) and,
 *    where this process can make cgroup v2 leaves, the cgroup mechanism (the
 *    process goes into a leaf and back; a process left in it keeps the leaf
 *    and its attribution until it exits).
 */
import t from 'tap'
import fs from 'node:fs'
import path from 'node:path'
import { spawn } from 'node:child_process'
import { tempRoot, open, write } from '../helpers/workspace.js'
import { writableCgroup } from '../helpers/cgroup.js'
import type { CallMeta } from '../../fs/history/call-log.js'
import { CallLog } from '../../fs/history/call-log.js'
import { ToolCalls, cgroup2Mount, cgroupPathOf } from '../../daemon/calls.js'

const meta = (call: number, tool: string, ended = true): CallMeta => ({ call, tool, args: '[]', mechanism: 'pid', started: 1, ended: ended ? 2 : null, exitStatus: ended ? 0 : null })

t.test('a mark groups the segment by call, and the store keeps it', async t => {
  const { root, lowerDir } = tempRoot(t, 'rewindfs-attrib-')
  fs.writeFileSync(path.join(lowerDir, 'old.txt'), 'old content\n')
  fs.writeFileSync(path.join(lowerDir, 'r1'), 'moved\n')
  fs.writeFileSync(path.join(lowerDir, 'x'), 'x\n')
  let s = await open(root, lowerDir)
  const first = await s.gens.mark(s.ws, { label: 'base' })
  const c1 = meta(1, 'edit'); const c2 = meta(2, 'mv', false)
  s.gens.calls.include(c1); s.gens.calls.include(c2)
  // call 1 deletes a lower file and creates one; call 2 renames; nobody's write to x
  const rootIno = s.ws.resolve('/')
  const oldIno = s.ws.resolve('/old.txt')
  s.gens.calls.removedName(rootIno, 'old.txt', c1); s.gens.calls.changed(oldIno, c1)
  s.ws.unlink('/old.txt')
  write(s.ws, '/new.txt', 'new!')
  s.gens.calls.changed(s.ws.resolve('/new.txt'), c1)
  s.gens.calls.removedName(rootIno, 'r1', c2)
  s.ws.rename('/r1', '/r2')
  s.gens.calls.changed(s.ws.resolve('/r2'), c2)
  write(s.ws, '/x', 'xx\n')
  const cp = await s.gens.mark(s.ws, { label: 'after' })
  const a = s.gens.checkpoints.get(cp.id)!.calls!
  t.ok(a, 'the checkpoint has the attribution')
  t.same(a.calls.map(c => [c.call, c.tool, c.open]), [[1, 'edit', false], [2, 'mv', true], [null, null, false]], 'the calls in order, then no call')
  const [e, mv, none] = a.calls
  t.same(e.created, [{ path: 'new.txt', type: 'file', bytes: 4 }])
  t.same(e.deleted, [{ path: 'old.txt', type: 'file', bytes: 12 }], 'a lower file deleted, by its name')
  t.same(e.totals, { created: 1, modified: 0, deleted: 1, bytesCreated: 4, bytesModifiedDelta: 0, bytesDeleted: 12 })
  t.same([mv.deleted.map(f => f.path), mv.created.map(f => f.path)], [['r1'], ['r2']], 'a rename: deleted at one path, added at the other')
  t.same(none.modified, [{ path: 'x', type: 'file', bytes: 3, bytesBefore: 2, attrsOnly: false }], 'the change no call made, with sizes')
  t.equal(a.calls.filter(c => c.created.some(f => f.path === 'x') || c.modified.some(f => f.path === 'x')).length, 1, 'listed once')

  // the open call (2) goes on into the next segment; with no change it is listed with nothing
  write(s.ws, '/y', 'y')
  const cp2 = await s.gens.mark(s.ws, {})
  const a2 = s.gens.checkpoints.get(cp2.id)!.calls!
  t.same(a2.calls.map(c => [c.call, c.created.length]), [[2, 0], [null, 1]], 'a call still open is carried into the next segment')
  c2.ended = 3
  const cp3 = await s.gens.mark(s.ws, {})
  t.same(s.gens.checkpoints.get(cp3.id)!.calls?.calls.map(c => c.call), [2], 'it ends in the segment where call_end came')
  write(s.ws, '/z', 'z')
  const cp4 = await s.gens.mark(s.ws, {})
  t.equal(s.gens.checkpoints.get(cp4.id)!.calls, undefined, 'a segment with no call has no attribution')
  t.equal(s.gens.checkpoints.get(first.id)!.calls, undefined)
  await s.close()
  s = await open(root, lowerDir)
  t.teardown(s.close)
  t.same(s.gens.checkpoints.get(cp.id)!.calls, a, 'the attribution reads back the same from the store')
})

t.test('CallLog: a failed mark gives back what it took', async t => {
  const log = new CallLog()
  t.equal(log.take(), null, 'nothing to take without a call')
  const m = meta(5, 'w', false)
  log.include(m); log.changed(9, m); log.removedName(1, 'a', m)
  const taken = log.take()!
  t.same([...taken.byIno.keys()], [9])
  t.ok(log.any, 'the open call stays in the next segment')
  log.putBack(taken)
  const again = log.take()!
  t.same([[...again.byIno.keys()], [...again.byName.keys()]], [[9], ['1/a']], 'the changes are there again')
})

t.test('ToolCalls by process ancestry', async t => {
  const calls = new ToolCalls(new CallLog(), { mode: 'pid' })
  t.equal(calls.active, false)
  t.throws(() => calls.begin({ tool: 'x', pid: 1 }), { code: 'E_BAD_REQUEST' }, 'init is refused')
  t.throws(() => calls.begin({ tool: 'x', pid: process.pid === 2 ? 3 : 0x3fffff }), { code: 'E_BAD_REQUEST' }, 'a pid with no process is refused')
  t.throws(() => calls.begin({ tool: 'x', pid: process.pid }), { code: 'E_BAD_REQUEST' }, 'the daemon itself is refused')
  // the call's process: a shell with a child
  const shell = spawn('bash', ['-c', 'sleep 30 & echo $!; wait'], { stdio: ['ignore', 'pipe', 'ignore'] })
  t.teardown(() => { shell.kill('SIGKILL') })
  const childPid = await new Promise<number>(resolve => shell.stdout!.once('data', (b: Buffer) => resolve(Number(b.toString().trim()))))
  t.teardown(() => { try { process.kill(childPid, 'SIGKILL') } catch {} })
  const info = calls.begin({ tool: 'sh', args: ['a', 1], pid: shell.pid! })
  t.same([info.mechanism, info.cgroup, info.reason], ['pid', null, 'REWINDFS_ATTRIBUTION=pid'])
  t.ok(calls.active)
  t.equal(calls.callOf(shell.pid!), info.call, 'the call\'s process is the call\'s')
  t.equal(calls.callOf(childPid), info.call, 'a child of the call\'s process is the call\'s')
  t.equal(calls.callOf(process.pid), 0, 'its parent is not')
  t.equal(calls.callOf(0), 0, 'a request without a pid is no call\'s')
  t.same(calls.end({ call: info.call, exitStatus: 2 }), { ...info, exitStatus: 2 })
  t.equal(calls.active, false)
  t.throws(() => calls.end({ call: info.call }), { code: 'E_BAD_REQUEST' }, 'a call ends once')
  t.equal(calls.callOf(childPid), 0, 'nothing is the call\'s after call_end (process ancestry)')
  t.throws(() => new ToolCalls(new CallLog(), { mode: 'cgroups' }), /REWINDFS_ATTRIBUTION=cgroups is not a mechanism/)
})


t.test('ToolCalls by cgroup', { skip: await writableCgroup() === null ? 'no writable cgroup v2 here' : false }, async t => {
  const log = new CallLog()
  const calls = new ToolCalls(log)
  // the call's process: a shell that starts a background child and waits for a signal file
  const tmp = fs.mkdtempSync('/tmp/rewindfs-attrib-cg-')
  t.teardown(() => fs.rmSync(tmp, { recursive: true, force: true }))
  const tool = spawn('bash', ['-c', `while [ ! -e ${tmp}/go ]; do sleep 0.05; done; sleep 30 & echo $! > ${tmp}/bg; while [ ! -e ${tmp}/stop ]; do sleep 0.05; done`])
  t.teardown(() => { tool.kill('SIGKILL') })
  const home = cgroupPathOf(tool.pid!)
  const info = calls.begin({ tool: 'bash', pid: tool.pid! })
  t.equal(info.mechanism, 'cgroup')
  t.equal(cgroupPathOf(tool.pid!), info.cgroup, 'the process is in the call\'s leaf')
  t.match(info.cgroup, new RegExp(`/rewindfs-call-${process.pid}-${info.call}$`))
  t.equal(calls.callOf(tool.pid!), info.call)
  t.equal(calls.callOf(process.pid), 0, 'the daemon-side process is not')
  fs.writeFileSync(path.join(tmp, 'go'), '')
  while (!fs.existsSync(path.join(tmp, 'bg')) || fs.readFileSync(path.join(tmp, 'bg'), 'utf8') === '') await new Promise(resolve => setTimeout(resolve, 20))
  const bg = Number(fs.readFileSync(path.join(tmp, 'bg'), 'utf8'))
  t.teardown(() => { try { process.kill(bg, 'SIGKILL') } catch {} })
  t.equal(calls.callOf(bg), info.call, 'a process the tool started is the call\'s')
  calls.end({ call: info.call, exitStatus: 0 })
  t.equal(cgroupPathOf(tool.pid!), home, 'call_end moves the process back where it came from')
  const leaf = path.join(cgroup2Mount()!.mountPoint, info.cgroup!)
  t.ok(fs.existsSync(leaf), 'the leaf stays while the background child holds it')
  t.ok(calls.active, 'and its changes are still attributed')
  t.equal(calls.callOf(bg), info.call)
  process.kill(bg, 'SIGKILL')
  // the leaf is removed at the next call_begin, call_end or close once empty
  for (let i = 0; i < 200 && fs.readFileSync(path.join(leaf, 'cgroup.procs'), 'utf8').trim() !== ''; i++) await new Promise(resolve => setTimeout(resolve, 20))
  calls.close()
  t.notOk(fs.existsSync(leaf), 'and is removed once empty')
  t.equal(calls.active, false)
  fs.writeFileSync(path.join(tmp, 'stop'), '')
})

t.test('cleanStale removes the leaves of daemons that are gone, whatever the mechanism', async t => {
  // a stand-in hierarchy of plain directories: rmdir behaves as on cgroupfs for an empty leaf, and a
  // leaf with something in it is refused as a busy cgroup is
  const root = fs.mkdtempSync('/tmp/rewindfs-attrib-stale-')
  t.teardown(() => fs.rmSync(root, { recursive: true, force: true }))
  const gone = spawn('true'); await new Promise(resolve => gone.on('exit', resolve))
  const dead = path.join(root, 'a', `rewindfs-call-${gone.pid}-1`)
  const deep = path.join(root, 'a', 'b', 'c', `rewindfs-call-${gone.pid}-2`)
  const live = path.join(root, 'a', 'b', `rewindfs-call-${process.ppid}-3`)
  const busy = path.join(root, `rewindfs-call-${gone.pid}-4`)
  const other = path.join(root, 'rewindfs-call-x-5')
  for (const d of [dead, deep, live, busy, other]) fs.mkdirSync(d, { recursive: true })
  fs.writeFileSync(path.join(busy, 'cgroup.procs'), '123\n')
  const calls = new ToolCalls(new CallLog(), { mode: 'pid', cgroup: { mountPoint: root, root: '/' } })
  t.same(calls.cleanStale(), { removed: 2, busy: 1 })
  t.notOk(fs.existsSync(dead), 'a dead daemon\'s leaf goes')
  t.notOk(fs.existsSync(deep), 'however deep it is')
  t.ok(fs.existsSync(live), 'a running process\'s leaf stays')
  t.ok(fs.existsSync(busy), 'a leaf that cannot be removed stays')
  t.ok(fs.existsSync(other), 'a directory that only looks like one stays')
  t.same(new ToolCalls(new CallLog(), { cgroup: null }).cleanStale(), { removed: 0, busy: 0 }, 'no hierarchy: nothing to do')
})
