/**
 * A full disk under the store, as a user meets it through the CLI (the
 * daemon in the background, its log daemon.log in the store on that disk):
 * 1. the daemon survives a log it cannot write: writes get ENOSPC, the mount
 *    keeps answering reads, and writes work again once space is freed;
 * 2. unmount while full fails with E_NO_SPACE, says why, and the workspace
 *    stays mounted and served; after space is freed it works;
 * 3. mount while full says the store's filesystem is full (not an empty
 *    "did not start"); verify says so without advising a repair; verify
 *    --repair refuses to start and changes nothing;
 * 4. --foreground: Ctrl-C on a full disk logs one line and keeps serving;
 *    unmount.json is never left empty; a later Ctrl-C unmounts.
 * Plus the log function that drops lines it cannot write.
 *
 * Needs root (mount -t tmpfs); skipped with the reason otherwise.
 */
import t from 'tap'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { spawn, spawnSync, execFile, type ChildProcess } from 'node:child_process'
import { promisify } from 'node:util'
import { CLI, forceUnmount } from '../helpers/mount.js'
import { CONNECTION_FILE } from '../../proto/messages.js'
import { safeLog } from '../../daemon/log.js'

const run = promisify(execFile)
const MiB = 1024 * 1024

function freeBytes (dir: string): number {
  const s = fs.statfsSync(dir)
  return s.bavail * s.bsize
}

function isMounted (dir: string): boolean {
  return fs.readFileSync('/proc/mounts', 'utf8').split('\n').some(l => l.split(' ')[1] === dir)
}

function alive (pid: number): boolean {
  try { process.kill(pid, 0); return !fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.startsWith('Z') } catch { return false }
}

async function waitFor (what: string, cond: () => boolean, ms = 30000): Promise<void> {
  const deadline = Date.now() + ms
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise(resolve => setTimeout(resolve, 25))
  }
}

t.test('safeLog drops the lines it cannot write, never throws, and says so later', async tt => {
  const full = fs.openSync('/dev/full', 'w')
  const log = safeLog(full)
  tt.doesNotThrow(() => { log('one'); log('two') }, 'writes to a full device do not throw')
  fs.closeSync(full)
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'rewindfs-test-log-'))
  tt.teardown(() => fs.rmSync(root, { recursive: true, force: true }))
  const file = path.join(root, 'log')
  // dropped lines are counted and said in the next line that can be written: fd 3 is
  // /dev/full, then (closed and reopened: the lowest free number) a file
  const devFull = fs.openSync('/dev/full', 'w')
  const r = spawnSync(process.execPath, ['--input-type=module', '-e', `
    import fs from 'node:fs'
    import { safeLog } from ${JSON.stringify(new URL('../../daemon/log.js', import.meta.url).href)}
    const log = safeLog(3)
    log('a'); log('b')
    fs.closeSync(3); fs.openSync(${JSON.stringify(file)}, 'w')
    log('c')
  `], { stdio: ['ignore', 'inherit', 'inherit', devFull] })
  fs.closeSync(devFull)
  tt.equal(r.status, 0)
  tt.equal(fs.readFileSync(file, 'utf8'), 'rewindfs: 2 log lines were dropped: the log could not be written (ENOSPC)\nc\n')
})

// a tmpfs for the store; HOME (the registry) elsewhere
const root = fs.mkdtempSync(path.join(os.tmpdir(), 'rewindfs-test-diskfull-'))
const fsDir = path.join(root, 'storefs')
fs.mkdirSync(fsDir)
const mounted = spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=32m', 'tmpfs', fsDir], { encoding: 'utf8' })
if (mounted.status !== 0) {
  fs.rmSync(root, { recursive: true, force: true })
  t.test('full disk through the CLI', { skip: `cannot mount a tmpfs for the store (needs root): ${mounted.stderr.trim()}` }, () => {})
} else {
  const dir = path.join(root, 'ws')
  const home = path.join(root, 'home')
  const store = path.join(fsDir, 'store')
  fs.mkdirSync(dir); fs.mkdirSync(home)
  fs.writeFileSync(path.join(dir, 'before.txt'), 'from before the mount\n')
  const env = { ...process.env, REWINDFS_HOME: home, REWINDFS_RESERVE: '2MB' }
  const filler = path.join(fsDir, 'filler')
  const pids = new Set<number>()
  const children: ChildProcess[] = []
  const fill = (): void => {
    spawnSync('dd', ['if=/dev/zero', `of=${filler}`, 'bs=1M', 'count=1024', 'status=none'])
    if (freeBytes(fsDir) !== 0) throw new Error(`the store's filesystem is not full: ${freeBytes(fsDir)} bytes free`)
  }
  const unfill = (): void => { fs.rmSync(filler, { force: true }) }
  const cli = async (args: string[]): Promise<{ stdout: string, stderr: string, code: number }> => {
    try {
      const r = await run(process.execPath, [CLI, ...args], { env, cwd: root, timeout: 120000 })
      return { stdout: r.stdout, stderr: r.stderr, code: 0 }
    } catch (e: any) { return { stdout: e.stdout ?? '', stderr: e.stderr ?? String(e), code: typeof e.code === 'number' ? e.code : 1 } }
  }
  const sh = (cmd: string): { stdout: string, stderr: string, code: number } => {
    const r = spawnSync('bash', ['-c', cmd], { cwd: dir, encoding: 'utf8', timeout: 60000 })
    return { stdout: r.stdout, stderr: r.stderr, code: r.status ?? 1 }
  }
  const daemonPid = (): number => {
    const pid = JSON.parse(fs.readFileSync(path.join(store, CONNECTION_FILE), 'utf8')).pid as number
    pids.add(pid)
    return pid
  }
  t.teardown(async () => {
    unfill()
    if (isMounted(dir)) await cli(['unmount', '-w', dir, '--discard'])
    for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL')
    for (const pid of pids) if (alive(pid)) process.kill(pid, 'SIGKILL')
    await forceUnmount(dir)
    spawnSync('umount', ['-l', fsDir])
    fs.rmSync(root, { recursive: true, force: true })
  })

  t.test('background daemon: a full disk gives ENOSPC, not a dead mount; unmount waits for space', async tt => {
    const m = await cli(['mount', dir, '--store', store])
    tt.equal(m.code, 0, `mount: ${m.stdout}${m.stderr}`)
    const pid = daemonPid()
    fs.writeFileSync(path.join(dir, 'a.txt'), 'written while there was space\n')
    tt.equal((await cli(['checkpoint', '-w', dir, '-m', 'a'])).code, 0)
    fill()
    const w = sh('echo hello > after.txt')
    tt.not(w.code, 0, 'a write fails')
    tt.match(w.stderr, /No space left on device/, 'with ENOSPC')
    // the daemon logged that (once) into daemon.log on the full disk: it must still be there
    tt.ok(alive(pid), 'the daemon is alive')
    const ls = sh('ls')
    tt.equal(ls.code, 0, `ls works: ${ls.stderr}`)
    tt.match(ls.stdout, /a\.txt/)
    tt.equal(fs.readFileSync(path.join(dir, 'a.txt'), 'utf8'), 'written while there was space\n', 'reads work')

    const u = await cli(['unmount', '-w', dir])
    tt.comment(u.stderr)
    tt.equal(u.code, 1, 'unmount fails while the disk is full')
    tt.match(u.stderr, /unmount failed: the store's filesystem \(.*\) is full .*free space there, then unmount again \(nothing is lost/)
    tt.match(u.stderr, /\[E_NO_SPACE\]/)
    tt.notMatch(u.stderr, /was it killed|StoreNoSpaceError/, 'no wrong cause, no stack trace')
    tt.ok(alive(pid), 'the daemon still runs')
    tt.ok(isMounted(dir), 'the workspace is still mounted')
    tt.equal(fs.readFileSync(path.join(dir, 'a.txt'), 'utf8'), 'written while there was space\n', 'and serves reads')
    tt.equal((await cli(['status', '-w', dir])).code, 0, 'status answers')

    unfill()
    tt.equal(sh('echo hello > after.txt').code, 0, 'writes work once space is freed')
    tt.equal(fs.readFileSync(path.join(dir, 'after.txt'), 'utf8'), 'hello\n')
    const u2 = await cli(['unmount', '-w', dir])
    tt.equal(u2.code, 0, `unmount works now: ${u2.stderr}`)
    tt.notOk(isMounted(dir), 'unmounted')
    tt.notOk(alive(pid), 'the daemon ended')
    tt.equal(fs.readFileSync(path.join(dir, 'after.txt'), 'utf8'), 'hello\n', 'the directory holds the final state')
    const outcome = JSON.parse(fs.readFileSync(path.join(store, 'unmount.json'), 'utf8'))
    tt.equal(outcome.ok, true)
  })

  t.test('mount, verify and repair on a full disk say so and change nothing', async tt => {
    fill()
    const m = await cli(['mount', dir, '--store', store])
    tt.comment(m.stderr)
    tt.equal(m.code, 1, 'mount fails')
    tt.match(m.stderr, /the daemon did not start \(exit 1\): the store's filesystem \(.*\) is full \(\d+ bytes free\): free space on that filesystem.*then run rewindfs mount .* again; nothing is lost/)
    tt.match(m.stderr, /it said:\n.*the store's filesystem is full/, 'with what the daemon said, though its log could not be written')
    tt.match(m.stderr, /do not run rewindfs verify --repair while the disk is full/i)
    tt.notOk(isMounted(dir), 'nothing is mounted')

    const v = await cli(['verify', '--store', store])
    tt.equal(v.code, 1)
    tt.match(v.stderr, /the store's filesystem is full .*free space on that filesystem, then retry\. Do not run rewindfs verify --repair/, 'verify says the disk is full, not that the store is damaged')

    const metaBefore = fs.readdirSync(path.join(store, 'meta')).sort()
    const r = await cli(['verify', '--store', store, '--repair'])
    tt.comment(v.stderr + r.stderr)
    tt.equal(r.code, 1, 'repair refuses to start')
    tt.match(r.stderr, /has 0 bytes free; a repair needs at least \d+ \(a backup copy of meta\/, \d+ bytes, .*Nothing was changed/)
    tt.same(fs.readdirSync(path.join(store, 'meta')).sort(), metaBefore, 'meta/ is untouched (no lost/)')
    tt.same(fs.readdirSync(store).filter(n => n.includes('before-repair')), [], 'no backup was started')

    unfill()
    const m2 = await cli(['mount', dir, '--store', store])
    tt.equal(m2.code, 0, `mount works once space is freed: ${m2.stderr}`)
    daemonPid()
    const log = await cli(['log', '-w', dir])
    tt.match(log.stdout, / a\n/, 'the checkpoints are all there')
    tt.equal(fs.readFileSync(path.join(dir, 'after.txt'), 'utf8'), 'hello\n')
    tt.equal((await cli(['unmount', '-w', dir])).code, 0)
  })

  t.test('--foreground: Ctrl-C on a full disk keeps serving; a later Ctrl-C unmounts', async tt => {
    const child = spawn(process.execPath, [CLI, 'mount', dir, '--store', store, '--foreground'], { env, stdio: ['ignore', 'pipe', 'pipe'] })
    children.push(child)
    let err = ''
    child.stderr!.on('data', (b: Buffer) => { err += b.toString() })
    const exited = new Promise<number | null>(resolve => child.once('exit', code => resolve(code)))
    await waitFor('the foreground mount', () => /mounted \(store/.test(err))
    fs.writeFileSync(path.join(dir, 'fg.txt'), 'unsaved\n')
    fs.rmSync(path.join(store, 'unmount.json'), { force: true })
    fill()
    child.kill('SIGINT')
    await waitFor('the unmount failure line', () => /unmount failed/.test(err))
    tt.match(err, /rewindfs: unmount failed: the store's filesystem \(.*\) is full .*free space there, then unmount again \(nothing is lost/)
    tt.notMatch(err, /StoreNoSpaceError|\n\s+at /, 'no stack trace')
    await new Promise(resolve => setTimeout(resolve, 300))
    tt.equal(child.exitCode, null, 'the process goes on')
    tt.ok(isMounted(dir), 'still mounted')
    tt.equal(fs.readFileSync(path.join(dir, 'fg.txt'), 'utf8'), 'unsaved\n', 'and served')
    const outcome = path.join(store, 'unmount.json')
    tt.ok(!fs.existsSync(outcome) || fs.statSync(outcome).size > 0, 'unmount.json is not left empty')
    const st = await cli(['status', '-w', dir])
    tt.equal(st.code, 0, `the CLI reaches the daemon: ${st.stderr}`)

    unfill()
    tt.equal(fs.readFileSync(path.join(dir, 'fg.txt'), 'utf8'), 'unsaved\n', 'reads after space returns (no EIO)')
    child.kill('SIGINT')
    tt.equal(await exited, 0, 'a second Ctrl-C unmounts and ends it')
    tt.notOk(isMounted(dir), 'unmounted')
    tt.equal(fs.readFileSync(path.join(dir, 'fg.txt'), 'utf8'), 'unsaved\n', 'the directory holds the final state')
    tt.equal(JSON.parse(fs.readFileSync(outcome, 'utf8')).ok, true)
  })
}
