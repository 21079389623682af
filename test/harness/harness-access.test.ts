/**
 * The harness integrations for the user who mounted through sudo (issue 14,
 * PROTOCOL.md §1 "Access for the user who mounted", §7): the daemon runs as
 * root with SUDO_UID/SUDO_GID 65534, its store and registry are root's, and
 * that user, with nothing but the workspace path, is served by
 *  - the PreToolUse hook (the C client, as `hooks install` writes it): it
 *    discovers the daemon, reads the token copy and marks over the hook
 *    socket R/<key>.hook, which is that user's, mode 0600;
 *  - `rewindfs mcp`: the SDK's client over stdio calls checkpoint and status;
 *  - `rewindfs rewind TOOL_USE_ID`: files and conversation back together.
 * Another user (65533) gets no checkpoint from the hook, and is told why.
 * Processes run as those users with setpriv; skipped when other users cannot
 * read this checkout (as test/protocol/access.test.ts).
 */
import t from 'tap'
import fs from 'node:fs'
import path from 'node:path'
import { spawnSync, execFileSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js'
import { mountWorkspace, CLI } from '../helpers/mount.js'
import { discoveryKey } from '../../client/discover.js'
import { hookCommand, HOOK_BINARY, FALLBACK_SCRIPT } from '../../hooks/settings.js'

const here = path.dirname(fileURLToPath(import.meta.url))
const ROOT = path.resolve(here, '../../..')
const FIXTURES = path.resolve(here, '../../../test/fixtures')
const SESSION = '3f1c2a9e-7b4d-4e21-9a65-0c8d2e7f5b13'
const USER = 65534
const OTHER = 65533

function othersCanRead (): boolean {
  try {
    execFileSync('setpriv', [`--reuid=${OTHER}`, `--regid=${OTHER}`, '--clear-groups', 'test', '-r', path.join(ROOT, 'dist/cli/main.js')], { stdio: 'ignore' })
    return true
  } catch { return false }
}

/** argv prefix that runs a command as `uid` (same gid, no groups). */
const as = (uid: number): string[] => [`--reuid=${uid}`, `--regid=${uid}`, '--clear-groups']

t.test('a mount made through sudo serves its user\'s hook, MCP server and rewind', { skip: othersCanRead() ? false : `other users cannot read this checkout (${ROOT}): clone it where they can (chmod o+rx on its parents) to run this test` }, async t => {
  const m = await mountWorkspace(t, dir => {
    fs.writeFileSync(path.join(dir, 'hello.txt'), 'hello\n')
    fs.writeFileSync(path.join(dir, 'notes.md'), '# notes\n')
    fs.mkdirSync(path.join(dir, 'src'))
  }, { env: { SUDO_UID: String(USER), SUDO_GID: String(USER) } })
  fs.chmodSync(m.root, 0o755) // the test's temporary root: let the users walk to the workspace and the runtime directory
  const env = { PATH: process.env.PATH ?? '/usr/bin:/bin', REWINDFS_RUNTIME_DIR: m.runtime, HOME: '/nonexistent' }

  const key = await discoveryKey(m.dir)
  const sock = path.join(m.runtime, `${key}.hook`)
  const st = fs.statSync(sock)
  t.ok(st.isSocket(), 'the daemon listens on a hook socket in its runtime directory')
  t.same([st.uid, st.gid, st.mode & 0o777], [USER, USER, 0o600], 'owned by the user who mounted, mode 0600')
  t.equal(JSON.parse(fs.readFileSync(path.join(m.runtime, `${key}.json`), 'utf8')).hook, sock, 'the connection file names it')
  t.equal(fs.statSync(path.join(m.store, 'hook.sock')).uid, 0, 'the store\'s own hook socket stays root\'s')

  // the user's Claude Code: its projects directory, the recorded transcript
  const projects = path.join(m.root, 'claude-projects')
  fs.mkdirSync(projects)
  const transcript = path.join(projects, `${SESSION}.jsonl`)
  fs.copyFileSync(path.join(FIXTURES, 'claude', 'session.jsonl'), transcript)
  fs.chownSync(projects, USER, USER)
  fs.chownSync(transcript, USER, USER)
  const payload = (id: string, cwd = m.dir): string => {
    const text = fs.readFileSync(path.join(FIXTURES, 'claude', `pretooluse-${id}.json`), 'utf8')
    const p = JSON.parse(text)
    return text.replaceAll(p.cwd, cwd).replace(JSON.stringify(p.transcript_path).slice(1, -1), transcript)
  }
  // the command hooks install writes for that user (its own rewindfs home, which knows no workspace)
  const cmd = hookCommand({ harness: 'claude', hookBinary: HOOK_BINARY, home: '/nonexistent/rewindfs', node: process.execPath, fallbackScript: FALLBACK_SCRIPT })
  const hook = (uid: number, input: string): { code: number | null, stderr: string } => {
    const r = spawnSync('setpriv', [...as(uid), 'sh', '-c', cmd], { input, encoding: 'utf8', env, cwd: '/' })
    return { code: r.status, stderr: r.stderr }
  }

  const before = (await m.client.status()).checkpoints
  const steps: Array<[string, () => void]> = [
    ['toolu_01WriteGreet', () => fs.writeFileSync(path.join(m.dir, 'greet.js'), 'export const greet = n => `hi ${n}`\n')],
    ['toolu_01BashRmHello', () => fs.rmSync(path.join(m.dir, 'hello.txt'))],
    ['toolu_01BashEcho', () => fs.appendFileSync(path.join(m.dir, 'notes.md'), 'one\n')],
    ['toolu_01BashTouch', () => fs.writeFileSync(path.join(m.dir, 'done.flag'), '')],
  ]
  for (const [id, step] of steps) {
    const r = hook(USER, payload(id, id === 'toolu_01BashEcho' ? path.join(m.dir, 'src') : m.dir))
    t.equal(r.code, 0, `the user's hook for ${id} lets the call run`)
    t.equal(r.stderr, '', 'silently')
    step()
  }
  const marked = (await m.client.candidates({ limit: 10 })).filter(c => (c.meta as { kind?: string } | null)?.kind === 'rewindfs.hook/1')
  t.same(marked.map(c => (c.meta as { tool_use_id: string }).tool_use_id), ['toolu_01BashTouch', 'toolu_01BashEcho', 'toolu_01BashRmHello', 'toolu_01WriteGreet'], 'one checkpoint per call, from a cwd in the workspace or below it')

  const other = hook(OTHER, payload('toolu_01BashTouch'))
  t.equal(other.code, 0, 'another user\'s hook lets its call run')
  t.match(other.stderr, /cannot read the connection file .* only the user who mounted it may/, `and says why there is no checkpoint: ${other.stderr.trim()}`)
  t.equal((await m.client.status()).checkpoints, before + 4, 'it marked nothing')

  // rewindfs mcp as the user, through the SDK's client
  const transport = new StdioClientTransport({ command: 'setpriv', args: [...as(USER), process.execPath, CLI, 'mcp', '-w', m.dir], env, stderr: 'pipe' })
  let stderr = ''
  transport.stderr?.on('data', (b: Buffer) => { stderr += b.toString() })
  const client = new Client({ name: 'rewindfs-test', version: '0' })
  await client.connect(transport)
  t.teardown(async () => { await client.close().catch(() => {}) })
  const cp = await client.callTool({ name: 'checkpoint', arguments: { label: 'from mcp' } }) as { isError?: boolean, content: Array<{ text?: string }> }
  t.notOk(cp.isError, `the MCP checkpoint tool works for the user: ${cp.content[0]?.text} ${stderr}`)
  t.match(cp.content[0]?.text, /^checkpoint #\d+ "from mcp"/)
  t.equal((await m.client.log({ limit: 1 }))[0].label, 'from mcp', 'the daemon marked it')
  const status = await client.callTool({ name: 'status', arguments: {} }) as { content: Array<{ text?: string }> }
  t.match(status.content[0]?.text, `workspace ${m.dir}`, 'status names the workspace')
  await client.close()

  // rewindfs rewind as the user: files and conversation back to before the rm
  const rw = spawnSync('setpriv', [...as(USER), process.execPath, CLI, 'rewind', 'toolu_01BashRmHello', '-w', m.dir], { encoding: 'utf8', env, cwd: '/' })
  t.equal(rw.status, 0, `rewind as the user: ${rw.stderr}`)
  t.equal(fs.readFileSync(path.join(m.dir, 'hello.txt'), 'utf8'), 'hello\n', 'the file removed by that call is back')
  t.ok(fs.existsSync(path.join(m.dir, 'greet.js')), 'the call before it stays done')
  t.notOk(fs.existsSync(path.join(m.dir, 'done.flag')), 'later calls are undone')
  const sid = /claude --resume ([0-9a-f-]{36})/.exec(rw.stdout)?.[1]
  t.ok(sid, `it prints the session to resume: ${rw.stdout}`)
  const cut = path.join(projects, `${sid}.jsonl`)
  t.equal(fs.statSync(cut).uid, USER, 'the new session is the user\'s file')
  const lines = fs.readFileSync(cut, 'utf8').trim().split('\n').map(l => JSON.parse(l))
  t.equal(lines.at(-1).message.content[0].tool_use_id, 'toolu_01WriteGreet', 'and ends before the call taken back')
})
