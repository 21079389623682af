/**
 * scripts/test.sh, the suite's runner: a Ctrl-C (SIGINT to its process
 * group, as a terminal sends it) stops every process of the run, unmounts
 * its mounts and removes its temporary directory, and test.sh exits 130.
 *
 * The run holds one test file written here: it mounts a workspace (a daemon
 * in a child process), starts a process that keeps the mount busy and one in
 * a session of its own (as tests that stop process groups do), then waits
 * forever. tap and the tests run in `timeout`'s own process group, so
 * without test.sh passing the signal on they would keep running.
 */
import t from 'tap'
import fs from 'node:fs'
import path from 'node:path'
import { spawn } from 'node:child_process'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { tempRoot, forceUnmount } from '../helpers/mount.js'

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..')
const MOUNT_HELPER = pathToFileURL(path.join(ROOT, 'dist/test/helpers/mount.js')).href

/** Pids of the processes whose environment holds TMPDIR=dir or whose command line names a path under dir. */
function processesOf (dir: string): number[] {
  const out: number[] = []
  for (const name of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(name) || Number(name) === process.pid) continue
    try {
      const env = fs.readFileSync(`/proc/${name}/environ`, 'utf8').split('\0')
      const cmd = fs.readFileSync(`/proc/${name}/cmdline`, 'utf8')
      if (env.includes(`TMPDIR=${dir}`) || cmd.includes(dir + '/')) out.push(Number(name))
    } catch {}
  }
  return out
}

/** Mount points under dir (from /proc/mounts, octal escapes undone). */
function mountsUnder (dir: string): string[] {
  return fs.readFileSync('/proc/mounts', 'utf8').split('\n').map(l => (l.split(' ')[1] ?? '').replace(/\\(\d{3})/g, (_, o: string) => String.fromCharCode(parseInt(o, 8))))
    .filter(m => m.startsWith(dir + '/'))
}

const alive = (pid: number): boolean => { try { process.kill(pid, 0); return true } catch { return false } }

/** Polls cond every 100 ms until it holds or ms pass (a bound on waiting, not a timed assertion); the last value. */
async function until<T> (cond: () => T, ms: number): Promise<T> {
  const deadline = Date.now() + ms
  let v = cond()
  while (!v && Date.now() < deadline) { await new Promise(resolve => setTimeout(resolve, 100)); v = cond() }
  return v
}

t.test('Ctrl-C stops every process of the run, unmounts its mounts and removes its directory', async t => {
  const root = tempRoot()
  const mark = path.join(root, 'mounted.json')
  const fixture = path.join(root, 'hangs.mjs')
  // what is left if test.sh fails to clear it: processes of the inner run, its mounts, the directory
  t.teardown(async () => {
    for (const pid of processesOf(root)) { try { process.kill(pid, 'SIGKILL') } catch {} }
    for (const m of mountsUnder(root).sort((a, b) => b.length - a.length)) await forceUnmount(m)
    fs.rmSync(root, { recursive: true, force: true })
  })
  fs.writeFileSync(fixture, `
import fs from 'node:fs'
import { spawn } from 'node:child_process'
import { mountWorkspace } from ${JSON.stringify(MOUNT_HELPER)}
const m = await mountWorkspace({ teardown () {} }, dir => { fs.writeFileSync(dir + '/f', 'x') })
const busy = spawn('sleep', ['1000'], { cwd: m.dir, stdio: 'ignore' })
const apart = spawn('sleep', ['1001'], { detached: true, stdio: 'ignore' })
console.log('TAP version 14')
fs.writeFileSync(${JSON.stringify(mark)}, JSON.stringify({ dir: m.dir, tmp: process.env.TMPDIR, pids: [process.pid, m.daemon.pid, busy.pid, apart.pid] }))
setInterval(() => {}, 1000)
`)
  // the inner tap must not take itself for a child of this run's tap
  const env: NodeJS.ProcessEnv = {}
  for (const [k, v] of Object.entries(process.env)) if (!/^(TAP|_TAPJS)/.test(k)) env[k] = v
  env.TMPDIR = root
  // test.sh runs in a copy of the project's top (its script, package.json, node_modules linked), so
  // the inner tap keeps its .tap/ directory there instead of beside this run's
  const top = path.join(root, 'project')
  fs.mkdirSync(path.join(top, 'scripts'), { recursive: true })
  fs.copyFileSync(path.join(ROOT, 'scripts/test.sh'), path.join(top, 'scripts/test.sh'))
  fs.copyFileSync(path.join(ROOT, 'package.json'), path.join(top, 'package.json'))
  fs.symlinkSync(path.join(ROOT, 'node_modules'), path.join(top, 'node_modules'))
  // a process group of its own, led by test.sh: the terminal's foreground group
  const run = spawn('bash', [path.join(top, 'scripts/test.sh'), fixture], { cwd: top, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] })
  let out = ''
  run.stdout!.on('data', (d: Buffer) => { out += d.toString() })
  run.stderr!.on('data', (d: Buffer) => { out += d.toString() })
  const exited = new Promise<number | null>(resolve => run.on('exit', (code, signal) => resolve(code ?? (signal ? -1 : null))))
  t.teardown(() => { try { process.kill(-run.pid!, 'SIGKILL') } catch {} })

  const ready = await until(() => fs.existsSync(mark), 120000)
  if (!ready) {
    t.fail('the test file under test.sh did not mount within 120 s', { output: out.slice(-3000) })
    return
  }
  const inner = JSON.parse(fs.readFileSync(mark, 'utf8')) as { dir: string, tmp: string, pids: number[] }
  t.ok(inner.tmp.startsWith(root + '/rewindfs-run-'), 'the test runs in test.sh\'s own run directory')
  t.ok(mountsUnder(inner.tmp).includes(inner.dir), 'the workspace is mounted')
  t.ok(inner.pids.every(alive), 'the test, its daemon and the processes it started run')

  process.kill(-run.pid!, 'SIGINT')
  const code = await Promise.race([exited, new Promise<'running'>(resolve => setTimeout(() => resolve('running'), 90000))])
  t.equal(code, 130, 'test.sh ends, with status 130 (128 + SIGINT)', { output: out.slice(-3000) })
  // a process killed with SIGKILL leaves the process table a moment after test.sh saw it go
  const left = await until(() => processesOf(inner.tmp).length === 0 && !inner.pids.some(alive), 5000)
  t.ok(left, 'no process of the run is left (tap, the test, its daemon, the busy one, the one in its own session)', {
    left: processesOf(inner.tmp).map(pid => { try { return `${pid}: ${fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ')}` } catch { return String(pid) } })
  })
  t.same(mountsUnder(inner.tmp), [], 'nothing is mounted under the run directory')
  t.notOk(fs.existsSync(inner.tmp), 'the run directory is removed')
  t.match(out, /SIGINT: stopping the tests/, 'test.sh says why it stopped')
})
