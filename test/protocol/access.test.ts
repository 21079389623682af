/**
 * Discovery and access (PROTOCOL.md §1 "Finding the daemon", "Access"): a
 * daemon run as root through sudo (SUDO_UID/SUDO_GID) on a unix socket
 * (`--socket`) gives its connection file, token copy and socket to that
 * user and to nobody else; that user's client finds the daemon from the
 * workspace path alone (also from a path inside it); another user cannot
 * read the files or connect. Clients run as uid 65534 / 65533 with setpriv.
 */
import t from 'tap'
import fs from 'node:fs'
import path from 'node:path'
import { execFile, execFileSync } from 'node:child_process'
import { promisify } from 'node:util'
import { fileURLToPath } from 'node:url'
import { mountWorkspace } from '../helpers/mount.js'
import { discover, discoveryKey, runtimeDirs } from '../../client/discover.js'
import { RewindClient } from '../../client/client.js'

const run = promisify(execFile)
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..')
const CLIENT = path.join(ROOT, 'dist/client/client.js')
/** Debian's interpreter, which sees python3-websockets and python3-msgpack. */
const PYTHON = fs.existsSync('/usr/bin/python3') ? '/usr/bin/python3' : 'python3'

/** Runs the TypeScript client as `uid` (same gid, no groups): connect by workspace path, print status. */
async function statusAs (uid: number, from: string, runtime: string): Promise<{ code: number, out: string }> {
  const script = `import { RewindClient } from ${JSON.stringify(CLIENT)}
try { const c = await RewindClient.connect({ workspace: process.argv[1], timeoutMs: 10000 }); console.log(JSON.stringify(await c.status())); await c.close() }
catch (e) { console.log('ERROR ' + e.message); process.exitCode = 3 }`
  try {
    const r = await run('setpriv', [`--reuid=${uid}`, `--regid=${uid}`, '--clear-groups', process.execPath, '--input-type=module', '-e', script, from],
      { env: { PATH: process.env.PATH ?? '/usr/bin:/bin', REWINDFS_RUNTIME_DIR: runtime }, timeout: 60000 })
    return { code: 0, out: r.stdout }
  } catch (e: any) { return { code: typeof e.code === 'number' ? e.code : 1, out: `${e.stdout ?? ''}${e.stderr ?? ''}` } }
}

t.test('runtime directories and key', async t => {
  t.same(runtimeDirs({ REWINDFS_RUNTIME_DIR: '/x/y' }, 1000), ['/x/y'], 'REWINDFS_RUNTIME_DIR alone')
  t.same(runtimeDirs({ XDG_RUNTIME_DIR: '/run/user/1000' }, 1000), ['/run/user/1000/rewindfs', '/run/rewindfs', '/tmp/rewindfs-1000'])
  t.same(runtimeDirs({}, 0), ['/run/rewindfs', '/tmp/rewindfs-0'])
  t.equal(await discoveryKey('/home/a/proj'), await discoveryKey('/home/a/proj/'), 'a trailing / does not change the key')
  t.match(await discoveryKey('/home/a/proj'), /^[0-9a-f]{32}$/)
  // sha256("/home/a/proj") — the rule other languages implement
  t.equal(await discoveryKey('/home/a/proj'), (await import('node:crypto')).createHash('sha256').update('/home/a/proj').digest('hex').slice(0, 32))
  t.equal(await discoveryKey('/'), (await import('node:crypto')).createHash('sha256').update('/').digest('hex').slice(0, 32), 'the root keeps its /')
})

/**
 * True when uid 65533 can read this checkout (node loads the client from it as
 * that user): a clone under a mode-0700 directory (mktemp -d) cannot be read.
 */
function othersCanRead (): boolean {
  try {
    execFileSync('setpriv', ['--reuid=65533', '--regid=65533', '--clear-groups', 'test', '-r', path.join(ROOT, 'dist/client/client.js')], { stdio: 'ignore' })
    return true
  } catch { return false }
}

t.test('sudo mount on a unix socket: the user who mounted finds and reaches the daemon, nobody else', { skip: othersCanRead() ? false : `other users cannot read this checkout (${ROOT}: a parent directory is private, e.g. made by mktemp -d): clone it where other users can read it (chmod o+rx on its parents) to run this test` }, async t => {
  const m = await mountWorkspace(t, dir => { fs.mkdirSync(path.join(dir, 'src')) }, {
    daemonArgs: root => ['--socket', path.join(root, 'd.sock')],
    env: { SUDO_UID: '65534', SUDO_GID: '65534' },
  })
  fs.chmodSync(m.root, 0o755) // the test's temporary root: let the other users walk to the runtime directory and socket
  const sock = path.join(m.root, 'd.sock')
  const key = await discoveryKey(m.dir)
  const json = path.join(m.runtime, `${key}.json`)
  const tok = path.join(m.runtime, `${key}.token`)
  for (const [f, what] of [[json, 'connection file'], [tok, 'token copy'], [sock, 'socket']] as const) {
    const st = fs.statSync(f)
    t.equal(st.uid, 65534, `${what} owned by SUDO_UID`)
    t.equal(st.gid, 65534, `${what} group SUDO_GID`)
    t.equal(st.mode & 0o777, 0o600, `${what} mode 0600`)
  }
  t.equal(fs.readFileSync(tok, 'utf8'), fs.readFileSync(path.join(m.store, 'token'), 'utf8'), 'the copy holds the store\'s token')
  const found = await discover(path.join(m.dir, 'src'), { REWINDFS_RUNTIME_DIR: m.runtime })
  t.same(found && { workspace: found.workspace, socket: found.socket, port: found.port, store: found.store, token: found.token },
    { workspace: m.dir, socket: sock, port: null, store: m.store, token: tok }, 'discovered from a path inside the workspace')
  t.equal(await discover(m.root, { REWINDFS_RUNTIME_DIR: m.runtime }), null, 'nothing from a path outside it')

  const mine = await statusAs(65534, m.dir, m.runtime)
  t.equal(mine.code, 0, `the user who mounted connects: ${mine.out}`)
  t.equal(mine.code === 0 ? JSON.parse(mine.out).workspace : null, m.dir, 'and reads the status')
  const below = await statusAs(65534, path.join(m.dir, 'src', 'not', 'yet'), m.runtime)
  t.equal(below.code, 0, `from a path below the workspace that does not exist: ${below.out}`)
  const other = await statusAs(65533, m.dir, m.runtime)
  t.equal(other.code, 3, 'another user cannot')
  t.match(other.out, /cannot read the connection file/, `and is told why: ${other.out.trim()}`)
  // the Python package's discovery, as both users
  const py = async (uid: number): Promise<string> => await run('setpriv', [`--reuid=${uid}`, `--regid=${uid}`, '--clear-groups', PYTHON, '-c',
    'import sys, rewindfs\ntry:\n  c = rewindfs.Client.connect(workspace=sys.argv[1], timeout=10)\n  print(c.status()["workspace"]); c.close()\nexcept rewindfs.RewindError as e:\n  print(e.code, e.message)', path.join(m.dir, 'src')],
  { env: { PATH: process.env.PATH ?? '/usr/bin:/bin', REWINDFS_RUNTIME_DIR: m.runtime, PYTHONPATH: path.join(ROOT, 'client/python'), PYTHONDONTWRITEBYTECODE: '1' }, timeout: 60000 })
    .then(r => r.stdout.trim(), (e: any) => `FAILED ${e.stdout ?? ''}${e.stderr ?? ''}`)
  t.equal(await py(65534), m.dir, 'the Python client of the user who mounted finds the daemon and connects')
  t.match(await py(65533), /^E_DISCOVERY cannot read the connection file/, 'another user\'s Python client cannot, and is told why')
  // nor reach the socket with a token it guessed
  const raw = await run('setpriv', ['--reuid=65533', '--regid=65533', '--clear-groups', process.execPath, '-e',
    `require('net').connect(${JSON.stringify(sock)}).on('connect',()=>{console.log('connected');process.exit(0)}).on('error',e=>{console.log(e.code);process.exit(0)})`]).then(r => r.stdout.trim())
  t.equal(raw, 'EACCES', 'the socket refuses another user')

  await m.unmount()
  t.notOk(fs.existsSync(json), 'the connection file goes with the daemon')
  t.notOk(fs.existsSync(tok), 'and the token copy')
})
