/**
 * The daemon end to end through a real mount: CLI errors, bad protocol input
 * against the real server, kill -9 recovery, kernel caches after a restore,
 * contexts, write-back and discard at unmount.
 */
import t from 'tap'
import fs from 'node:fs'
import path from 'node:path'
import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import WebSocket from 'ws'
import { mountWorkspace, tempRoot, CLI } from '../helpers/mount.js'
import { killLeavingDeadMount, isMounted } from '../helpers/crash.js'
import { CONNECTION_FILE } from '../../proto/messages.js'
import { fuseLayer } from '../../fuse/layer.js'

const run = promisify(execFile)
const MANIFEST = path.resolve(path.dirname(CLI), '../../scripts/manifest.sh')

async function manifest (dir: string): Promise<string> {
  return (await run('bash', [MANIFEST, dir], { maxBuffer: 64 * 1024 * 1024 })).stdout
}

function populate (dir: string): void {
  fs.mkdirSync(path.join(dir, 'src/lib'), { recursive: true })
  fs.mkdirSync(path.join(dir, 'empty'))
  fs.writeFileSync(path.join(dir, 'src/lib/a.txt'), 'alpha\n')
  fs.writeFileSync(path.join(dir, 'README'), 'readme\n')
  fs.symlinkSync('src/lib/a.txt', path.join(dir, 'link'))
}

t.test('unknown checkpoint: clear error, nothing changes', async t => {
  const m = await mountWorkspace(t, populate)
  fs.writeFileSync(path.join(m.dir, 'new.txt'), 'x')
  const before = await manifest(m.dir)
  const r = await m.cli(['restore', '999'])
  t.equal(r.code, 1, 'exit status 1')
  t.match(r.stderr, /no checkpoint 999/, 'says which checkpoint is unknown')
  t.match(r.stderr, /rewindfs log/, 'says what to do')
  t.equal(await manifest(m.dir), before, 'workspace unchanged')
  const bad = await m.cli(['restore', 'abc'])
  t.equal(bad.code, 1)
  t.match(bad.stderr, /not a checkpoint id/)
})

t.test('protocol: unauthenticated, malformed and unknown-checkpoint requests change nothing', async t => {
  const m = await mountWorkspace(t, populate)
  const info = JSON.parse(fs.readFileSync(path.join(m.store, CONNECTION_FILE), 'utf8'))
  const token = fs.readFileSync(path.join(m.store, 'token'), 'utf8').trim()
  t.equal(fs.statSync(path.join(m.store, 'token')).mode & 0o777, 0o600, 'token file is 0600')
  const url = `ws://127.0.0.1:${info.port}/`
  const status = await new Promise<number>((resolve) => {
    const ws = new WebSocket(url)
    ws.on('unexpected-response', (_req, res) => { resolve(res.statusCode ?? 0); ws.terminate() })
    ws.on('open', () => { resolve(101); ws.close() })
    ws.on('error', () => {})
  })
  t.equal(status, 401, 'no token: 401 before anything is read')
  const ws = new WebSocket(url, { headers: { Authorization: `Bearer ${token}` } })
  await new Promise((resolve, reject) => { ws.once('open', resolve); ws.once('error', reject) })
  const ask = async (text: string): Promise<any> => await new Promise(resolve => {
    ws.once('message', (d) => resolve(JSON.parse(d.toString())))
    ws.send(text)
  })
  const before = await manifest(m.dir)
  const a = await ask('{"v":1,"id":1,"op":"restore"')
  t.equal(a.error?.code, 'E_BAD_REQUEST', 'malformed JSON')
  const b = await ask(JSON.stringify({ v: 1, id: 2, op: 'restore', checkpoint: 424242 }))
  t.equal(b.error?.code, 'E_UNKNOWN_CHECKPOINT', 'unknown checkpoint')
  const c = await ask(JSON.stringify({ v: 1, id: 3, op: 'read', path: '../etc/passwd' }))
  t.equal(c.error?.code, 'E_BAD_REQUEST', 'path escaping the workspace')
  const d = await ask(JSON.stringify({ v: 1, id: 4, op: 'read', path: 'src/lib/a.txt' }))
  t.equal(Buffer.from(d.ok, 'base64').toString(), 'alpha\n', 'read over JSON')
  t.equal(await manifest(m.dir), before, 'nothing changed')
  ws.close()
})

t.test('no request path reaches outside the workspace, not even through a symlink', async t => {
  const m = await mountWorkspace(t, dir => { populate(dir); fs.symlinkSync('/etc', path.join(dir, 'etc-link')); fs.symlinkSync('/etc/passwd', path.join(dir, 'passwd-link')) })
  const cp = await m.client.mark({})
  for (const id of [undefined, cp.id]) {
    const at = id === undefined ? 'live' : `checkpoint ${id}`
    t.equal(await m.client.stat({ id, path: 'etc-link/passwd' }), null, `${at}: a path through a symlink to /etc is not found`)
    await t.rejects(m.client.read({ id, path: 'etc-link/passwd' }), { code: 'E_NOT_FOUND' }, `${at}: read through it refused`)
    await t.rejects(m.client.read({ id, path: 'passwd-link' }), { code: 'E_BAD_REQUEST' }, `${at}: reading a symlink does not follow it`)
    await t.rejects(m.client.readdir({ id, path: 'etc-link' }), { code: 'E_BAD_REQUEST' }, `${at}: listing a symlink does not follow it`)
    const st = await m.client.stat({ id, path: 'passwd-link' })
    t.equal(st?.type, 'symlink', `${at}: stat describes the link itself`)
    t.equal(st?.target, '/etc/passwd')
  }
})

t.test('mark carries a context; stat and read at a checkpoint', async t => {
  const m = await mountWorkspace(t, populate)
  const ctx = { messages: [{ role: 'user', content: 'fix the bug' }], step: 3 }
  const cp = await m.client.mark({ label: 'with context', context: ctx })
  fs.writeFileSync(path.join(m.dir, 'src/lib/a.txt'), 'changed\n')
  t.same(await m.client.context({ id: cp.id }), ctx, 'context comes back')
  const st = await m.client.stat({ id: cp.id, path: 'src/lib/a.txt' })
  t.equal(st?.size, 6)
  t.equal(Buffer.from(await m.client.read({ id: cp.id, path: 'src/lib/a.txt' })).toString(), 'alpha\n', 'old content at the checkpoint')
  t.equal(fs.readFileSync(path.join(m.dir, 'src/lib/a.txt'), 'utf8'), 'changed\n', 'live content unchanged by reading the past')
  const diff = await m.client.diff({ a: cp.id })
  t.ok(diff.some(e => e.path === '/src/lib/a.txt' && e.change === 'modified'), 'diff names the modified file')
})

t.test('diff sees content and mode changes of files whose directory did not change', async t => {
  const m = await mountWorkspace(t, populate)
  fs.appendFileSync(path.join(m.dir, 'src/lib/a.txt'), 'two\n')
  const c2 = await m.client.mark({})
  fs.appendFileSync(path.join(m.dir, 'src/lib/a.txt'), 'three\n')
  fs.chmodSync(path.join(m.dir, 'README'), 0o600)
  const live = await m.client.diff({ a: c2.id })
  t.same(live, [{ path: '/README', change: 'meta' }, { path: '/src/lib/a.txt', change: 'modified' }], 'against the live state')
  const c3 = await m.client.mark({})
  t.same(await m.client.diff({ a: c2.id, b: c3.id }), live, 'between two checkpoints')
  t.same(await m.client.diff({ a: c3.id }), [], 'nothing since the last checkpoint')
  const st = await m.cli(['status'])
  t.match(st.stdout, /unsaved\s+0 paths changed/)
})

t.test('no stale kernel caches after a restore (60 s timeouts)', async t => {
  const m = await mountWorkspace(t, populate)
  const f = path.join(m.dir, 'src/lib/a.txt')
  fs.statSync(f)
  const cp = await m.client.mark({})
  fs.chmodSync(f, 0o600)
  fs.writeFileSync(f, 'a much longer content\n')
  fs.writeFileSync(path.join(m.dir, 'gone.txt'), 'x')
  fs.statSync(path.join(m.dir, 'gone.txt'))
  const fd = fs.openSync(path.join(m.dir, 'README'), 'r')
  fs.writeFileSync(path.join(m.dir, 'README'), 'README changed in place\n')
  // a process whose cwd is inside the tree across the restore
  const shell = execFile('bash', ['-c', 'read x; stat -c "%a %s" lib/a.txt; cat lib/a.txt'], { cwd: path.join(m.dir, 'src') })
  let out = ''
  shell.stdout!.on('data', d => { out += d })
  const r = await m.client.restore({ id: cp.id })
  t.ok(r.changed >= 3, 'changed inodes counted')
  const st = fs.statSync(f)
  t.equal(st.mode & 0o777, 0o644, 'mode restored (attribute cache invalidated)')
  t.equal(st.size, 6, 'size restored')
  t.equal(fs.readFileSync(f, 'utf8'), 'alpha\n')
  t.throws(() => fs.statSync(path.join(m.dir, 'gone.txt')), { code: 'ENOENT' }, 'created file gone (entry invalidated)')
  const buf = Buffer.alloc(100)
  const n = fs.readSync(fd, buf, 0, 100, 0)
  // ll (issue 13): a restore acts like renaming the checkpoint's tree over the live one, so a descriptor keeps the
  // content its file had; hl: the handle follows its path's inode, which now holds the restored bytes
  if (fuseLayer() === 'll') t.equal(buf.subarray(0, n).toString(), 'README changed in place\n', 'an fd opened before the restore keeps the bytes its file had (ll)')
  else t.equal(buf.subarray(0, n).toString(), 'readme\n', 'an fd opened before the restore reads the restored bytes (hl)')
  t.equal(fs.readFileSync(path.join(m.dir, 'README'), 'utf8'), 'readme\n', 'a new open reads the restored bytes')
  fs.closeSync(fd)
  shell.stdin!.end('go\n')
  await new Promise(resolve => shell.on('exit', resolve))
  t.equal(out, '644 6\nalpha\n', 'a process with its cwd inside sees the restored state')
})

for (const layer of ['hl', 'll'] as const) {
  t.test(`${layer}: an open handle whose inode is gone after a restore ${layer === 'll' ? 'keeps its content, its writes private' : 'fails with ESTALE'}`, async t => {
    const m = await mountWorkspace(t, populate, { env: { REWINDFS_FUSE: layer } })
    const cp = await m.client.mark({})
    const fd = fs.openSync(path.join(m.dir, 'born-later.txt'), 'w+')
    fs.writeSync(fd, 'data')
    await m.client.restore({ id: cp.id })
    if (layer === 'hl') {
      // libfuse 2.9 knows the file by its name: ESTALE ("Stale file handle"; libuv has no name for it), or EIO once the kernel looked the name up again (README)
      const errnoOf = (f: () => unknown): number | undefined => { try { f(); return undefined } catch (e) { return (e as { errno?: number }).errno } }
      t.ok([-116, -5].includes(errnoOf(() => fs.readSync(fd, Buffer.alloc(4), 0, 4, 0)) ?? 0), 'read on the vanished inode fails with ESTALE or EIO')
      t.ok([-116, -5].includes(errnoOf(() => fs.writeSync(fd, 'more')) ?? 0), 'and so does write')
      try { fs.closeSync(fd) } catch {} // its flush may fail the same way
    } else {
      // issue 13: as if the checkpoint's tree had been renamed over the live one: the file lives on, unlinked, for its descriptor
      const b = Buffer.alloc(16)
      t.equal(b.subarray(0, fs.readSync(fd, b, 0, 16, 0)).toString(), 'data', 'read on the vanished inode gives the content it had')
      t.equal(fs.writeSync(fd, 'more'), 4, 'a write succeeds')
      t.equal(b.subarray(0, fs.readSync(fd, b, 0, 16, 0)).toString(), 'datamore', 'and is read back through the descriptor (a private copy)')
      t.equal(fs.fstatSync(fd).nlink, 0, 'fstat says nlink 0, as for an unlinked file')
      fs.closeSync(fd)
    }
    t.notOk(fs.existsSync(path.join(m.dir, 'born-later.txt')), 'the file is not in the restored state')
  })
}

t.test('kill -9: no hung mount point; every acknowledged checkpoint restores exactly', async t => {
  const m = await mountWorkspace(t, populate)
  fs.writeFileSync(path.join(m.dir, 'kept.bin'), Buffer.alloc(300000, 7))
  fs.mkdirSync(path.join(m.dir, 'newdir'))
  const acked = await manifest(m.dir)
  const cp = await m.client.mark({ label: 'acked' })
  fs.writeFileSync(path.join(m.dir, 'unacked.txt'), 'lost with the daemon')
  await m.kill9()
  t.doesNotThrow(() => fs.readdirSync(m.dir), 'the mount point is usable (no ENOTCONN)')
  await m.remount()
  t.equal(await manifest(m.dir), acked, 'the live state after remount is the last acknowledged checkpoint')
  fs.rmSync(path.join(m.dir, 'kept.bin'))
  await m.client.restore({ id: cp.id })
  t.equal(await manifest(m.dir), acked, 'and it restores exactly')
})

t.test('kill -9: data acknowledged by fsync survives', async t => {
  const m = await mountWorkspace(t, populate)
  const cp = await m.client.mark({ label: 'before' })
  const f = path.join(m.dir, 'src/journal.db')
  const fd = fs.openSync(f, 'w')
  fs.writeSync(fd, Buffer.alloc(200000, 3))
  fs.fsyncSync(fd)
  fs.closeSync(fd)
  fs.writeFileSync(path.join(m.dir, 'src/lib/a.txt'), 'fsynced edit\n')
  const d = fs.openSync(path.join(m.dir, 'src/lib/a.txt'), 'r')
  fs.fsyncSync(d)
  fs.closeSync(d)
  const durable = await manifest(m.dir)
  await m.kill9()
  await m.remount()
  t.equal(await manifest(m.dir), durable, 'the state the last fsync made durable is back after kill -9')
  t.equal(fs.readFileSync(f).length, 200000)
  const log = await m.client.log({})
  t.ok(log.some(c => c.id === cp.id), 'checkpoints are still there')
  await m.client.restore({ id: cp.id })
  t.notOk(fs.existsSync(f), 'and an earlier checkpoint restores without it')
  const back = log.find(c => c.label?.startsWith('before restore'))
  t.equal(back, undefined, 'no checkpoint was made by fsync')
})

t.test('a kill that leaves a dead mount: rewindfs mount DIR clears it and resumes', async t => {
  // the fusermount helper (auto_unmount) killed with the daemon, as a container or OOM kill does:
  // the mount point stays, dead ("Transport endpoint is not connected")
  for (const cached of [false, true]) {
    await t.test(cached ? 'with the root\'s attributes in the kernel cache' : 'with nothing cached', async t => {
      const m = await mountWorkspace(t, populate)
      fs.writeFileSync(path.join(m.dir, 'kept.txt'), 'kept\n')
      await m.client.mark({ label: 'before the kill' })
      // stat answered from the attribute cache made the dead mount look alive
      if (cached) { fs.statSync(m.dir); fs.readdirSync(m.dir); fs.statSync(m.dir) } else fs.rmSync(path.join(m.dir, 'README'))
      const helper = await killLeavingDeadMount(m)
      t.ok(helper, 'the daemon had a fusermount helper')
      t.throws(() => fs.readdirSync(m.dir), { code: 'ENOTCONN' }, 'the mount point is dead')
      const r = await run(process.execPath, [CLI, 'mount', m.dir, '--store', m.store], { env: { ...process.env, REWINDFS_HOME: m.home }, timeout: 60000 }).catch(e => e)
      t.match(r.stdout, /^mounted /m, `the CLI mounts (${r.stderr ?? ''})`)
      t.match(r.stdout, /clearing a stale mount/, 'and says it cleared the dead mount')
      t.match(r.stdout, /resumed from checkpoint/, 'and that it resumed')
      t.equal(fs.readFileSync(path.join(m.dir, 'kept.txt'), 'utf8'), 'kept\n', 'the last checkpoint is back')
      const u = await m.cli(['unmount', '--discard'])
      t.equal(u.code, 0, u.stderr)
    })
  }
})

t.test('unmount writes the final state back; --discard keeps the original', async t => {
  const m = await mountWorkspace(t, populate)
  fs.writeFileSync(path.join(m.dir, 'src/lib/a.txt'), 'final\n')
  fs.rmSync(path.join(m.dir, 'README'))
  fs.mkdirSync(path.join(m.dir, 'added/deeper'), { recursive: true })
  fs.chmodSync(path.join(m.dir, 'src'), 0o700)
  const final = await manifest(m.dir)
  const cp = (await m.client.log({}))[0]
  await m.unmount(false)
  const onDisk = await manifest(m.dir)
  t.equal(onDisk, final, 'the directory holds the final state (the manifest has times to the nanosecond)')
  await m.remount()
  fs.writeFileSync(path.join(m.dir, 'scratch'), 'x')
  await m.unmount(true)
  t.equal(await manifest(m.dir), final, '--discard leaves the directory as it was at mount')
  await m.remount()
  const first = (await m.client.log({})).at(-1)!
  t.equal(first.label, 'mount')
  await m.client.restore({ id: first.id })
  t.equal(fs.readFileSync(path.join(m.dir, 'src/lib/a.txt'), 'utf8'), 'alpha\n', 'a checkpoint from before the write-back still restores its original content')
  t.equal(fs.readFileSync(path.join(m.dir, 'README'), 'utf8'), 'readme\n')
  t.ok((await m.client.log({})).some(c => c.id === cp.id), 'the checkpoint from before the unmount is still in the log after a remount')
})

t.test('export refuses a destination that leads into the workspace, without touching the mount', async t => {
  const m = await mountWorkspace(t, populate)
  const cp = await m.client.mark({})
  const link = path.join(m.root, 'link-into-ws')
  fs.symlinkSync(path.join(m.dir, 'src'), link)
  const r = await m.cli(['export', String(cp.id), path.join(link, 'x')])
  t.equal(r.code, 1)
  t.match(r.stderr, /inside the workspace/, 'a symlink into the workspace is refused')
  t.doesNotThrow(() => fs.readdirSync(m.dir), 'the daemon still answers')
  const out = path.join(m.root, 'out')
  const ok = await m.cli(['export', String(cp.id), out])
  t.equal(ok.code, 0, ok.stderr)
  t.equal(fs.readFileSync(path.join(out, 'src/lib/a.txt'), 'utf8'), 'alpha\n', 'a plain destination works')
})

t.test('a write-back that cannot write a path fails loudly and loses nothing', async t => {
  const m = await mountWorkspace(t, populate)
  // a path longer than PATH_MAX (4096): made with relative steps inside the mount
  const comp = 'd'.repeat(200)
  const deep = await m.sh(`for i in $(seq 22); do mkdir ${comp} && cd ${comp} || exit 1; done; echo deep > deepfile`)
  t.equal(deep.code, 0, deep.stderr)
  fs.writeFileSync(path.join(m.dir, 'after.txt'), 'written after the deep tree\n')
  await m.client.close()
  const u = await m.cli(['unmount'])
  t.equal(u.code, 1, 'unmount exits 1')
  t.match(u.stderr, /writing the final state back failed/, 'says write-back failed')
  t.match(u.stderr, /Nothing is lost/, 'and that nothing is lost')
  t.ok(fs.existsSync(path.join(m.dir, 'after.txt')), 'siblings of the failing path were still written')
  await new Promise(resolve => m.daemon.exitCode !== null || m.daemon.signalCode !== null ? resolve(null) : m.daemon.once('exit', resolve))
  await m.remount()
  const back = await m.sh(`for i in $(seq 22); do cd ${comp} || exit 1; done; cat deepfile`)
  t.equal(back.stdout, 'deep\n', 'the next mount resumes with the deep file')
  await m.sh(`rm -rf ${comp}`)
  await m.unmount(false)
  t.equal(fs.readFileSync(path.join(m.dir, 'after.txt'), 'utf8'), 'written after the deep tree\n')
  t.notOk(fs.existsSync(path.join(m.dir, comp)), 'after removing it, write-back completes')
})

t.test('exec checkpoints before the command and passes its exit status through', async t => {
  const m = await mountWorkspace(t, populate)
  const before = (await m.client.log({})).length
  const r = await m.cli(['exec', '--checkpoint-each', '--', 'bash', '-c', `echo ran > ${m.dir}/exec-out.txt; exit 3`])
  t.equal(r.code, 3, 'exit status of the command')
  t.match(r.stderr, /checkpoint #\d+ before bash/)
  const log = await m.client.log({})
  t.equal(log.length, before + 1, 'one checkpoint per command')
  t.equal(log[0].label, `before: bash -c echo ran > ${m.dir}/exec-out.txt; exit 3`)
  t.equal(fs.readFileSync(path.join(m.dir, 'exec-out.txt'), 'utf8'), 'ran\n')
  await m.client.restore({ id: log[0].id })
  t.notOk(fs.existsSync(path.join(m.dir, 'exec-out.txt')), 'restoring that checkpoint undoes the command')
  const missing = await m.cli(['exec', '--', 'no-such-command-xyz'])
  t.equal(missing.code, 127)
  t.match(missing.stderr, /command not found/)
})

t.test('write-back skips an xattr the directory cannot hold (too large) and still completes', async t => {
  const m = await mountWorkspace(t, populate)
  const f = path.join(m.dir, 'README')
  const py = fs.existsSync('/usr/bin/python3') ? '/usr/bin/python3' : 'python3'
  const set = await m.sh(`${py} -c "import os; os.setxattr('${f}', 'user.small', b'ok'); os.setxattr('${f}', 'user.big', b'x' * 60000)"`)
  t.equal(set.code, 0, set.stderr)
  await m.unmount(false)
  const got = await m.sh(`${py} -c "import os; print(os.getxattr('${f}', 'user.small').decode())"`)
  t.equal(got.stdout, 'ok\n', 'the xattr the filesystem can hold is written back')
  const outcome = JSON.parse(fs.readFileSync(path.join(m.store, 'unmount.json'), 'utf8'))
  t.same([outcome.ok, outcome.errors], [true, []], 'the unmount reports a complete write-back')
})

t.test('mount errors say what to do', async t => {
  const root = tempRoot()
  t.teardown(() => fs.rmSync(root, { recursive: true, force: true }))
  const env = { ...process.env, REWINDFS_HOME: root }
  const file = path.join(root, 'file')
  fs.writeFileSync(file, '')
  const e1 = await run(process.execPath, [CLI, 'mount', file], { env }).catch(e => e)
  t.match(e1.stderr, /not a directory/)
  const e2 = await run(process.execPath, [CLI, 'mount', path.join(root, 'missing')], { env }).catch(e => e)
  t.match(e2.stderr, /does not exist/)
  const e3 = await run(process.execPath, [CLI, 'status', '-w', root], { env }).catch(e => e)
  t.match(e3.stderr, /never been mounted/)
})

t.test('nested workspaces are refused both ways', async t => {
  const m = await mountWorkspace(t, dir => { fs.mkdirSync(path.join(dir, 'sub')) })
  const env = { ...process.env, REWINDFS_HOME: m.home }
  const inner = await run(process.execPath, [CLI, 'mount', path.join(m.dir, 'sub')], { env }).catch(e => e)
  t.match(inner.stderr, /is inside the rewindfs workspace .*nested workspaces are not supported/, 'a directory inside a workspace')
  const outer = await run(process.execPath, [CLI, 'mount', m.root], { env }).catch(e => e)
  t.match(outer.stderr, /contains the rewindfs workspace .*nested workspaces are not supported.*unmount it first/, 'a directory that contains a workspace')
  t.notOk(fs.readFileSync('/proc/mounts', 'utf8').split('\n').some(l => l.split(' ')[1] === m.root), 'nothing was mounted over it')
})

t.test('unmount says so when the daemon dies before its write-back finished', async t => {
  const m = await mountWorkspace(t, dir => { for (let i = 0; i < 3000; i++) fs.writeFileSync(path.join(dir, `f${i}`), `${i}\n`) })
  const c1 = await m.client.log({})
  fs.readdirSync(m.dir) // the listing becomes the daemon's
  await m.sh('rm -f f*')
  await m.client.mark({ label: 'all removed' })
  await m.client.close()
  // the write-back removes 3000 files; kill the daemon as soon as it starts (the kernel has let go of
  // the directory). Watched in /proc/mounts, not by listing the directory: a listing holds an fd
  // inside the mount, and unmount would refuse, naming this process as a user (seen under load)
  const pid = m.daemon.pid!
  const done = m.cli(['unmount'])
  for (let i = 0; i < 4000 && isMounted(m.dir); i++) await new Promise(resolve => setTimeout(resolve, 5))
  process.kill(pid, 'SIGKILL')
  const r = await done
  t.equal(r.code, 1, 'unmount exits 1')
  t.match(r.stderr, /exited before it finished unmounting .*Nothing is lost: rewindfs mount .* resumes from the store/, 'and says what happened and what to do')
  await new Promise(resolve => m.daemon.exitCode !== null || m.daemon.signalCode !== null ? resolve(null) : m.daemon.once('exit', resolve))
  await m.remount()
  t.same(fs.readdirSync(m.dir).filter(n => n.startsWith('f')), [], 'the next mount resumes the final state')
  await m.client.restore({ id: c1[0]!.id })
  t.equal(fs.readdirSync(m.dir).length, 3000, 'and the first checkpoint restores')
})
