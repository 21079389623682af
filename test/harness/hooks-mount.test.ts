/**
 * The PreToolUse hook against a real mount, fed the recorded payloads of a
 * Claude Code session (test/fixtures/claude), through the hook command that
 * `rewindfs hooks install` writes (the C client, run by sh):
 *  - each payload marks a checkpoint labelled with the tool's name, with the
 *    tool_use_id, session, transcript and input summary as its meta; the
 *    hook socket is mode 0600;
 *  - `rewindfs rewind TOOL_USE_ID` puts the files back to before that call
 *    (bash edits included) and writes the transcript cut at the same point
 *    as a new session beside the original; a call made in parallel goes back
 *    to the first call of its turn; an unknown id changes nothing;
 *  - `rewindfs hooks install claude` then `uninstall` through the CLI, run
 *    in the workspace (the test process may touch the mount; the daemon
 *    never does);
 *  - with the daemon down: an ordinary call runs (exit 0, a note on
 *    stderr), `git push` is refused (exit 2, the reason on stderr); a cwd in
 *    no workspace is let through silently; so for a hook whose rewindfs
 *    home does not know the workspace (the user who mounted through sudo),
 *    through the offline record the daemon left in its runtime directory;
 *  - a cwd through a symbolic link in the workspace to a directory outside
 *    it is outside (nothing is marked).
 */
import t from 'tap'
import fs from 'node:fs'
import path from 'node:path'
import { spawnSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { mountWorkspace, CLI, type Mounted } from '../helpers/mount.js'
import { hookCommand, HOOK_BINARY, FALLBACK_SCRIPT } from '../../hooks/settings.js'
import { discoveryKey } from '../../client/discover.js'

const here = path.dirname(fileURLToPath(import.meta.url))
const FIXTURES = path.resolve(here, '../../../test/fixtures')
const SESSION = '3f1c2a9e-7b4d-4e21-9a65-0c8d2e7f5b13'

/** The recorded payload of `toolUseId`, moved to this workspace and transcript. */
function payload (toolUseId: string, dir: string, transcript: string): string {
  const text = fs.readFileSync(path.join(FIXTURES, 'claude', `pretooluse-${toolUseId}.json`), 'utf8')
  const p = JSON.parse(text)
  // keep the recorded (pretty-printed) form; only the paths change
  return text.replaceAll(p.cwd, dir).replace(JSON.stringify(p.transcript_path).slice(1, -1), transcript)
}

/** Runs the installed hook command with `input` on stdin. */
function hook (m: Mounted, input: string, harness: 'claude' | 'codex' = 'claude'): { code: number | null, stderr: string, stdout: string, ms: number } {
  const cmd = hookCommand({ harness, hookBinary: HOOK_BINARY, home: m.home, node: process.execPath, fallbackScript: FALLBACK_SCRIPT })
  const t0 = process.hrtime.bigint()
  const r = spawnSync('sh', ['-c', cmd], { input, encoding: 'utf8', cwd: '/' })
  return { code: r.status, stderr: r.stderr, stdout: r.stdout, ms: Number(process.hrtime.bigint() - t0) / 1e6 }
}

t.test('hooks mark before each tool call; rewind takes files and conversation back', async t => {
  t.ok(fs.existsSync(HOOK_BINARY), `the hook client is built (${HOOK_BINARY}, by scripts/setup.sh)`)
  const m = await mountWorkspace(t, dir => {
    fs.writeFileSync(path.join(dir, 'hello.txt'), 'hello\n')
    fs.writeFileSync(path.join(dir, 'notes.md'), '# notes\n')
  })
  const projects = path.join(m.root, 'claude-projects')
  fs.mkdirSync(projects)
  const transcript = path.join(projects, `${SESSION}.jsonl`)
  fs.copyFileSync(path.join(FIXTURES, 'claude', 'session.jsonl'), transcript)
  t.equal(fs.statSync(path.join(m.store, 'hook.sock')).mode & 0o777, 0o600, 'the hook socket is mode 0600')

  // the session as Claude Code ran it: hook, then the tool
  const steps: Array<[string, () => Promise<unknown>]> = [
    ['toolu_01WriteGreet', async () => fs.writeFileSync(path.join(m.dir, 'greet.js'), 'export const greet = n => `hi ${n}`\n')],
    ['toolu_01BashRmHello', async () => await m.sh('rm hello.txt && ls')],
    ['toolu_01BashEcho', async () => await m.sh('echo one >> notes.md')],
    ['toolu_01BashTouch', async () => await m.sh('touch done.flag')],
  ]
  for (const [id, run] of steps) {
    const r = hook(m, payload(id, m.dir, transcript))
    t.equal(r.code, 0, `hook for ${id} lets the call run`)
    t.equal(r.stdout, '', 'and prints nothing on stdout')
    await run()
  }
  const cands = await m.client.candidates({ limit: 10 })
  const marked = cands.filter(c => (c.meta as { kind?: string } | null)?.kind === 'rewindfs.hook/1')
  t.same(marked.map(c => c.label), ['Bash', 'Bash', 'Bash', 'Write'], 'one checkpoint per call, labelled with the tool')
  t.same(marked.at(-1)?.meta, { kind: 'rewindfs.hook/1', harness: 'claude', tool_name: 'Write', tool_use_id: 'toolu_01WriteGreet', session_id: SESSION, transcript_path: transcript, cwd: m.dir, turn_id: null, input: `${m.dir}/greet.js` }, 'its meta: tool_use_id, session, transcript, input summary')
  t.equal((marked[2].meta as { input: string }).input, 'rm hello.txt && ls', 'a bash call is summarised by its command')

  const listed = await m.cli(['rewind'])
  t.equal(listed.code, 0, `rewind without an id lists: ${listed.stderr}`)
  t.same(listed.stdout.trim().split('\n').map(l => l.split(/\s+/)[0]), ['toolu_01BashTouch', 'toolu_01BashEcho', 'toolu_01BashRmHello', 'toolu_01WriteGreet'], 'the tool calls that can be rewound, newest first')
  t.match(listed.stdout, /toolu_01BashRmHello +#\d+ .* claude Bash: rm hello\.txt && ls/, 'each with its checkpoint, tool and input')
  t.ok(fs.existsSync(path.join(m.dir, 'done.flag')), 'listing changes nothing')

  const unknown = await m.cli(['rewind', 'toolu_nope'])
  t.equal(unknown.code, 1)
  t.match(unknown.stderr, /no checkpoint was marked before tool call toolu_nope.*Nothing changed/)
  t.ok(fs.existsSync(path.join(m.dir, 'done.flag')), 'nothing changed')

  const r = await m.cli(['rewind', 'toolu_01BashRmHello'])
  t.equal(r.code, 0, `rewind succeeds: ${r.stderr}`)
  t.equal(fs.readFileSync(path.join(m.dir, 'hello.txt'), 'utf8'), 'hello\n', 'the file bash removed is back')
  t.ok(fs.existsSync(path.join(m.dir, 'greet.js')), 'the call before it stays done')
  t.notOk(fs.existsSync(path.join(m.dir, 'done.flag')), 'later calls are undone')
  t.equal(fs.readFileSync(path.join(m.dir, 'notes.md'), 'utf8'), '# notes\n')
  const sid = /claude --resume ([0-9a-f-]{36})/.exec(r.stdout)?.[1]
  t.ok(sid, `prints the session to resume: ${r.stdout}`)
  const cut = path.join(projects, `${sid}.jsonl`)
  const lines = fs.readFileSync(cut, 'utf8').trim().split('\n').map(l => JSON.parse(l))
  t.equal(lines.at(-1).message.content[0].tool_use_id, 'toolu_01WriteGreet', 'the new session ends before the call taken back')
  t.ok(lines.every(e => !('sessionId' in e) || e.sessionId === sid), 'with its own session id')
  t.equal(fs.readFileSync(transcript, 'utf8'), fs.readFileSync(path.join(FIXTURES, 'claude', 'session.jsonl'), 'utf8'), 'the original transcript is unchanged')

  // back to the end, then rewind a call made in parallel with another
  const ends = await m.client.log({ limit: 20 })
  const saved = ends.find(c => c.label?.startsWith('before restore'))
  t.ok(saved, 'the rewind kept the state it replaced')
  await m.client.restore({ id: saved!.id })
  t.ok(fs.existsSync(path.join(m.dir, 'done.flag')))
  const par = await m.cli(['rewind', 'toolu_01BashTouch', '--json'])
  t.equal(par.code, 0, par.stderr)
  const out = JSON.parse(par.stdout)
  t.equal(out.toolUseId, 'toolu_01BashEcho', 'back to the first call of the turn')
  t.match(out.notes.join(' '), /same turn as 1 earlier call/)
  t.equal(fs.readFileSync(path.join(m.dir, 'notes.md'), 'utf8'), '# notes\n', 'the parallel call\'s edit is undone too')
  t.notOk(fs.existsSync(path.join(m.dir, 'hello.txt')), 'the call before the turn stays done')
  t.equal(out.transcript.kept, 8)

  const files = await m.cli(['rewind', 'toolu_01WriteGreet', '--files-only'])
  t.equal(files.code, 0, files.stderr)
  t.notOk(fs.existsSync(path.join(m.dir, 'greet.js')), '--files-only restores')
  t.notMatch(files.stdout, /claude --resume/, 'and writes no session')
  t.equal(fs.readdirSync(projects).length, 3, 'two new sessions beside the original')
})

t.test('hooks install/uninstall through the CLI; the daemon down', async t => {
  const m = await mountWorkspace(t, dir => { fs.writeFileSync(path.join(dir, 'a'), 'a') })
  const cli = (args: string[]): { code: number | null, stdout: string, stderr: string } => {
    const r = spawnSync(process.execPath, [CLI, ...args], { cwd: m.dir, encoding: 'utf8', env: { ...process.env, REWINDFS_HOME: m.home } })
    return { code: r.status, stdout: r.stdout, stderr: r.stderr }
  }
  const inst = cli(['hooks', 'install', 'claude'])
  t.equal(inst.code, 0, inst.stderr)
  const file = path.join(m.dir, '.claude', 'settings.json')
  t.match(inst.stdout, new RegExp(`created ${file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}: added hooks\\.PreToolUse\\[0\\]`), 'prints what it changed')
  const cmd = JSON.parse(fs.readFileSync(file, 'utf8')).hooks.PreToolUse[0].hooks[0].command as string
  t.match(cmd, /rewindfs-hook' claude --home|rewindfs-hook claude --home/, 'the C client, for claude')
  const p = JSON.stringify({ session_id: 's', transcript_path: null, cwd: m.dir, hook_event_name: 'PreToolUse', tool_name: 'Bash', tool_input: { command: 'ls' }, tool_use_id: 'toolu_cli' })
  const viaSettings = spawnSync('sh', ['-c', cmd], { input: p, encoding: 'utf8' })
  t.equal(viaSettings.status, 0, 'the installed command runs')
  t.equal((await m.client.log({ limit: 1 }))[0].label, 'Bash', 'and marks')
  const un = cli(['hooks', 'uninstall', 'claude'])
  t.match(un.stdout, /removed .*settings\.json/, un.stderr)
  t.notOk(fs.existsSync(path.join(m.dir, '.claude')), 'the settings install made are gone')

  const codex = fs.readFileSync(path.join(FIXTURES, 'codex', 'pretooluse-git-push.json'), 'utf8').replaceAll('/home/dev/project', m.dir)
  const up = hook(m, codex, 'codex')
  t.equal(up.code, 0, `daemon up: a git push runs, after its checkpoint ${up.stderr}`)
  t.equal((await m.client.log({ limit: 1 }))[0].label, 'Bash')

  // a cwd through a symbolic link in the workspace to a directory outside it is outside: nothing marked
  fs.mkdirSync(path.join(m.root, 'outside'))
  fs.symlinkSync(path.join(m.root, 'outside'), path.join(m.dir, 'out'))
  const count = (await m.client.status()).checkpoints
  const viaLink = hook(m, JSON.stringify({ cwd: path.join(m.dir, 'out'), tool_name: 'Bash', tool_input: { command: 'ls' }, tool_use_id: 'l' }))
  t.equal(viaLink.code, 0, 'a cwd through a link to outside the workspace runs')
  t.equal(viaLink.stderr, '', 'silently')
  t.equal((await m.client.status()).checkpoints, count, 'and nothing is marked: it is not in the workspace')

  await m.unmount()
  const push = hook(m, codex, 'codex')
  t.equal(push.code, 2, 'daemon down: git push is refused')
  t.match(push.stderr, /refused: this command matches the external-effect pattern "git push"/)
  t.match(push.stderr, new RegExp(`rewindfs mount ${m.dir.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`), 'and says what to do')
  const ls = hook(m, JSON.stringify({ cwd: m.dir, tool_name: 'Bash', tool_input: { command: 'ls' }, tool_use_id: 'x' }))
  t.equal(ls.code, 0, 'an ordinary command runs')
  t.match(ls.stderr, /the daemon is not running, so this command runs without a checkpoint/)
  const read = hook(m, JSON.stringify({ cwd: m.dir + '/sub', tool_name: 'Read', tool_input: { file_path: m.dir + '/a' }, tool_use_id: 'y' }))
  t.equal(read.code, 0, 'a tool without a command runs')
  t.match(read.stderr, /the daemon is not running, so this tool call runs without a checkpoint/, 'with a note (from the C client, no Node)')
  const elsewhere = hook(m, JSON.stringify({ cwd: '/tmp', tool_name: 'Bash', tool_input: { command: 'git push' }, tool_use_id: 'z' }))
  t.equal(elsewhere.code, 0, 'a cwd in no workspace is not ours')
  t.equal(elsewhere.stderr, '', 'silently')

  // the user who mounted through sudo: its own rewindfs home knows no workspace; the daemon's
  // runtime directory keeps the offline record the daemon left when it stopped
  t.ok(fs.existsSync(path.join(m.runtime, `${await discoveryKey(m.dir)}.offline`)), 'the stopped daemon left its offline record')
  t.notOk(fs.existsSync(path.join(m.runtime, `${await discoveryKey(m.dir)}.json`)), 'and no connection file')
  const sudoHook = (input: string): { code: number | null, stderr: string } => {
    const cmd = hookCommand({ harness: 'codex', hookBinary: HOOK_BINARY, home: path.join(m.root, 'home-that-knows-nothing'), node: process.execPath, fallbackScript: FALLBACK_SCRIPT })
    const r = spawnSync('sh', ['-c', cmd], { input, encoding: 'utf8', cwd: '/', env: { ...process.env, REWINDFS_RUNTIME_DIR: m.runtime } })
    return { code: r.status, stderr: r.stderr }
  }
  const sudoPush = sudoHook(codex)
  t.equal(sudoPush.code, 2, `a hook whose home does not know the workspace refuses git push too (${sudoPush.stderr.trim()})`)
  t.match(sudoPush.stderr, /refused: this command matches the external-effect pattern "git push"/)
  const sudoLs = sudoHook(JSON.stringify({ cwd: path.join(m.dir, 'sub'), tool_name: 'Bash', tool_input: { command: 'ls' }, tool_use_id: 'x2' }))
  t.equal(sudoLs.code, 0, 'and lets an ordinary command run')
  t.match(sudoLs.stderr, /the daemon is not running, so this command runs without a checkpoint/)
  const sudoElsewhere = sudoHook(JSON.stringify({ cwd: m.root, tool_name: 'Bash', tool_input: { command: 'git push' }, tool_use_id: 'z2' }))
  t.equal(sudoElsewhere.code, 0, 'a cwd outside the workspace is still not ours')
  t.equal(sudoElsewhere.stderr, '', 'silently')
})
