/**
 * Unmount while processes use the workspace (issue 11, item 3): refused
 * by default, as umount(8) does, naming each process (pid, command, what it
 * holds: working directory or open file), found through /proc's links; a
 * process whose working directory is the directory underneath the mount
 * (it was there before the mount) does not count; `--lazy` detaches anyway
 * and names the processes it left inside.
 * A CLI command whose own working directory is a dead mount works from /
 * instead of crashing in uv_cwd.
 */
import t from 'tap'
import fs from 'node:fs'
import path from 'node:path'
import { spawn, execFile, type ChildProcess } from 'node:child_process'
import { mountWorkspace, CLI } from '../helpers/mount.js'

const isMounted = (dir: string): boolean => fs.readFileSync('/proc/mounts', 'utf8').split('\n').some(l => l.split(' ')[1] === dir)

t.test('refused while processes are inside; --lazy detaches; a dead cwd does not crash the CLI', async t => {
  const procs: ChildProcess[] = []
  const start = (cmd: string, cwd: string): ChildProcess => {
    const p = spawn('bash', ['-c', cmd], { cwd, stdio: 'ignore' })
    procs.push(p)
    return p
  }
  t.teardown(() => { for (const p of procs) p.kill('SIGKILL') })
  let under!: ChildProcess
  const m = await mountWorkspace(t, dir => {
    fs.mkdirSync(path.join(dir, 'sub')); fs.writeFileSync(path.join(dir, 'f.txt'), 'x\n')
    under = start('exec sleep 120', dir) // in the directory before the mount covers it
  })
  const sleeper = start('exec sleep 120', path.join(m.dir, 'sub'))
  const opener = start(`exec 3<'${path.join(m.dir, 'f.txt')}'; cd /; exec sleep 120`, '/')
  await new Promise(resolve => setTimeout(resolve, 500))
  const u = await m.cli(['unmount'])
  t.equal(u.code, 1, 'unmount is refused')
  t.match(u.stderr, new RegExp(`pid ${sleeper.pid} \\(sleep\\): working directory ${m.dir}/sub`), 'it names the process in the workspace and its working directory')
  t.match(u.stderr, new RegExp(`pid ${opener.pid} \\(sleep\\): open file ${m.dir}/f.txt`), 'and the process with a file open there')
  t.notMatch(u.stderr, new RegExp(`pid ${under.pid} `), 'but not the process in the directory underneath the mount')
  t.match(u.stderr, /--lazy/, 'and says how to detach anyway')
  t.ok(isMounted(m.dir), 'the workspace stays mounted')
  t.equal(fs.readFileSync(path.join(m.dir, 'f.txt'), 'utf8'), 'x\n', 'and served')
  opener.kill('SIGKILL')
  // a command started inside, running once the daemon has gone after the detach
  await m.client.close()
  const daemonPid = m.daemon.pid!
  // env -u NODE_OPTIONS: tap puts its coverage loader there, and it calls process.cwd() before the CLI runs
  const late = new Promise<{ code: number, out: string }>(resolve => {
    execFile('bash', ['-c', `while kill -0 ${daemonPid} 2>/dev/null; do sleep 0.2; done; env -u NODE_OPTIONS "${process.execPath}" "${CLI}" verify --store "${m.store}"`],
      { cwd: path.join(m.dir, 'sub'), env: { ...process.env, REWINDFS_HOME: m.home }, timeout: 120000 },
      (err: any, stdout, stderr) => resolve({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, out: stdout + stderr }))
  })
  await new Promise(resolve => setTimeout(resolve, 500))
  const l = await m.cli(['unmount', '--lazy'])
  t.equal(l.code, 0, `--lazy unmounts (${l.stderr})`)
  t.match(l.stderr, new RegExp(`warning: detached ${m.dir} while \\d+ process(es)? still used it`), 'it says processes were left inside')
  t.match(l.stderr, new RegExp(`pid ${sleeper.pid} \\(sleep\\): working directory ${m.dir}/sub`), 'naming each, with its command and what it held')
  t.notOk(isMounted(m.dir), 'nothing is mounted')
  const v = await late
  t.notMatch(v.out, /uv_cwd/, 'the CLI in a dead directory does not crash')
  t.match(v.out, /current directory is gone/, 'it says its directory is gone')
  t.equal(v.code, 0, `and verify runs from / (${v.out})`)
})
