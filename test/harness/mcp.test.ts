/**
 * `rewindfs mcp` end to end: the MCP SDK's own client starts the server over
 * stdio (as Claude Code, Codex or Cursor would) against a real mount, lists
 * the tools and calls each one; the files change as the tools say. Then the
 * raw stdout of the server is read line by line: nothing but JSON-RPC. A
 * workspace that was never mounted fails with one line on stderr and an
 * empty stdout.
 */
import t from 'tap'
import fs from 'node:fs'
import path from 'node:path'
import { spawn, execFile } from 'node:child_process'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js'
import { mountWorkspace, CLI, tempRoot } from '../helpers/mount.js'

interface ToolText { content: Array<{ type: string, text?: string }>, isError?: boolean }
const textOf = (r: unknown): string => ((r as ToolText).content ?? []).map(c => c.text ?? '').join('\n')

t.test('the SDK client drives every tool over stdio against a real mount', async t => {
  const m = await mountWorkspace(t, dir => {
    fs.writeFileSync(path.join(dir, 'a.txt'), 'one\n')
    fs.writeFileSync(path.join(dir, 'b.txt'), 'keep me\n')
  })
  const transport = new StdioClientTransport({ command: process.execPath, args: [CLI, 'mcp', '-w', m.dir], env: { ...process.env, REWINDFS_HOME: m.home } as Record<string, string>, stderr: 'pipe' })
  let stderr = ''
  transport.stderr?.on('data', (b: Buffer) => { stderr += b.toString() })
  const client = new Client({ name: 'rewindfs-test', version: '0' })
  const errors: Error[] = []
  client.onerror = (e) => { errors.push(e) }
  await client.connect(transport)
  t.teardown(async () => { await client.close().catch(() => {}) })

  const { tools } = await client.listTools()
  const names = tools.map(x => x.name).sort()
  t.same(names, ['backtrack_candidates', 'backtrack_commit', 'checkpoint', 'diff', 'list_checkpoints', 'memory', 'restore', 'show_file', 'status'], 'the nine tools')
  const byName = new Map(tools.map(x => [x.name, x]))
  t.equal(byName.get('restore')?.annotations?.destructiveHint, true, 'restore is annotated destructive')
  t.equal(byName.get('backtrack_commit')?.annotations?.destructiveHint, true, 'backtrack_commit is annotated destructive')
  t.equal(byName.get('diff')?.annotations?.readOnlyHint, true, 'diff is read-only')
  t.match(byName.get('restore')?.description ?? '', /cannot undo anything outside the workspace/, 'restore says what it cannot undo')
  t.ok(byName.get('backtrack_commit')?.inputSchema.properties?.memory, 'backtrack_commit takes the structured memory')
  for (const x of tools) {
    t.match(x.description ?? '', /\b(Use it|Call it|Read it|Continue from it)\b/, `${x.name} says when to use it`)
    if (x.annotations?.readOnlyHint === true) t.match(x.description ?? '', /changes nothing|without changing the workspace/, `${x.name} says it changes nothing`)
    else t.match(x.description ?? '', /nothing outside the workspace|cannot undo anything outside the workspace/, `${x.name} says what it cannot undo`)
  }

  const cp = textOf(await client.callTool({ name: 'checkpoint', arguments: { label: 'before edit' } }))
  const id = Number(/checkpoint #(\d+)/.exec(cp)?.[1])
  t.ok(id >= 2, `checkpoint answered with its id: ${cp}`)

  fs.writeFileSync(path.join(m.dir, 'a.txt'), 'two\n')
  fs.rmSync(path.join(m.dir, 'b.txt'))
  const diff = textOf(await client.callTool({ name: 'diff', arguments: { from: id } }))
  t.match(diff, /M \/a\.txt/, 'diff lists the modified file')
  t.match(diff, /D \/b\.txt/, 'diff lists the deleted file')

  t.equal(textOf(await client.callTool({ name: 'show_file', arguments: { checkpoint: id, path: 'a.txt' } })), 'one\n', 'show_file gives the old content')
  const missing = await client.callTool({ name: 'show_file', arguments: { checkpoint: 9999, path: 'a.txt' } }) as ToolText
  t.equal(missing.isError, true, 'an unknown checkpoint is a tool error')
  t.match(textOf(missing), /9999/, 'which names the checkpoint')

  t.match(textOf(await client.callTool({ name: 'backtrack_candidates', arguments: { reason: 'edit went wrong' } })), new RegExp(`#${id} step \\d+ .*"before edit"`), 'candidates list the checkpoint with its label')
  t.match(textOf(await client.callTool({ name: 'list_checkpoints', arguments: {} })), /#1 .*"mount"/, 'list_checkpoints shows the mount checkpoint')

  const memory = { tried: 'rewriting a.txt by hand', why_abandoned: 'it lost b.txt', instead: 'edit a copy first', facts: ['b.txt must stay'], milestones: [] }
  const bad = await client.callTool({ name: 'backtrack_commit', arguments: { checkpoint_id: id, memory: { ...memory, current_state: 'x' }, reason: 'r' } }) as ToolText
  t.equal(bad.isError, true, 'a memory note claiming current state is refused')
  t.equal(fs.readFileSync(path.join(m.dir, 'a.txt'), 'utf8'), 'two\n', 'and nothing was restored')

  const done = textOf(await client.callTool({ name: 'backtrack_commit', arguments: { checkpoint_id: id, memory, reason: 'b.txt was deleted' } }))
  t.match(done, new RegExp(`Restored checkpoint #${id}`), 'backtrack_commit says what it restored')
  t.match(done, /Tried: rewriting a\.txt by hand/, 'and returns the rewind memory as text')
  t.match(done, /Fact: b\.txt must stay/, 'with the facts')
  t.equal(fs.readFileSync(path.join(m.dir, 'a.txt'), 'utf8'), 'one\n', 'the files went back')
  t.equal(fs.readFileSync(path.join(m.dir, 'b.txt'), 'utf8'), 'keep me\n', 'the deleted file is back')
  const saved = Number(/abandoned state is checkpoint #(\d+)/.exec(done)?.[1])
  t.ok(saved > id, 'the abandoned state is a checkpoint')

  t.match(textOf(await client.callTool({ name: 'memory', arguments: {} })), /you have rewound 1 time/, 'memory shows the one entry')

  const r = textOf(await client.callTool({ name: 'restore', arguments: { checkpoint: saved } }))
  t.match(r, new RegExp(`restored checkpoint #${saved}`), 'restore answers')
  t.equal(fs.readFileSync(path.join(m.dir, 'a.txt'), 'utf8'), 'two\n', 'restore undid the backtrack')
  t.notOk(fs.existsSync(path.join(m.dir, 'b.txt')), 'b.txt is gone again')

  const st = textOf(await client.callTool({ name: 'status', arguments: {} }))
  t.match(st, new RegExp(`workspace ${m.dir.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`), 'status names the workspace')
  t.match(st, new RegExp(`head checkpoint #${saved}`), 'and the head')

  const sel = textOf(await client.callTool({ name: 'restore', arguments: { checkpoint: id, paths: ['b.txt'] } }))
  t.match(sel, new RegExp(`restored b\\.txt as at checkpoint #${id}`), 'a restore of chosen paths says which')
  t.equal(fs.readFileSync(path.join(m.dir, 'b.txt'), 'utf8'), 'keep me\n', 'the chosen file is back')
  t.equal(fs.readFileSync(path.join(m.dir, 'a.txt'), 'utf8'), 'two\n', 'and the other file is left as it was')

  const badArgs = await client.callTool({ name: 'restore', arguments: { checkpoint: 'x' } }) as ToolText
  t.equal(badArgs.isError, true, 'mistyped arguments are a tool error')
  t.same(errors, [], 'the client saw no protocol error (stdout held only MCP)')
  t.match(stderr, /rewindfs mcp: serving/, 'the server logs to stderr')
})

t.test('stdout carries only JSON-RPC; a workspace never mounted fails on stderr', async t => {
  const m = await mountWorkspace(t, dir => { fs.writeFileSync(path.join(dir, 'x'), 'x') })
  const child = spawn(process.execPath, [CLI, 'mcp', '-w', m.dir], { env: { ...process.env, REWINDFS_HOME: m.home }, stdio: ['pipe', 'pipe', 'pipe'] })
  let out = ''
  child.stdout.on('data', (b: Buffer) => { out += b.toString() })
  const send = (o: unknown): void => { child.stdin.write(JSON.stringify(o) + '\n') }
  send({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '0' } } })
  send({ jsonrpc: '2.0', method: 'notifications/initialized' })
  send({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'checkpoint', arguments: { label: 'raw' } } })
  const deadline = Date.now() + 30000
  while (Date.now() < deadline && !out.includes('"id":2')) await new Promise(resolve => setTimeout(resolve, 20))
  child.stdin.end()
  await new Promise(resolve => child.once('exit', resolve))
  const lines = out.split('\n').filter(l => l !== '')
  t.equal(lines.length, 2, 'two replies')
  for (const l of lines) t.equal(JSON.parse(l).jsonrpc, '2.0', `a JSON-RPC line: ${l.slice(0, 60)}`)
  t.match(lines[1], /checkpoint #\d+ \\"raw\\"/, 'the checkpoint reply')

  const root = tempRoot()
  t.teardown(() => fs.rmSync(root, { recursive: true, force: true }))
  const r = await new Promise<{ code: number | null, stdout: string, stderr: string }>(resolve => {
    execFile(process.execPath, [CLI, 'mcp', '-w', root], { env: { ...process.env, REWINDFS_HOME: path.join(root, 'home') } }, (err, stdout, stderr) => resolve({ code: err ? (err as { code?: number }).code ?? 1 : 0, stdout, stderr }))
  })
  t.equal(r.code, 1, 'exit status 1')
  t.equal(r.stdout, '', 'nothing on stdout')
  t.match(r.stderr, /has never been mounted by rewindfs: run rewindfs mount/, 'one line saying what to do')
})
