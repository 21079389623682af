/**
 * The worked example (issue 3, item 5): why rewinding files and context
 * together matters. A scripted deterministic model plays an agent on a small
 * real task in a mounted workspace:
 *
 *   task:    fix the bug in lib/slug.js (it does not lowercase) and add the
 *            missing fixture fixtures/03-spaces.txt with the generator,
 *            keeping the existing fixtures exactly as they are — they are
 *            malformed on purpose (tabs, CRLF, no-break spaces).
 *   play:    call 1 fixes the bug (correct); call 2 runs the check (fails:
 *            the fixture is missing); call 3 runs `node gen.js --normalise`
 *            (the wrong option: it rewrites every fixture normalised — the
 *            damage); call 4 runs the check again, which fails because the
 *            fixtures lost their tabs and CRLF; call 5 lists candidates;
 *            call 6 commits a backtrack to the boundary before call 3 (the
 *            generator) with a memory note. With the memory, the model runs
 *            `node gen.js --only-missing` and the check, then says done.
 *
 * The same script runs three ways, with the same budget of MODEL_CALLS model
 * calls: `continue` (rewind budget 0: the commit is refused, the model goes
 * on from the damaged workspace), `restart` (restartFromBeginning: back to
 * the first checkpoint with the memory, redoing the fix) and `rewind` (back
 * to the checkpoint before the generator). The ordered acceptance criteria
 * are checked on the workspace afterwards; a run's score is how many hold
 * in order before the first that does not (as in the AgentRewind paper's
 * FITS case).
 *
 * Build and run (after `npm test` or `npm run setup` has built the daemon):
 *
 *   node_modules/.bin/tsc -p examples/tsconfig.json && node dist/examples/worked-example.js
 *
 * Needs /dev/fuse, as the tests do. Prints the table; exits 1 unless rewind
 * satisfies every criterion and both others satisfy fewer.
 */
import fs from 'node:fs'
import path from 'node:path'
import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import { mountWorkspace, type Mounted } from '../test/helpers/mount.js'
import type { ChatMessage, Model, ModelReply, ToolCall, ToolSpec } from '../client/chat.js'
import { isMemoryMessage } from '../client/memory.js'
import { Runner, type ExecuteTool, type RunResult } from '../client/runner.js'
import { BACKTRACK_CANDIDATES, BACKTRACK_COMMIT, type CandidateView } from '../client/tools.js'

const exec = promisify(execFile)

/** Model calls each way may make. */
export const MODEL_CALLS = 8

// ------------------------------------------------------------ the task

const BUGGY = `// slug: "Hello  World" -> "hello-world"
module.exports.slug = s => s.trim().replace(/\\s+/g, '-')
`
const FIXED = `// slug: "Hello  World" -> "hello-world"
module.exports.slug = s => s.trim().toLowerCase().replace(/\\s+/g, '-')
`
/** The fixtures as shipped: malformed on purpose. */
const FIXTURES: Record<string, string> = {
  '01-tabs.txt': 'Hello\tWorld  \r\n',
  '02-nbsp.txt': 'Caf\u00e9\u00a0Menu\r\n',
}
const SPEC = {
  '01-tabs.txt': { text: 'Hello\tWorld  \r\n', expect: 'hello-world', keeps: ['\t', '\r\n'] },
  '02-nbsp.txt': { text: 'Caf\u00e9\u00a0Menu\r\n', expect: 'caf\u00e9-menu', keeps: ['\u00a0', '\r\n'] },
  '03-spaces.txt': { text: '  Many   Spaces  ', expect: 'many-spaces', keeps: ['   '] },
}
const GEN = `// node gen.js --only-missing | --normalise : writes fixtures from fixtures/spec.json
const fs = require('fs')
const spec = JSON.parse(fs.readFileSync('fixtures/spec.json', 'utf8'))
const mode = process.argv[2]
if (mode !== '--only-missing' && mode !== '--normalise') { console.error('usage: node gen.js --only-missing | --normalise'); process.exit(2) }
for (const [name, f] of Object.entries(spec)) {
  const file = 'fixtures/' + name
  if (mode === '--only-missing' && fs.existsSync(file)) continue
  const text = mode === '--normalise' ? f.text.replace(/\\s+/g, ' ').trim() + '\\n' : f.text
  fs.writeFileSync(file, text)
  console.log('wrote ' + file)
}
`
const CHECK = `// node check.js : the acceptance check
const fs = require('fs')
const { slug } = require('./lib/slug.js')
const spec = JSON.parse(fs.readFileSync('fixtures/spec.json', 'utf8'))
let bad = 0
for (const [name, f] of Object.entries(spec)) {
  const file = 'fixtures/' + name
  if (!fs.existsSync(file)) { console.log('FAIL ' + file + ': missing'); bad++; continue }
  const raw = fs.readFileSync(file, 'utf8')
  for (const k of f.keeps) if (!raw.includes(k)) { console.log('FAIL ' + file + ': lost ' + JSON.stringify(k) + ' (fixtures are malformed on purpose)'); bad++ }
  if (slug(raw) !== f.expect) { console.log('FAIL ' + file + ': slug ' + JSON.stringify(slug(raw)) + ' != ' + JSON.stringify(f.expect)); bad++ }
}
console.log(bad === 0 ? 'PASS' : bad + ' failures')
process.exit(bad === 0 ? 0 : 1)
`

function populate (dir: string): void {
  fs.mkdirSync(path.join(dir, 'lib'))
  fs.mkdirSync(path.join(dir, 'fixtures'))
  fs.writeFileSync(path.join(dir, 'lib/slug.js'), BUGGY)
  for (const [n, text] of Object.entries(FIXTURES)) fs.writeFileSync(path.join(dir, 'fixtures', n), text)
  fs.writeFileSync(path.join(dir, 'fixtures/spec.json'), JSON.stringify(SPEC, null, 2))
  fs.writeFileSync(path.join(dir, 'gen.js'), GEN)
  fs.writeFileSync(path.join(dir, 'check.js'), CHECK)
}

/** The ordered acceptance criteria, checked on the workspace. */
async function criteria (m: Mounted): Promise<Array<{ name: string; ok: boolean }>> {
  const file = (p: string): string | null => { try { return fs.readFileSync(path.join(m.dir, p), 'utf8') } catch { return null } }
  const node = async (args: string[]): Promise<boolean> => exec(process.execPath, args, { cwd: m.dir }).then(() => true, () => false)
  return [
    { name: 'bug fixed', ok: await node(['-e', "process.exit(require('./lib/slug.js').slug(' A  B ') === 'a-b' ? 0 : 1)"]) },
    { name: 'malformed fixtures intact', ok: Object.entries(FIXTURES).every(([n, text]) => file(`fixtures/${n}`) === text) },
    { name: 'missing fixture generated', ok: file('fixtures/03-spaces.txt') === SPEC['03-spaces.txt'].text },
    { name: 'check passes', ok: await node(['check.js']) },
  ]
}

// ------------------------------------------------------------ the agent

const TOOLS: ToolSpec[] = [
  { name: 'write_file', description: 'Write a file in the workspace.', parameters: { type: 'object', properties: { path: { type: 'string' }, content: { type: 'string' } }, required: ['path', 'content'], additionalProperties: false } },
  { name: 'run', description: 'Run a command (argv) in the workspace; answers exit code and output.', parameters: { type: 'object', properties: { argv: { type: 'array', items: { type: 'string' } } }, required: ['argv'], additionalProperties: false } },
]

function executor (m: Mounted, counts: { tools: number }): ExecuteTool {
  return async (call: ToolCall) => {
    counts.tools++
    if (call.name === 'write_file') {
      fs.writeFileSync(path.join(m.dir, String(call.arguments.path)), String(call.arguments.content))
      return { result: 'ok', exitStatus: 0 }
    }
    if (call.name === 'run') {
      const [cmd, ...args] = call.arguments.argv as string[]
      const bin = cmd === 'node' ? process.execPath : cmd
      try {
        const r = await exec(bin, args, { cwd: m.dir })
        return { result: { exit: 0, output: r.stdout + r.stderr }, exitStatus: 0 }
      } catch (e) {
        const err = e as { code?: number; stdout?: string; stderr?: string }
        return { result: { exit: err.code ?? 1, output: (err.stdout ?? '') + (err.stderr ?? '') }, exitStatus: typeof err.code === 'number' ? err.code : 1 }
      }
    }
    throw new Error(`no tool ${call.name}`)
  }
}

const use = (name: string, args: Record<string, unknown>): ToolCall => ({ id: '', name, arguments: args })
const check = (): ToolCall => use('run', { argv: ['node', 'check.js'] })

/** The scripted model: a function of the context it is given. */
function scripted (): Model {
  let ids = 0
  const decide = (messages: ChatMessage[]): ModelReply => {
    const memory = messages.some(isMemoryMessage)
    const turn = messages.filter(x => x.role === 'assistant').length
    const last = messages[messages.length - 1]
    const lastJson = (): unknown => { try { return JSON.parse(last.content) } catch { return null } }
    const passed = last?.role === 'tool' && (lastJson() as { exit?: number } | null)?.exit === 0 && last.content.includes('PASS')
    if (passed) return { content: 'done: the bug is fixed and the fixture generated; the check passes' }
    if (memory && turn === 2) return { content: 'the memory says: generate only the missing fixture', toolCalls: [use('run', { argv: ['node', 'gen.js', '--only-missing'] }), check()] }
    switch (turn) {
      case 0: return { content: 'fix the bug', toolCalls: [use('write_file', { path: 'lib/slug.js', content: FIXED })] }
      case 1: return { content: 'run the check', toolCalls: [check()] }
      case 2: return { content: 'generate fixtures', toolCalls: [use('run', { argv: ['node', 'gen.js', '--normalise'] })] }
      case 3: return { content: 'check again', toolCalls: [check()] }
      case 4: return { content: 'the generator destroyed the malformed fixtures; look for a checkpoint before it', toolCalls: [use(BACKTRACK_CANDIDATES, { reason: 'gen.js --normalise rewrote the malformed fixtures' })] }
      case 5: {
        // the boundary before model call 3 (lineage step 3) is the one just before the generator ran
        const cands = (lastJson() as { candidates: CandidateView[] }).candidates
        const before = cands.find(c => c.step === 3)
        return {
          content: 'rewind to before the generator',
          toolCalls: [use(BACKTRACK_COMMIT, {
            checkpoint_id: before?.id ?? 1,
            reason: 'undo gen.js --normalise',
            memory: {
              tried: 'node gen.js --normalise to create the missing fixture',
              why_abandoned: 'it rewrites every fixture normalised; the existing fixtures are malformed on purpose and check.js requires their tabs, CRLF and no-break spaces',
              instead: 'run node gen.js --only-missing, then node check.js',
              facts: ['gen.js --normalise overwrites existing fixtures', 'gen.js --only-missing writes only fixtures that do not exist'],
              milestones: ['lib/slug.js lowercases (the bug fix)'],
            },
          })],
        }
      }
      case 6: return { content: 'no rewind possible; generate the missing fixture and hope', toolCalls: [use('run', { argv: ['node', 'gen.js', '--only-missing'] }), check()] }
      default: return { content: 'giving up: the fixtures cannot be recovered' }
    }
  }
  return async messages => {
    const r = decide(messages)
    return r.toolCalls === undefined ? r : { ...r, toolCalls: r.toolCalls.map(c => ({ ...c, id: `call_${++ids}` })) }
  }
}

// ------------------------------------------------------------ three ways

type Way = 'continue' | 'restart' | 'rewind'

export interface WayResult { way: Way; run: RunResult; tools: number; criteria: Array<{ name: string; ok: boolean }>; score: number }

/** Run the script one way on a fresh mount (torn down by `teardowns`). */
async function runWay (way: Way, teardowns: Array<() => unknown>): Promise<WayResult> {
  const m = await mountWorkspace({ teardown: fn => { teardowns.push(fn) } }, populate)
  const counts = { tools: 0 }
  const runner = new Runner({
    client: m.client, model: scripted(), executeTool: executor(m, counts), run: `worked-${way}`, tools: TOOLS,
    maxTurns: MODEL_CALLS, rewindBudget: way === 'continue' ? 0 : undefined, restartFromBeginning: way === 'restart',
  })
  const run = await runner.run([
    { role: 'system', content: 'You are a coding agent. Tools: write_file, run, backtrack_candidates, backtrack_commit.' },
    { role: 'user', content: 'Fix lib/slug.js (it must lowercase) and add the missing fixture fixtures/03-spaces.txt with gen.js. The existing fixtures are malformed on purpose: keep them exactly. Done when `node check.js` passes.' },
  ])
  const c = await criteria(m)
  const firstFail = c.findIndex(x => !x.ok)
  return { way, run, tools: counts.tools, criteria: c, score: firstFail === -1 ? c.length : firstFail }
}

/** All three ways, in order continue, restart, rewind. */
export async function workedExample (): Promise<WayResult[]> {
  const teardowns: Array<() => unknown> = []
  try {
    const out: WayResult[] = []
    for (const way of ['continue', 'restart', 'rewind'] as const) out.push(await runWay(way, teardowns))
    return out
  } finally {
    for (const fn of teardowns.reverse()) await fn()
  }
}

/** The table as text. */
export function table (results: readonly WayResult[]): string {
  const names = results[0]?.criteria.map(c => c.name) ?? []
  const head = ['way', 'model calls', 'tool runs', 'rewinds', 'ended', ...names.map((n, i) => `${i + 1}. ${n}`), 'ordered criteria satisfied']
  const rows = results.map(r => [r.way, String(r.run.turns), String(r.tools), String(r.run.rewinds.length), r.run.stopped, ...r.criteria.map(c => c.ok ? 'yes' : 'no'), `${r.score}/${r.criteria.length}`])
  const w = head.map((h, i) => Math.max(h.length, ...rows.map(r => r[i].length)))
  const line = (cells: string[]): string => '| ' + cells.map((c, i) => c.padEnd(w[i])).join(' | ') + ' |'
  return [line(head), '|' + w.map(n => '-'.repeat(n + 2)).join('|') + '|', ...rows.map(line)].join('\n')
}

if (process.argv[1] !== undefined && import.meta.url === new URL(`file://${path.resolve(process.argv[1])}`).href) {
  const results = await workedExample()
  console.log(`Same scripted model, same budget of ${MODEL_CALLS} model calls, three ways:\n`)
  console.log(table(results))
  const [cont, restart, rewind] = results
  const expected = rewind.score === rewind.criteria.length && cont.score < rewind.score && restart.score < rewind.score
  console.log(expected ? '\nPASS: only the rewind satisfies every criterion' : '\nFAIL: the table is not the expected one')
  process.exit(expected ? 0 : 1)
}
