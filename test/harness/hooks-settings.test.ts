/**
 * The harness hooks without a mount:
 *  - install/uninstall of the PreToolUse hook in Claude Code's and Codex's
 *    settings: a new file (removed again with the directory install made),
 *    a file with the user's own settings and formatting (restored byte for
 *    byte), a file the user changed after install (only our handler goes),
 *    a second install (no change), a file that is not JSON (refused, kept);
 *  - the Claude Code transcript cut on a recorded transcript: before one
 *    call, before a call made in parallel (back to the first of the turn),
 *    an unknown call;
 *  - the hook socket's line protocol answers (token, verbs, bad payloads);
 *  - the daemon-down decision on the external-command list.
 */
import t from 'tap'
import fs from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { installHook, uninstallHook, settingsFile, hookCommand, shellQuote } from '../../hooks/settings.js'
import { planClaudeCut, writeClaudeCut, TranscriptError } from '../../hooks/transcript-claude.js'
import { answerHookLine, startHookSocket } from '../../daemon/hook-socket.js'
import { hookRequest } from '../../hooks/socket-client.js'
import { offlineDecision } from '../../hooks/offline-check.js'
import { EXTERNAL_COMMANDS_FILE } from '../../effects/patterns.js'
import { hookMark, summarizeInput } from '../../proto/hook.js'
import { tempRoot } from '../helpers/mount.js'

const here = path.dirname(fileURLToPath(import.meta.url))
/** test/fixtures in the source tree (dist/test -> test/fixtures) */
export const FIXTURES = path.resolve(here, '../../../test/fixtures')

const CMD = hookCommand({ harness: 'claude', hookBinary: '/opt/rewind fs/rewindfs-hook', home: '/var/lib/rewindfs', node: '/usr/bin/node', fallbackScript: '/opt/rewindfs/offline-check.js' })

t.test('install into a new file, uninstall removes it and the directory install made', async t => {
  const root = tempRoot()
  t.teardown(() => fs.rmSync(root, { recursive: true, force: true }))
  const file = settingsFile('claude', 'project', path.join(root, 'proj'))
  fs.mkdirSync(path.join(root, 'proj'))
  t.equal(file, path.join(root, 'proj', '.claude', 'settings.json'))
  const r = installHook({ harness: 'claude', file, command: CMD, recordDir: path.join(root, 'rec') })
  t.ok(r.changed)
  t.match(r.lines[0], /created .*settings\.json: added hooks\.PreToolUse\[0\]/, 'says what it added')
  const s = JSON.parse(fs.readFileSync(file, 'utf8'))
  t.same(s, { hooks: { PreToolUse: [{ matcher: '*', hooks: [{ type: 'command', command: CMD, timeout: 30 }] }] } }, 'the hook entry, every tool')
  t.match(CMD, /^'\/opt\/rewind fs\/rewindfs-hook' claude --home/, 'paths with spaces are quoted for the shell')
  const again = installHook({ harness: 'claude', file, command: CMD, recordDir: path.join(root, 'rec') })
  t.notOk(again.changed, 'a second install changes nothing')
  t.match(again.lines[0], /already installed/)
  const u = uninstallHook({ file, recordDir: path.join(root, 'rec') })
  t.ok(u.changed)
  t.notOk(fs.existsSync(file), 'the file install created is gone')
  t.notOk(fs.existsSync(path.join(root, 'proj', '.claude')), 'and the directory it created')
  t.same(fs.readdirSync(path.join(root, 'rec')), [], 'the install record is gone')
})

t.test('an unchanged file gets its bytes back; a changed one keeps the user\'s changes', async t => {
  const root = tempRoot()
  t.teardown(() => fs.rmSync(root, { recursive: true, force: true }))
  const file = path.join(root, 'settings.json')
  // the user's own settings, 4-space indentation, their own PreToolUse hook, no final newline
  const original = '{\n    "permissions": {"allow": ["Bash(npm test)"]},\n    "hooks": {\n        "PreToolUse": [{"matcher": "Edit", "hooks": [{"type": "command", "command": "prettier --check"}]}]\n    }\n}'
  fs.writeFileSync(file, original, { mode: 0o640 })
  installHook({ harness: 'claude', file, command: CMD, recordDir: path.join(root, 'rec') })
  const s = JSON.parse(fs.readFileSync(file, 'utf8'))
  t.equal(s.hooks.PreToolUse.length, 2, 'added after the user\'s hook')
  t.same(s.permissions, { allow: ['Bash(npm test)'] }, 'other settings kept')
  t.equal(fs.statSync(file).mode & 0o777, 0o640, 'mode kept')
  t.match(uninstallHook({ file, recordDir: path.join(root, 'rec') }).lines[0], /byte for byte/)
  t.equal(fs.readFileSync(file, 'utf8'), original, 'byte for byte as before')

  installHook({ harness: 'claude', file, command: CMD, recordDir: path.join(root, 'rec') })
  const changed = JSON.parse(fs.readFileSync(file, 'utf8'))
  changed.model = 'opus' // the user changes a setting after install
  changed.hooks.PreToolUse[0].hooks.push({ type: 'command', command: 'echo mine' })
  fs.writeFileSync(file, JSON.stringify(changed))
  const u = uninstallHook({ file, recordDir: path.join(root, 'rec') })
  t.match(u.lines[0], /removed the rewindfs hook \(1 handler\)/)
  t.same(JSON.parse(fs.readFileSync(file, 'utf8')), {
    permissions: { allow: ['Bash(npm test)'] },
    hooks: { PreToolUse: [{ matcher: 'Edit', hooks: [{ type: 'command', command: 'prettier --check' }, { type: 'command', command: 'echo mine' }] }] },
    model: 'opus',
  }, 'exactly our entry went; the user\'s changes made since install stay')
  t.match(uninstallHook({ file, recordDir: path.join(root, 'rec') }).lines[0], /no rewindfs hook found/, 'a second uninstall finds nothing')
})

t.test('codex: hooks.json under CODEX_HOME, no matcher; a file that is not JSON is refused and kept', async t => {
  const root = tempRoot()
  t.teardown(() => fs.rmSync(root, { recursive: true, force: true }))
  const file = settingsFile('codex', 'user', '/unused', { CODEX_HOME: path.join(root, 'codex') })
  t.equal(file, path.join(root, 'codex', 'hooks.json'))
  installHook({ harness: 'codex', file, command: CMD, recordDir: path.join(root, 'rec') })
  t.same(JSON.parse(fs.readFileSync(file, 'utf8')), { hooks: { PreToolUse: [{ hooks: [{ type: 'command', command: CMD, timeout: 30 }] }] } })
  uninstallHook({ file, recordDir: path.join(root, 'rec') })
  t.notOk(fs.existsSync(file))

  const bad = path.join(root, 'bad.json')
  fs.writeFileSync(bad, '{"hooks": ')
  t.throws(() => installHook({ harness: 'claude', file: bad, command: CMD, recordDir: path.join(root, 'rec') }), /is not valid JSON .*nothing was changed/)
  t.equal(fs.readFileSync(bad, 'utf8'), '{"hooks": ', 'kept as it was')
  fs.writeFileSync(bad, '{"hooks": {"PreToolUse": {}}}')
  t.throws(() => installHook({ harness: 'claude', file: bad, command: CMD, recordDir: path.join(root, 'rec') }), /PreToolUse" is not an array/)
  t.equal(shellQuote("it's"), `'it'\\''s'`)
})

/** A copy of the recorded transcript in `dir`, named by its session id. */
function transcriptCopy (dir: string): string {
  const f = path.join(dir, '3f1c2a9e-7b4d-4e21-9a65-0c8d2e7f5b13.jsonl')
  fs.copyFileSync(path.join(FIXTURES, 'claude', 'session.jsonl'), f)
  return f
}

t.test('Claude Code transcript: cut before a call, as a new session beside the original', async t => {
  const root = tempRoot()
  t.teardown(() => fs.rmSync(root, { recursive: true, force: true }))
  const src = transcriptCopy(root)
  const before = fs.readFileSync(src)
  const plan = planClaudeCut(src, 'toolu_01BashRmHello')
  t.same(plan.toolUseIds, ['toolu_01BashRmHello'])
  const cut = writeClaudeCut(plan)
  t.equal(path.dirname(cut.file), root, 'beside the original')
  t.equal(path.basename(cut.file), `${cut.sessionId}.jsonl`, 'named by its new session id')
  t.match(cut.sessionId, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/, 'a UUID v4 session id')
  const out = fs.readFileSync(cut.file, 'utf8').trim().split('\n').map(l => JSON.parse(l))
  t.same(out.map(e => e.type), ['file-history-snapshot', 'user', 'assistant', 'assistant', 'user'], 'the prompt, the Write call and its result; the summary of a later leaf dropped')
  t.equal(out.at(-1).message.content[0].tool_use_id, 'toolu_01WriteGreet', 'ends with the result of the call before')
  t.notOk(fs.readFileSync(cut.file, 'utf8').includes('toolu_01BashRmHello'), 'the call taken back is not in it')
  for (const e of out.filter(e => 'sessionId' in e)) t.equal(e.sessionId, cut.sessionId, `${e.type} ${e.uuid} carries the new session id`)
  t.equal(out[2].parentUuid, out[1].uuid, 'the parent chain is kept')
  t.same(fs.readFileSync(src), before, 'the original is unchanged')

  const par = planClaudeCut(src, 'toolu_01BashTouch')
  t.same(par.toolUseIds, ['toolu_01BashEcho', 'toolu_01BashTouch'], 'a parallel call goes back to the first call of its turn')
  t.equal(par.lines.length, 8, 'the text before the calls stays')
  t.equal(JSON.parse(par.lines.at(-1)!).message.content[0].type, 'text')
  t.throws(() => planClaudeCut(src, 'toolu_nope'), TranscriptError)
  t.throws(() => planClaudeCut(path.join(root, 'missing.jsonl'), 'x'), /cannot read the transcript/)
})

t.test('the hook socket\'s line protocol', async t => {
  const token = 'a'.repeat(64)
  const marks: Array<{ label: string, meta: unknown }> = []
  const h = {
    mark: async (label: string, meta: unknown) => { marks.push({ label, meta }); return 7 },
    find: (id: string) => id === 'toolu_x' ? { id: 3, meta: hookMark('claude', { tool_name: 'Bash', tool_use_id: 'toolu_x' }).meta } : null,
  }
  const payload = JSON.parse(fs.readFileSync(path.join(FIXTURES, 'claude', 'pretooluse-toolu_01BashRmHello.json'), 'utf8'))
  t.equal(await answerHookLine(`mark ${token} claude ${JSON.stringify(payload)}`, token, h), 'ok 7\n')
  t.same(marks[0], { label: 'Bash', meta: { kind: 'rewindfs.hook/1', harness: 'claude', tool_name: 'Bash', tool_use_id: 'toolu_01BashRmHello', session_id: payload.session_id, transcript_path: payload.transcript_path, cwd: payload.cwd, turn_id: null, input: 'rm hello.txt && ls' } }, 'label and meta from the payload')
  t.match(await answerHookLine(`mark ${'b'.repeat(64)} claude {}`, token, h), /^error E_UNAUTHORIZED /, 'a wrong token is refused')
  t.match(await answerHookLine(`mark ${token} claude {nope`, token, h), /^error E_BAD_REQUEST mark: the payload is not JSON/)
  t.match(await answerHookLine(`mark ${token} claude [1]`, token, h), /^error E_BAD_REQUEST mark: the hook payload is not a JSON object/)
  t.match(await answerHookLine(`find ${token} toolu_x`, token, h), /^ok 3 \{"kind":"rewindfs.hook\/1"/)
  t.equal(await answerHookLine(`find ${token} toolu_y`, token, h), 'none\n')
  t.match(await answerHookLine(`frob ${token} x`, token, h), /^error E_UNKNOWN_OP /)
  t.match(await answerHookLine('garbage', token, h), /^error E_BAD_REQUEST /)
  t.equal(marks.length, 1, 'nothing refused reached mark')
  const failing = { ...h, mark: async () => { throw Object.assign(new Error('the store\'s filesystem is full'), { code: 'E_NO_SPACE' }) } }
  t.equal(await answerHookLine(`mark ${token} codex {"tool_name":"Bash"}`, token, failing), 'error E_NO_SPACE the store\'s filesystem is full\n', 'the daemon\'s error code goes back')
  t.equal(summarizeInput({ file_path: '/w/a.js', content: 'x'.repeat(5000) }), '/w/a.js', 'a file tool is summarised by its path')
  t.equal(summarizeInput({ command: 'x'.repeat(300) }).length, 200, 'summaries are cut to 200')
})

t.test('daemon down: the external-command list decides', async t => {
  const root = tempRoot()
  t.teardown(() => fs.rmSync(root, { recursive: true, force: true }))
  const codex = JSON.parse(fs.readFileSync(path.join(FIXTURES, 'codex', 'pretooluse-git-push.json'), 'utf8'))
  const push = offlineDecision(codex, root, '/w', 'the daemon is not running')
  t.equal(push.code, 2, 'git push is refused')
  t.match(push.message, /refused: .*"git push"/)
  const bash = (command: string): number => offlineDecision({ tool_name: 'Bash', tool_input: { command } }, root, '/w', 'down').code
  t.equal(bash('ls -la && npm test'), 0, 'an ordinary command runs')
  t.equal(bash('cd app && git push origin main'), 2)
  t.equal(bash('curl -X POST https://example.com/api'), 2, 'curl POST')
  t.equal(bash('curl https://example.com/file.tgz -o f.tgz'), 0, 'curl GET')
  t.equal(bash('curl -d a=1 https://example.com'), 2, 'curl with a body')
  t.equal(bash('npm publish --access public'), 2)
  t.equal(bash('ssh host uptime'), 2)
  t.equal(bash('scp a.txt host:/tmp/'), 2)
  t.equal(bash('wget --method=DELETE https://example.com/x'), 2)
  t.equal(offlineDecision({ tool_name: 'Read', tool_input: { file_path: '/w/a' } }, root, '/w', 'down').code, 0, 'a tool without a command runs')
  fs.mkdirSync(path.join(root, 'config'))
  fs.writeFileSync(path.join(root, EXTERNAL_COMMANDS_FILE), JSON.stringify({ version: 1, patterns: [{ name: 'make deploy', regex: '\\bmake\\s+deploy\\b', class: 'irreversible', description: 'deploys' }] }))
  t.equal(bash('make deploy'), 2, 'the store\'s own list applies')
  t.equal(bash('git push'), 0, 'instead of the defaults')
  fs.writeFileSync(path.join(root, EXTERNAL_COMMANDS_FILE), '{"version": 1, "patterns": [{"name": "x", "regex": "("}]}')
  const broken = offlineDecision({ tool_name: 'Bash', tool_input: { command: 'ls' } }, root, '/w', 'down')
  t.equal(broken.code, 2, 'a broken list refuses every command (fail closed)')
  t.match(broken.message, /cannot be read .*not a valid regular expression/)

  // a store this user cannot read (root's, for a mount through sudo; here a file where the directory should be): the offline record's copy
  const unreadable = path.join(root, 'token-not-a-store')
  fs.writeFileSync(unreadable, '')
  const record = path.join(root, 'k.offline')
  fs.writeFileSync(record, JSON.stringify({ workspace: '/w', store: unreadable, externalCommands: { version: 1, patterns: [{ name: 'make deploy', regex: '\\bmake\\s+deploy\\b', class: 'irreversible', description: 'deploys' }] } }))
  const viaRecord = (command: string, rec: string | null): number => offlineDecision({ tool_name: 'Bash', tool_input: { command } }, unreadable, '/w', 'down', rec).code
  t.equal(viaRecord('make deploy', record), 2, 'the record\'s list applies when the store cannot be read')
  t.equal(viaRecord('ls', record), 0, 'and lets other commands run')
  t.equal(viaRecord('ls', null), 2, 'without a record, every command is refused')
  fs.writeFileSync(record, JSON.stringify({ workspace: '/w', store: unreadable, externalCommands: null }))
  t.equal(viaRecord('ls', record), 2, 'and with a record that has no list')
})

t.test('the hook socket takes the token file\'s owner, group and mode', async t => {
  const root = tempRoot()
  t.teardown(() => fs.rmSync(root, { recursive: true, force: true }))
  const token = 'c'.repeat(64)
  const tokenFile = path.join(root, 'token')
  fs.writeFileSync(tokenFile, token + '\n', { mode: 0o640 })
  fs.chmodSync(tokenFile, 0o640)
  const other = process.getuid?.() === 0 ? 65534 : null // nobody: only root can give a file away
  if (other !== null) fs.chownSync(tokenFile, other, other)
  const h = { mark: async () => 1, find: () => null }
  const sock = await startHookSocket(path.join(root, 'hook.sock'), token, h, tokenFile)
  t.teardown(async () => await sock.close())
  const st = fs.statSync(sock.path)
  t.ok(st.isSocket(), 'a unix socket')
  t.equal(st.mode & 0o777, 0o640, 'with the token file\'s mode')
  if (other !== null) t.same([st.uid, st.gid], [other, other], 'and its owner and group')
  t.equal(await hookRequest(sock.path, `ping ${token}`), 'ok', 'it answers')
  await sock.close()
  t.notOk(fs.existsSync(sock.path), 'close removes the socket file')
})

