/**
 * Attribution of changes to tool calls through a real mount (issue 16 item
 * 2; DECISIONS.md "Attribution of changes to tool calls"): `rewindfs exec`
 * runs a shell that writes a file, starts a child in the background that
 * writes another after the shell's own writes, writes a third, and starts a
 * daemonised grandchild (its parent exits at once, so it is reparented)
 * that writes a fourth after the call has ended; at the same time an
 * unrelated process writes its own files. The next checkpoint's `calls`
 * lists the shell's files under the exec call (the child included) and the
 * unrelated files under no call; the daemonised file is the call's with a
 * cgroup (the leaf outlives the call while a process holds it) and no
 * call's with process ancestry (the documented limit). `blame` names the
 * call for one and "outside any tool call" for the other. Run with the
 * daemon's default mechanism (cgroup where the daemon can make one: this
 * test probes the same thing and expects it) and with
 * REWINDFS_ATTRIBUTION=pid.
 *
 * The same again on the libfuse 2.9 layer (REWINDFS_FUSE=hl), which reports
 * changes by path. Also: the leaves a killed daemon left are removed at
 * the next start and a clean unmount leaves none (cgroup only; skipped
 * without a writable cgroup v2).
 * Every mount is unmounted in teardown (helpers/mount.ts).
 */
import t from 'tap'
import fs from 'node:fs'
import path from 'node:path'
import { spawn } from 'node:child_process'
import { mountWorkspace, type MountChoices } from '../helpers/mount.js'
import { writableCgroup } from '../helpers/cgroup.js'
import { cgroup2Mount } from '../../daemon/calls.js'
import type { CallChanges } from '../../proto/messages.js'

const cgroupDir = await writableCgroup()

/** The call leaves of daemon `pid` in `dir`. */
const leavesOf = (dir: string, pid: number | string): string[] => fs.readdirSync(dir).filter(n => n.startsWith(`rewindfs-call-${pid}-`))

const waitFor = async (file: string): Promise<void> => {
  // a bound on a background writer, not a timing assertion
  const deadline = Date.now() + 60000
  while (!fs.existsSync(file) || fs.readFileSync(file, 'utf8') === '') {
    if (Date.now() > deadline) throw new Error(`${file} was not written within 60 s`)
    await new Promise(resolve => setTimeout(resolve, 20))
  }
}

for (const [name, choices] of [['default mechanism', {}], ['pid mechanism', { env: { REWINDFS_ATTRIBUTION: 'pid' } }], ['libfuse 2.9 layer, REWINDFS_FUSE=hl', { env: { REWINDFS_FUSE: 'hl' } }]] as Array<[string, MountChoices]>) {
  const expected = name === 'pid mechanism' || cgroupDir === null ? 'pid' : 'cgroup'
  t.test(`two processes writing at once, one of them in a tool call (${name}: ${expected})`, async t => {
    const m = await mountWorkspace(t, undefined, choices)
    // the unrelated writer: not started by the call, writing while it runs
    const other = spawn('bash', ['-c', 'for i in $(seq 1 20); do echo $i > other-$i.txt; sleep 0.02; done'], { cwd: m.dir, stdio: 'ignore' })
    const otherDone = new Promise<number | null>(resolve => other.on('exit', resolve))
    // the daemonised writer waits for the go file, which the test writes once the call has ended
    const script = `cd '${m.dir}' || exit 9
echo a > a.txt
(sleep 0.3; echo child > child.txt) &
echo b > b.txt
(setsid bash -c 'while [ ! -e go ]; do sleep 0.05; done; echo away > daemonised.txt' </dev/null >/dev/null 2>&1 &)
wait`
    const ex = await m.cli(['exec', '--no-checkpoint', '--', 'bash', '-c', script])
    t.equal(ex.code, 0, ex.stderr)
    t.equal(await otherDone, 0, 'the unrelated writer finished')
    fs.writeFileSync(path.join(m.dir, 'go'), 'go\n')
    await waitFor(path.join(m.dir, 'daemonised.txt'))
    const cp = await m.client.mark({ label: 'after the call' })
    const cand = (await m.client.candidates({ limit: 1 }))[0]
    t.equal(cand.id, cp.id)
    t.ok(cand.calls, 'the checkpoint carries the attribution of its segment')
    const calls = cand.calls!.calls
    const exec = calls.filter(c => c.tool === 'exec')
    t.equal(exec.length, 1, 'one tool call: the exec')
    const paths = (c: CallChanges): string[] => c.created.map(f => f.path).sort()
    const mine = ['a.txt', 'b.txt', 'child.txt']
    t.equal(exec[0].mechanism, expected, `mechanism ${expected}`)
    t.same(paths(exec[0]), expected === 'cgroup' ? [...mine, 'daemonised.txt'] : mine,
      expected === 'cgroup' ? 'the shell\'s files, its child\'s and its daemonised grandchild\'s, nothing of the other process' : 'the shell\'s files and its child\'s (the daemonised one is missed), nothing of the other process')
    t.equal(exec[0].exitStatus, 0, 'with the exit status of the command')
    t.equal(exec[0].open, false)
    t.ok(exec[0].created.every(f => f.bytes > 0), 'with byte counts')
    t.equal(exec[0].totals.bytesCreated, exec[0].created.reduce((n, f) => n + f.bytes, 0))
    t.equal(exec[0].args, JSON.stringify(['bash', '-c', script]).slice(0, 199) + '…', 'and its arguments as JSON, cut to 200 characters')
    const none = calls.find(c => c.call === null)
    t.ok(none, 'the changes of no call are listed too')
    const others = Array.from({ length: 20 }, (_, i) => `other-${i + 1}.txt`)
    t.same(paths(none!), [...others, 'go', ...(expected === 'pid' ? ['daemonised.txt'] : [])].sort(), 'the unrelated process\'s files (and the test\'s), under no call')

    const blame = await m.cli(['blame', 'child.txt'])
    t.equal(blame.code, 0, blame.stderr)
    t.match(blame.stdout, new RegExp(`/child.txt: A at checkpoint #${cp.id}`))
    t.match(blame.stdout, new RegExp(`tool call ${exec[0].call}: exec \\["bash","-c",.*-> 0 \\(${expected}\\)`), 'blame names the call that made it')
    const blameOther = await m.cli(['blame', 'other-3.txt'])
    t.match(blameOther.stdout, /changed outside any tool call/, 'and says when no call made it')

    // a call that deletes and modifies: the next segment lists them under it
    const ex2 = await m.cli(['exec', '--no-checkpoint', '--', 'bash', '-c', `cd '${m.dir}' && rm a.txt && echo more >> b.txt && exit 3`])
    t.equal(ex2.code, 3, 'exec exits with the command\'s status')
    await m.sh('echo x > other-1.txt')
    await m.client.mark({ label: 'second' })
    const c2 = (await m.client.candidates({ limit: 1 }))[0].calls!.calls
    const e2 = c2.find(c => c.tool === 'exec')!
    t.same(e2.deleted.map(f => f.path), ['a.txt'], 'the deletion is the call\'s')
    t.same(e2.modified.map(f => [f.path, f.bytesBefore, f.bytes]), [['b.txt', 2, 7]], 'the append, with sizes before and after')
    t.equal(e2.exitStatus, 3)
    t.same(c2.find(c => c.call === null)!.modified.map(f => f.path), ['other-1.txt'], 'the other change is no call\'s')
    t.notOk(c2.some(c => c.created.some(f => f.path === 'child.txt')), 'the first call\'s files are not listed again')

    await m.client.mark({ label: 'no call in this segment' })
    t.equal((await m.client.candidates({ limit: 1 }))[0].calls, undefined, 'a segment without a call carries no attribution')
    const pid = m.daemon.pid!
    await m.unmount()
    if (cgroupDir !== null) t.same(leavesOf(cgroupDir, pid), [], 'the unmount left no cgroup leaf')
  })
}

t.test('a killed daemon\'s leaves are removed at the next start', { skip: cgroupDir === null ? 'no writable cgroup v2 here' : false }, async t => {
  const dir = cgroupDir!
  // a leaf of a daemon that is gone (a process that has exited) and one of a running process (kept)
  const gone = spawn('true'); await new Promise(resolve => gone.on('exit', resolve))
  const stale = path.join(dir, `rewindfs-call-${gone.pid}-7`)
  const live = path.join(dir, `rewindfs-call-${process.pid}-1`)
  fs.mkdirSync(stale); fs.mkdirSync(live)
  t.teardown(() => { for (const d of [stale, live]) try { fs.rmdirSync(d) } catch {} })
  const m = await mountWorkspace(t)
  t.notOk(fs.existsSync(stale), 'the dead daemon\'s leaf is gone')
  t.ok(fs.existsSync(live), 'a running process\'s leaf is kept')
  t.match(fs.readFileSync(path.join(m.home, 'daemon.log'), 'utf8'), /removed \d+ cgroup leaves of earlier daemons/, 'the daemon says so')
  // a daemon killed while a call is open: its leaf (the call's process gone) goes at the next start
  const holder = spawn('sleep', ['60'])
  const info = await m.client.callBegin({ tool: 'sleep', pid: holder.pid! })
  t.equal(info.mechanism, 'cgroup')
  const leaf = path.join(cg(info.cgroup!))
  t.ok(fs.existsSync(leaf), `the call's leaf ${info.cgroup} exists`)
  await m.kill9()
  holder.kill('SIGKILL'); await new Promise(resolve => holder.on('exit', resolve))
  t.ok(fs.existsSync(leaf), 'the killed daemon left it')
  await m.remount()
  t.notOk(fs.existsSync(leaf), 'the next daemon removed it')
  await m.unmount()
})

/** The directory of cgroup path `p`. */
function cg (p: string): string {
  const c = cgroup2Mount()!
  return path.join(c.mountPoint, c.root === '/' ? p : p.slice(c.root.length))
}
