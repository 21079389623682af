/**
 * What the harness integrations cost an agent (issue 14), measured against
 * a real mount, with the peers that bound them in the same run:
 *
 *  - the PreToolUse hook: wall time of the command `rewindfs hooks install`
 *    writes (sh running the C client, which marks a checkpoint over the hook
 *    socket), fed a recorded Claude Code Bash payload, one file changed
 *    before each call (so every mark seals something). Beside it: `sh -c
 *    true` (what any command hook costs the harness: fork, exec, a shell)
 *    and `node -e ''` (the least a hook written in Node would cost, before
 *    doing anything), `sh -c /bin/true` (any hook that is a program: fork,
 *    exec, a shell, an exec) and the hook with a cwd in no workspace (its
 *    discovery, no mark). The hook's added latency per tool call is its own
 *    wall time: without rewindfs the harness runs no hook at all.
 *  - an MCP checkpoint call: `tools/call checkpoint` round trip seen by the
 *    MCP SDK's own client over stdio to `rewindfs mcp`, one file changed
 *    before each call; beside it, the same mark over the websocket
 *    (RewindClient.mark), which is what the MCP server does inside, and
 *    `tools/list` (an MCP round trip over stdio that does not reach the
 *    daemon): the checkpoint call costs about the sum of the two.
 *
 *   node dist/bench/harness.js [--calls 50]
 *
 * Targets (issue 14): hook < 20 ms and MCP checkpoint < 5 ms at the median;
 * printed as MET / NOT MET, never asserted.
 */
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { spawnSync } from 'node:child_process'
import { pathToFileURL } from 'node:url'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js'
import { Cleanup, mountRewind, CLI, median, now, table, machine, type RewindMount } from './lib.js'
import { quantile } from './helpers/stats.js'
import { hookCommand, HOOK_BINARY, FALLBACK_SCRIPT } from '../hooks/settings.js'

/** A Claude Code PreToolUse payload for a Bash call in `dir` (the shape of test/fixtures/claude). */
function payload (dir: string, i: number): string {
  return JSON.stringify({
    session_id: '3f1c2a9e-7b4d-4e21-9a65-0c8d2e7f5b13',
    transcript_path: '/root/.claude/projects/-bench/3f1c2a9e-7b4d-4e21-9a65-0c8d2e7f5b13.jsonl',
    cwd: dir,
    permission_mode: 'default',
    hook_event_name: 'PreToolUse',
    tool_name: 'Bash',
    tool_input: { command: `echo step ${i} >> log.txt && npm test`, description: 'Run the tests' },
    tool_use_id: `toolu_bench${String(i).padStart(6, '0')}`
  })
}

/** Wall time of `sh -c cmd` with `input` on stdin, ms; throws unless it exits 0. */
function timeCommand (cmd: string, input: string): number {
  const t0 = now()
  const r = spawnSync('sh', ['-c', cmd], { input, encoding: 'utf8' })
  const ms = now() - t0
  if (r.status !== 0) throw new Error(`${cmd} exited ${r.status}: ${r.stderr}`)
  return ms
}

/** Median, first and third quartile of `xs`, formatted. */
function stats (xs: number[]): string[] {
  return [median(xs), quantile(xs, 0.25), quantile(xs, 0.75)].map(x => x.toFixed(2))
}

/** Samples (ms) of every row, by name. */
export interface HarnessResult { rows: Array<{ name: string, ms: number[] }>, checkpointsMarked: number }

/** Runs the measurements on a fresh mount; `calls` samples per row. */
export async function harnessBench (cleanup: Cleanup, calls: number, log: (l: string) => void): Promise<HarnessResult> {
  if (!fs.existsSync(HOOK_BINARY)) throw new Error(`the hook client ${HOOK_BINARY} is not built: run scripts/setup.sh (it needs gcc)`)
  const m: RewindMount = await mountRewind(cleanup, 'harness', dir => { fs.writeFileSync(path.join(dir, 'log.txt'), '') })
  const before = (await m.client.status()).checkpoints
  const hook = hookCommand({ harness: 'claude', hookBinary: HOOK_BINARY, home: m.home, node: process.execPath, fallbackScript: FALLBACK_SCRIPT })
  const rows: HarnessResult['rows'] = [
    { name: 'sh -c true (any command hook)', ms: [] },
    { name: 'sh -c /bin/true (any hook program)', ms: [] },
    { name: "node -e '' (a Node hook, doing nothing)", ms: [] },
    { name: 'rewindfs hook, cwd in no workspace (no mark)', ms: [] },
    { name: 'rewindfs hook (C client, marks a checkpoint)', ms: [] },
    { name: 'websocket mark (RewindClient.mark)', ms: [] },
    { name: 'MCP tools/list (SDK client, stdio; no daemon)', ms: [] },
    { name: 'MCP tools/call checkpoint (SDK client, stdio)', ms: [] }
  ]
  const row = (name: string): number[] => rows.find(r => r.name.startsWith(name))!.ms
  const write = (i: number): void => { fs.appendFileSync(path.join(m.dir, 'log.txt'), `step ${i}\n`) }
  log(`harness: ${calls} calls per row on ${m.dir}`)
  for (let i = 0; i < calls; i++) {
    const p = payload(m.dir, i)
    row('sh -c true').push(timeCommand('true', p))
    row('sh -c /bin/true').push(timeCommand('/bin/true', p))
    row('node').push(timeCommand(`${JSON.stringify(process.execPath)} -e ''`, p))
    row('rewindfs hook, cwd in no').push(timeCommand(hook, payload(os.tmpdir(), i)))
    write(i)
    row('rewindfs hook (C').push(timeCommand(hook, p))
    write(i)
    const t0 = now()
    await m.client.mark({ label: 'bench' })
    row('websocket').push(now() - t0)
  }
  const marked = (await m.client.status()).checkpoints - before
  if (marked !== 2 * calls) throw new Error(`expected ${2 * calls} checkpoints from the hook and the websocket, the daemon has ${marked} more: the hook did not mark every time`)

  const transport = new StdioClientTransport({ command: process.execPath, args: [CLI, 'mcp', '-w', m.dir], env: { ...process.env, REWINDFS_HOME: m.home } as Record<string, string>, stderr: 'ignore' })
  const client = new Client({ name: 'rewindfs-bench', version: '0' })
  await client.connect(transport)
  cleanup.push('mcp client', async () => { await client.close().catch(() => {}) })
  await client.callTool({ name: 'checkpoint', arguments: { label: 'warm-up' } }) // connects to the daemon
  for (let i = 0; i < calls; i++) {
    write(i)
    let t0 = now()
    await client.listTools()
    row('MCP tools/list').push(now() - t0)
    t0 = now()
    const r = await client.callTool({ name: 'checkpoint', arguments: { label: `mcp ${i}` } }) as { isError?: boolean, content: Array<{ text?: string }> }
    row('MCP tools/call').push(now() - t0)
    if (r.isError) throw new Error(`the MCP checkpoint failed: ${r.content[0]?.text}`)
  }
  await client.close()
  return { rows, checkpointsMarked: (await m.client.status()).checkpoints - before }
}

/** The report: one row per measured path, then the targets. */
export function harnessText (r: HarnessResult): string {
  const med = (name: string): number => median(r.rows.find(x => x.name.startsWith(name))!.ms)
  const ms = (name: string): number[] => r.rows.find(x => x.name.startsWith(name))!.ms
  const paired = (a: string, b: string): number => median(ms(a).map((x, i) => x - ms(b)[i]))
  const hook = med('rewindfs hook (C'); const mcp = med('MCP tools/call')
  return [
    table(['path', 'median ms', 'q1 ms', 'q3 ms', 'n'], r.rows.map(x => [x.name, ...stats(x.ms), String(x.ms.length)])),
    '',
    `hook: added latency per tool call ${hook.toFixed(2)} ms at the median (target < 20 ms: ${hook < 20 ? 'MET' : 'NOT MET'}), of which ${paired('rewindfs hook (C', 'sh -c true').toFixed(2)} ms beyond what any command hook costs and ${paired('rewindfs hook (C', 'sh -c /bin/true').toFixed(2)} ms beyond any hook program (medians of paired differences with sh -c true and sh -c /bin/true); the hook without a mark (cwd in no workspace) costs ${paired('rewindfs hook, cwd in no', 'sh -c /bin/true').toFixed(2)} ms beyond /bin/true; a Node hook would start at ${med('node').toFixed(2)} ms before doing anything`,
    `MCP checkpoint call: ${mcp.toFixed(2)} ms at the median (target < 5 ms: ${mcp < 5 ? 'MET' : 'NOT MET'}); the websocket mark it wraps: ${med('websocket').toFixed(2)} ms; an MCP round trip that does not reach the daemon (tools/list): ${med('MCP tools/list').toFixed(2)} ms`,
    `checkpoints marked in the run: ${r.checkpointsMarked}`
  ].join('\n')
}

async function main (): Promise<void> {
  const i = process.argv.indexOf('--calls')
  const calls = i > 0 ? Number(process.argv[i + 1]) : 50
  if (!Number.isInteger(calls) || calls < 1) throw new Error('--calls must be a positive integer (default 50)')
  const cleanup = new Cleanup()
  try {
    console.log(`${machine()}; load average ${os.loadavg().map(x => x.toFixed(1)).join(' ')}`)
    console.log(harnessText(await harnessBench(cleanup, calls, l => console.log(l))))
  } finally { await cleanup.run() }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main().catch(e => { console.error(e instanceof Error ? e.message : e); process.exitCode = 1 })
}
