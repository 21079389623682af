/**
 * `rewindfs mount` through the real CLI (background daemon):
 *  - numeric options are validated before anything starts (--port 99999,
 *    --port abc, --reserve, gc's counts and durations, log -n);
 *  - a port in use fails in one line, with nothing mounted and no daemon
 *    left behind (the daemon listens before it mounts);
 *  - `cd DIR && rewindfs mount .` warns that the shell's directory is the
 *    one under the mount.
 * Every mount is unmounted in teardown, its daemon killed if still alive.
 */
import t, { type Test } from 'tap'
import fs from 'node:fs'
import net from 'node:net'
import path from 'node:path'
import { execFile } from 'node:child_process'
import { CLI, tempRoot, forceUnmount } from '../helpers/mount.js'
import { CONNECTION_FILE } from '../../proto/messages.js'
import { startDaemon } from '../../daemon/daemon.js'
import { parseSize } from '../../cli/parse.js'

interface Ran { stdout: string, stderr: string, code: number }

/** A workspace directory and REWINDFS_HOME in a temporary root; teardown unmounts, kills its daemon, removes it. */
function workspace (tt: Test): { dir: string, home: string, root: string, cli: (args: string[], cwd?: string) => Promise<Ran> } {
  const root = tempRoot()
  const dir = path.join(root, 'ws')
  const home = path.join(root, 'home')
  fs.mkdirSync(dir)
  fs.mkdirSync(home)
  fs.writeFileSync(path.join(dir, 'a.txt'), 'a\n')
  tt.teardown(async () => {
    for (const store of storesUnder(home)) {
      try {
        const pid = JSON.parse(fs.readFileSync(path.join(store, CONNECTION_FILE), 'utf8')).pid
        await new Promise(resolve => execFile(process.execPath, [CLI, 'unmount', '-w', dir], { env: { ...process.env, REWINDFS_HOME: home }, timeout: 60000 }, resolve))
        try { process.kill(pid, 'SIGKILL') } catch {}
      } catch {}
    }
    await forceUnmount(dir)
    fs.rmSync(root, { recursive: true, force: true })
  })
  const cli = async (args: string[], cwd = root): Promise<Ran> => await new Promise(resolve => {
    execFile(process.execPath, [CLI, ...args], { cwd, env: { ...process.env, REWINDFS_HOME: home }, timeout: 60000 }, (err, stdout, stderr) => {
      resolve({ stdout, stderr, code: err ? (typeof err.code === 'number' ? err.code : 1) : 0 })
    })
  })
  return { dir, home, root, cli }
}

/** Store directories (holding meta/) under `home`. */
function storesUnder (home: string): string[] {
  const out: string[] = []
  const walk = (d: string, depth: number): void => {
    if (depth > 4) return
    let names: string[] = []
    try { names = fs.readdirSync(d) } catch { return }
    if (names.includes('meta')) out.push(d)
    for (const n of names) if (fs.statSync(path.join(d, n), { throwIfNoEntry: false })?.isDirectory()) walk(path.join(d, n), depth + 1)
  }
  walk(home, 0)
  return out
}

function isMounted (dir: string): boolean {
  return fs.readFileSync('/proc/mounts', 'utf8').split('\n').some(l => l.split(' ')[1] === dir)
}

t.test('numeric options are validated before anything starts', async tt => {
  const w = workspace(tt)
  for (const [args, what] of [
    [['mount', w.dir, '--port', '99999'], /option '--port <n>' argument '99999' is invalid\. a port is a whole number from 0 to 65535/],
    [['mount', w.dir, '--port', 'abc'], /argument 'abc' is invalid\. a port is a whole number/],
    [['mount', w.dir, '--port', '-1'], /a port is a whole number/],
    [['mount', w.dir, '--reserve', 'lots'], /argument 'lots' is invalid\. give a size in bytes/],
    [['gc', '--store', w.root, '--keep-last', '-3'], /argument '-3' is invalid\. give a whole number/],
    [['gc', '--store', w.root, '--abandoned-after', '5'], /argument '5' is invalid\. give a number with a unit such as 7d/],
    [['gc', '--store', w.root, '--run-idle', 'soon'], /argument 'soon' is invalid/],
    [['log', '-n', '0'], /argument '0' is invalid\. give a whole number of at least 1/]
  ] as const) {
    const t0 = Date.now()
    const r = await w.cli([...args])
    tt.equal(r.code, 1, `${args.join(' ')}: exit 1`)
    tt.match(r.stderr, what, `${args.join(' ')}: says what is wrong`)
    tt.ok(Date.now() - t0 < 20000, `${args.join(' ')}: fails at once`)
  }
  tt.notOk(isMounted(w.dir), 'nothing was mounted')
  tt.same(storesUnder(w.home), [], 'no store was even created')
})

t.test('sizes: a unit letter alone, any case, with or without i and B, is a power of 1024; nothing else passes', async tt => {
  // the bytes package alone reads "5M" as 5 bytes, which turned the reserve off (a newcomer's trial)
  for (const [v, n] of [['5M', 5 * 1048576], ['5m', 5 * 1048576], ['5MB', 5 * 1048576], ['5MiB', 5 * 1048576], ['5Mi', 5 * 1048576], ['1G', 1073741824], ['64k', 65536], ['65536', 65536], ['0', 0]] as const) {
    tt.equal(parseSize(v), n, `${v} = ${n} bytes`)
  }
  for (const v of ['5X', 'lots', '-1', '1.5', '5MBB', '']) tt.throws(() => parseSize(v), /give a size in bytes/, `"${v}" is refused`)
})

t.test('startDaemon refuses a port out of range before mounting', async tt => {
  const w = workspace(tt)
  await tt.rejects(startDaemon({ dir: w.dir, store: path.join(w.root, 'store'), port: 70000 }), /--port 70000 is not a port: give a whole number from 0 to 65535/)
  tt.notOk(isMounted(w.dir), 'nothing mounted')
})

t.test('a port in use: one clear line, nothing mounted, no daemon left', async tt => {
  const w = workspace(tt)
  const busy = net.createServer()
  await new Promise<void>(resolve => busy.listen(0, '127.0.0.1', resolve))
  tt.teardown(() => { busy.close() })
  const port = (busy.address() as net.AddressInfo).port
  const t0 = Date.now()
  const r = await w.cli(['mount', w.dir, '--port', String(port)])
  tt.equal(r.code, 1, 'mount exits 1')
  tt.ok(Date.now() - t0 < 30000, `fails at once (${Date.now() - t0} ms)`)
  tt.match(r.stderr, new RegExp(`the daemon did not start: port ${port} is in use by another process: pick another with --port, or 0 for any free port`), 'says the port is in use and what to do')
  tt.notMatch(r.stderr, /at .*\.js:\d+|EADDRINUSE/, 'no Node error dump')
  tt.notOk(isMounted(w.dir), 'the workspace is not mounted')
  const stores = storesUnder(w.home)
  tt.equal(stores.length, 1, 'the store was opened')
  tt.notOk(fs.existsSync(path.join(stores[0]!, CONNECTION_FILE)), 'no daemon claims it')
  const again = await w.cli(['mount', w.dir])
  tt.equal(again.code, 0, `a mount on any free port works afterwards: ${again.stderr}`)
  tt.ok(isMounted(w.dir), 'mounted')
  const un = await w.cli(['unmount', '-w', w.dir])
  tt.equal(un.code, 0, `unmount works: ${un.stderr}`)
  tt.notOk(isMounted(w.dir), 'unmounted')
})

t.test('mount from inside DIR warns that the shell is below the mount', async tt => {
  const w = workspace(tt)
  const real = fs.realpathSync(w.dir)
  const esc = (x: string): string => x.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
  fs.mkdirSync(path.join(w.dir, 'src'))
  const here = await w.cli(['mount', '.'], w.dir)
  tt.equal(here.code, 0, `mount . works: ${here.stderr}`)
  tt.match(here.stderr, new RegExp(`warning: your shell's current directory is below the new mount.*Run \`cd ${esc(real)}\` \\(full path\\) so your work goes through rewindfs`), 'warns, naming the full path to cd to')
  tt.equal((await w.cli(['unmount', '-w', w.dir])).code, 0, 'unmounted')
  const below = await w.cli(['mount', '..'], path.join(w.dir, 'src'))
  tt.equal(below.code, 0, `mount .. from a subdirectory works: ${below.stderr}`)
  tt.match(below.stderr, new RegExp(`Run \`cd ${esc(path.join(real, 'src'))}\``), 'from a subdirectory: cd to that subdirectory again')
  tt.equal((await w.cli(['unmount', '-w', w.dir])).code, 0, 'unmounted')
  const elsewhere = await w.cli(['mount', w.dir], w.root)
  tt.equal(elsewhere.code, 0, `mount from outside works: ${elsewhere.stderr}`)
  tt.notMatch(elsewhere.stderr, /warning: your shell/, 'no warning from outside DIR')
  tt.equal((await w.cli(['unmount', '-w', w.dir])).code, 0, 'unmounted')
  tt.notOk(isMounted(w.dir), 'nothing left mounted')
})
