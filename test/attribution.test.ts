/**
 * Attribution of changes to tool calls through a real mount (issue 16 item
 * 2; DECISIONS.md "Attribution of changes to tool calls"): `rewindfs exec`
 * runs a shell that writes a file, starts a child in the background that
 * writes another after the shell's own writes, and writes a third; at the
 * same time an unrelated process writes its own files. The next
 * checkpoint's `calls` lists the three under the exec call (the child
 * included) and the unrelated files under no call; `blame` names the call
 * for one and "outside any tool call" for the other. Run once with the
 * daemon's default mechanism (cgroup where the daemon can make one) and
 * once with REWINDFS_ATTRIBUTION=pid (process ancestry). The mount is
 * unmounted in teardown (helpers/mount.ts).
 */
import t from 'tap'
import path from 'node:path'
import { spawn } from 'node:child_process'
import { mountWorkspace, type MountChoices } from './helpers/mount.js'
import type { CallChanges } from '../proto/messages.js'

for (const [name, choices] of [['default mechanism', {}], ['pid mechanism', { env: { REWINDFS_ATTRIBUTION: 'pid' } }]] as Array<[string, MountChoices]>) {
  t.test(`two processes writing at once, one of them in a tool call (${name})`, async t => {
    const m = await mountWorkspace(t, undefined, choices)
    // the unrelated writer: not started by the call, writing while it runs
    const other = spawn('bash', ['-c', 'for i in $(seq 1 20); do echo $i > other-$i.txt; sleep 0.02; done'], { cwd: m.dir, stdio: 'ignore' })
    const otherDone = new Promise<number | null>(resolve => other.on('exit', resolve))
    const script = `cd '${m.dir}' && echo a > a.txt && (sleep 0.3; echo child > child.txt) & echo b > b.txt; wait`
    const ex = await m.cli(['exec', '--no-checkpoint', '--', 'bash', '-c', script])
    t.equal(ex.code, 0, ex.stderr)
    t.equal(await otherDone, 0, 'the unrelated writer finished')
    const cp = await m.client.mark({ label: 'after the call' })
    const cand = (await m.client.candidates({ limit: 1 }))[0]
    t.equal(cand.id, cp.id)
    t.ok(cand.calls, 'the checkpoint carries the attribution of its segment')
    const calls = cand.calls!.calls
    const exec = calls.filter(c => c.tool === 'exec')
    t.equal(exec.length, 1, 'one tool call: the exec')
    const paths = (c: CallChanges): string[] => c.created.map(f => f.path).sort()
    t.same(paths(exec[0]), ['a.txt', 'b.txt', 'child.txt'], 'the shell\'s files and its background child\'s, nothing of the other process')
    t.equal(exec[0].exitStatus, 0, 'with the exit status of the command')
    t.equal(exec[0].open, false)
    t.ok(exec[0].created.every(f => f.bytes > 0), 'with byte counts')
    t.same(JSON.parse(exec[0].args ?? 'null'), ['bash', '-c', script], 'and its arguments')
    if (name === 'pid mechanism') t.equal(exec[0].mechanism, 'pid')
    else t.ok(exec[0].mechanism === 'cgroup' || exec[0].mechanism === 'pid', `mechanism ${exec[0].mechanism}`)
    const none = calls.find(c => c.call === null)
    t.ok(none, 'the changes of no call are listed too')
    t.same(paths(none!), Array.from({ length: 20 }, (_, i) => `other-${i + 1}.txt`).sort(), 'the unrelated process\'s files, under no call')
    t.equal(none!.totals.created, 20)

    const blame = await m.cli(['blame', 'child.txt'])
    t.equal(blame.code, 0, blame.stderr)
    t.match(blame.stdout, new RegExp(`/child.txt: A at checkpoint #${cp.id}`))
    t.match(blame.stdout, new RegExp(`tool call ${exec[0].call}: exec \\["bash","-c",.*-> 0`), 'blame names the call that made it')
    const blameOther = await m.cli(['blame', path.posix.join('other-3.txt')])
    t.match(blameOther.stdout, /changed outside any tool call/, 'and says when no call made it')
    await m.unmount()
  })
}
