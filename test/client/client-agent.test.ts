/**
 * The client library's agent half against a real daemon and mount: the
 * recorder's segment metadata eta_t, the backtrack tool schemas and memory
 * validation, rewind memory across three rewinds, the runner's rewind and
 * restart semantics with a scripted model (the kept prefix is not
 * re-executed; files and context match the checkpoint), the run log files,
 * the worked example's three-way table.
 */
import t from 'tap'
import fs from 'node:fs'
import path from 'node:path'
import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import { fileURLToPath } from 'node:url'
import { mountWorkspace, type Mounted } from '../helpers/mount.js'
import { scriptedModel, use, type Script } from '../helpers/scripted-model.js'
import { SessionRecorder } from '../../client/recorder.js'
import { SHORT_ARGS_MAX, summarizeSegment, isSegmentMeta } from '../../client/segment.js'
import {
  backtrackToolsAnthropic, backtrackToolsOpenAi, backtrackTools, parseCommitArgs, ToolArgumentError,
  BACKTRACK_CANDIDATES, BACKTRACK_COMMIT, MAX_CANDIDATES,
} from '../../client/tools.js'
import { MEMORY_NOTE_SCHEMA, validateMemoryNote, MemoryNoteError, renderMemory, injectMemory, isMemoryMessage, type MemoryNote } from '../../client/memory.js'
import { Runner, storedMessages, type ExecuteTool, type RewindEvent } from '../../client/runner.js'
import { RunLog, readRunLog, runLogFileName } from '../../client/runlog.js'
import type { ChatMessage, ToolSpec } from '../../client/chat.js'
import type { CandidateView } from '../../client/tools.js'

const exec = promisify(execFile)
const NOTE: MemoryNote = { tried: 'x', why_abandoned: 'y', instead: 'z', facts: ['f'], milestones: ['m'] }

/** The agent's own tools for the scripted runs, executed in the mount, each execution counted by name:path. */
function workspaceTools (m: Mounted): { tools: ToolSpec[]; execute: ExecuteTool; count: Map<string, number>; n: (k: string) => number } {
  const count = new Map<string, number>()
  const tools: ToolSpec[] = [
    { name: 'write_file', description: 'write a file', parameters: { type: 'object', properties: { path: { type: 'string' }, content: { type: 'string' } }, required: ['path', 'content'] } },
    { name: 'rm', description: 'remove a file', parameters: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] } },
  ]
  const execute: ExecuteTool = async call => {
    const p = String(call.arguments.path)
    const k = `${call.name}:${p}`
    count.set(k, (count.get(k) ?? 0) + 1)
    const abs = path.join(m.dir, p)
    if (call.name === 'write_file') { fs.writeFileSync(abs, String(call.arguments.content)); return { result: 'ok', exitStatus: 0 } }
    if (call.name === 'rm') { fs.rmSync(abs); return { result: 'ok', exitStatus: 0 } }
    throw new Error(`no tool ${call.name}`)
  }
  return { tools, execute, count, n: k => count.get(k) ?? 0 }
}

/** The candidate at lineage step `step` in a backtrack_candidates result. */
function atStep (result: unknown, step: number): number {
  const c = (result as { candidates: CandidateView[] }).candidates.find(x => x.step === step)
  if (c === undefined) throw new Error(`no candidate at step ${step}`)
  return c.id
}

const read = (m: Mounted, p: string): string | null => { try { return fs.readFileSync(path.join(m.dir, p), 'utf8') } catch { return null } }

t.test('recorder: eta_t of a known segment (tool calls, files created/modified/deleted with bytes), context stored, log', async t => {
  const m = await mountWorkspace(t, dir => {
    fs.writeFileSync(path.join(dir, 'keep.txt'), 'keep')
    fs.writeFileSync(path.join(dir, 'mod.txt'), '12345')
    fs.writeFileSync(path.join(dir, 'del.txt'), '1234567')
    fs.mkdirSync(path.join(dir, 'sub'))
  })
  const head = (await m.client.status()).head
  const log = RunLog.open(path.join(m.root, 'logs'), 'rec')
  const rec = new SessionRecorder(m.client, { run: 'rec', log })
  const ctx0 = { messages: [{ role: 'user', content: 'go' }] }
  const b0 = await rec.boundary(ctx0, { label: 'b0' })
  t.equal(b0.meta.from, head, 'the first segment starts at the head checkpoint (mount)')
  t.same(b0.meta.files, { created: [], modified: [], deleted: [] }, 'nothing changed before the first boundary')

  rec.recordLlmCall(ctx0.messages, { toolCalls: [{ name: 'write_file' }] })
  fs.writeFileSync(path.join(m.dir, 'new.txt'), 'hello')
  fs.writeFileSync(path.join(m.dir, 'sub', 'deep.bin'), Buffer.alloc(3000, 7))
  rec.recordToolCall({ name: 'write_file', args: { path: 'new.txt', content: 'x'.repeat(500) }, result: 'ok', exitStatus: 0 })
  fs.writeFileSync(path.join(m.dir, 'mod.txt'), '123456789012')
  fs.rmSync(path.join(m.dir, 'del.txt'))
  rec.recordToolCall({ name: 'bash', args: 'rm del.txt; false', result: { stderr: '' }, exitStatus: 1 })
  const ctx1 = { messages: [...ctx0.messages, { role: 'assistant', content: 'did it' }] }
  const b1 = await rec.boundary(ctx1, { label: 'b1' })
  const eta = b1.meta
  t.ok(isSegmentMeta(eta))
  t.equal(eta.from, b0.checkpoint.id, 'the segment starts at the previous boundary')
  t.equal(eta.run, 'rec')
  t.equal(eta.llmCalls, 1)
  t.equal(eta.tools.length, 2)
  t.equal(eta.tools[0].name, 'write_file')
  t.equal(eta.tools[0].args.length, SHORT_ARGS_MAX, 'long arguments cut to 200 characters')
  t.ok(eta.tools[0].args.endsWith('…') && eta.tools[0].args.startsWith('{"path":"new.txt"'))
  t.same(eta.tools[1], { name: 'bash', args: 'rm del.txt; false', exitStatus: 1 })
  t.same(eta.files.created, [{ path: 'new.txt', type: 'file', bytes: 5 }, { path: 'sub/deep.bin', type: 'file', bytes: 3000 }])
  t.same(eta.files.modified, [{ path: 'mod.txt', type: 'file', bytes: 12, bytesBefore: 5, attrsOnly: false }], 'a directory whose entries changed is not listed')
  t.same(eta.files.deleted, [{ path: 'del.txt', type: 'file', bytes: 7 }], 'a deleted file with its size before')
  t.same(eta.totals, { created: 2, modified: 1, deleted: 1, bytesCreated: 3005, bytesModifiedDelta: 7, bytesDeleted: 7 })
  t.equal(summarizeSegment(eta), '2 tool calls: write_file (0), bash (1); files +2 ~1 -1 (+2.9 KiB, ~+7 B, -7 B)')

  const cands = await m.client.candidates()
  t.equal(cands[0].id, b1.checkpoint.id)
  t.same(cands[0].meta, eta, 'eta_t is the checkpoint meta in the daemon')
  t.same(await m.client.context({ id: b1.checkpoint.id }), ctx1, 'the context is stored with the checkpoint')
  t.same(await m.client.context({ id: b0.checkpoint.id }), ctx0)

  const b2 = await rec.boundary({ messages: [] })
  t.same([b2.meta.tools, b2.meta.llmCalls, b2.meta.totals.created + b2.meta.totals.modified + b2.meta.totals.deleted], [[], 0, 0], 'the next segment starts empty')

  const [file] = readRunLog(path.join(m.root, 'logs'), 'rec')
  t.same(file.records.map(r => r.type), ['checkpoint', 'llm_call', 'tool_call', 'tool_call', 'checkpoint', 'checkpoint'])
  const tc = file.records[2] as { args: { content: string } }
  t.equal(tc.args.content.length, 500, 'the log keeps the full arguments')
})

t.test('backtrack tools: OpenAI and Anthropic shapes, memory note schema and validation', async t => {
  t.same(backtrackToolsOpenAi.map(x => x.function.name), [BACKTRACK_CANDIDATES, BACKTRACK_COMMIT])
  t.same(backtrackToolsAnthropic.map(x => x.name), [BACKTRACK_CANDIDATES, BACKTRACK_COMMIT])
  for (const [i, spec] of backtrackTools.entries()) {
    const o = backtrackToolsOpenAi[i]
    const a = backtrackToolsAnthropic[i]
    t.same(Object.keys(o).sort(), ['function', 'type'])
    t.equal(o.type, 'function')
    t.same(Object.keys(o.function).sort(), ['description', 'name', 'parameters'])
    t.same(Object.keys(a).sort(), ['description', 'input_schema', 'name'])
    t.same(o.function.parameters, spec.parameters)
    t.same(a.input_schema, spec.parameters)
    t.equal(a.description, o.function.description)
    t.ok(a.description.length > 40, 'described')
    t.same(JSON.parse(JSON.stringify(o)), o, 'plain JSON')
    t.equal(spec.parameters.type, 'object')
    t.equal(spec.parameters.additionalProperties, false)
  }
  const cand = backtrackToolsOpenAi[0].function.parameters as { properties: Record<string, { type: string }>; required: string[] }
  t.same(cand.required, ['reason'])
  t.equal(cand.properties.reason.type, 'string')
  t.match(backtrackToolsOpenAi[0].function.description, new RegExp(`${MAX_CANDIDATES}`))
  const commit = backtrackToolsAnthropic[1].input_schema as { properties: Record<string, Record<string, unknown>>; required: string[] }
  t.same(commit.required, ['checkpoint_id', 'memory', 'reason'])
  t.equal(commit.properties.checkpoint_id.type, 'integer')
  t.same(commit.properties.memory, MEMORY_NOTE_SCHEMA)
  const mem = MEMORY_NOTE_SCHEMA as { properties: Record<string, { type: string; items?: { type: string } }>; required: string[]; additionalProperties: boolean }
  t.same(mem.required, ['tried', 'why_abandoned', 'instead', 'facts', 'milestones'])
  t.same(Object.values(mem.properties).map(p => p.type), ['string', 'string', 'string', 'array', 'array'])
  t.equal(mem.properties.facts.items?.type, 'string')
  t.equal(mem.additionalProperties, false)

  t.same(validateMemoryNote(NOTE), NOTE)
  const thrown = (fn: () => unknown): unknown => { try { fn() } catch (e) { return e } return undefined }
  const refused = (v: unknown, field: string, msg: RegExp): void => {
    const e = thrown(() => validateMemoryNote(v))
    t.ok(e instanceof MemoryNoteError && e.field === field && msg.test(e.message), `refused: ${field}`)
  }
  const badArgs = (args: Record<string, unknown>, field: string): void => {
    const e = thrown(() => parseCommitArgs(args))
    t.ok(e instanceof ToolArgumentError && e.field === field, `commit arguments refused: ${field}`)
  }
  refused({ ...NOTE, current_state: 'tests pass' }, 'current_state', /never claims current state/)
  refused({ ...NOTE, status: 'done' }, 'status', /never claims current state/)
  refused({ ...NOTE, files_now: ['a'] }, 'files_now', /never claims current state/)
  refused({ ...NOTE, mood: 'ok' }, 'mood', /unknown field/)
  refused({ ...NOTE, facts: 'one' }, 'facts', /array of strings/)
  refused({ tried: 'x' }, 'why_abandoned', /string/)
  refused(null, 'memory', /object/)
  badArgs({ checkpoint_id: 0, memory: NOTE, reason: 'r' }, 'checkpoint_id')
  badArgs({ checkpoint_id: 3, memory: { ...NOTE, current: 'x' }, reason: 'r' }, 'memory.current')
  badArgs({ checkpoint_id: 3, memory: NOTE }, 'reason')
  badArgs({ checkpoint_id: 3, memory: NOTE, reason: 'r', extra: 1 }, 'extra')
  t.same(parseCommitArgs({ checkpoint_id: 3, memory: NOTE, reason: 'r' }), { checkpoint_id: 3, memory: NOTE, reason: 'r' })

  const msgs: ChatMessage[] = [{ role: 'user', content: 'task' }, renderMemory([{ x: 1 }])]
  const injected = injectMemory(msgs, [{ x: 1 }, { x: 2 }])
  t.equal(injected.filter(isMemoryMessage).length, 1, 'one memory message after injection')
  t.match(injected[1].content, /rewound 2 times/)
})

t.test('runner: a committed backtrack restores files and context, the kept prefix is not re-executed; the run log forks', async t => {
  const m = await mountWorkspace(t)
  const w = workspaceTools(m)
  const logDir = path.join(m.root, 'logs')
  const log = RunLog.open(logDir, 'fix')
  const script: Script = s => {
    if (s.rewinds === 0) {
      switch (s.turn) {
        case 0: return { content: 'write a', toolCalls: [use('write_file', { path: 'a.txt', content: 'A' })] }
        case 1: return { content: 'write b', toolCalls: [use('write_file', { path: 'b.txt', content: 'B' })] }
        case 2: return { content: 'oops', toolCalls: [use('rm', { path: 'a.txt' }), use('write_file', { path: 'junk.txt', content: 'J' })] }
        case 3: return { toolCalls: [use(BACKTRACK_CANDIDATES, { reason: 'a.txt is gone' })] }
        case 4: return {
          toolCalls: [
            use(BACKTRACK_COMMIT, { checkpoint_id: atStep(s.lastResult, 3), memory: { tried: 'rm a.txt', why_abandoned: 'a.txt is needed', instead: 'write c.txt', facts: ['rm is final'], milestones: ['a.txt and b.txt written'] }, reason: 'undo the rm' }),
            use('write_file', { path: 'never.txt', content: 'N' }),
          ],
        }
      }
    }
    if (s.rewinds === 1 && s.turn === 2) return { content: 'write c', toolCalls: [use('write_file', { path: 'c.txt', content: 'C' })] }
    return { content: 'done' }
  }
  const sm = scriptedModel(script)
  const seenAtRewind: Array<{ files: Array<string | null>; stored: ChatMessage[]; e: RewindEvent }> = []
  const runner = new Runner({
    client: m.client, model: sm.model, executeTool: w.execute, run: 'fix', tools: w.tools, log,
    onRewind: async e => {
      seenAtRewind.push({ e, files: ['a.txt', 'b.txt', 'junk.txt', 'never.txt'].map(p => read(m, p)), stored: storedMessages(await m.client.context({ id: e.checkpoint }), e.checkpoint) })
    },
  })
  const task: ChatMessage[] = [{ role: 'system', content: 'you are scripted' }, { role: 'user', content: 'write files' }]
  const r = await runner.run(task)

  t.equal(r.stopped, 'finished')
  t.equal(r.final, 'done')
  t.equal(r.turns, 7, '5 calls before the rewind, 2 after')
  t.equal(r.rewinds.length, 1)
  const e = r.rewinds[0]
  t.equal(e.checkpoint, r.checkpoints[2], 'restored the boundary before model call 3 (lineage step 3)')
  t.equal(e.requested, e.checkpoint)
  t.equal(e.from, r.checkpoints[4], 'abandoned at the boundary before call 5')
  t.same(Object.fromEntries(w.count), { 'write_file:a.txt': 1, 'write_file:b.txt': 1, 'rm:a.txt': 1, 'write_file:junk.txt': 1, 'write_file:c.txt': 1 }, 'each tool ran once: the kept prefix was not re-executed, the call after the commit never ran')

  t.equal(seenAtRewind.length, 1)
  t.same(seenAtRewind[0].files, ['A', 'B', null, null], 'at the rewind the files are those of the checkpoint')
  t.same(seenAtRewind[0].stored, sm.seen[2].messages, 'the stored context is what the model saw at call 3')
  t.same(e.messages.filter(x => !isMemoryMessage(x)), sm.seen[2].messages, 'the rebuilt context is the stored one ...')
  t.ok(isMemoryMessage(e.messages[e.messages.length - 1]), '... with the memory injected last')
  t.same(sm.seen[5].messages, e.messages, 'the model continued from the rebuilt context')
  t.match(sm.seen[5].memory, /Tried: rm a\.txt/)
  t.match(sm.seen[5].memory, /Milestone reached: a\.txt and b\.txt written/)
  t.same(['a.txt', 'b.txt', 'c.txt', 'junk.txt', 'never.txt'].map(p => read(m, p)), ['A', 'B', 'C', null, null], 'final files')

  const mem = await m.client.memoryGet({ run: 'fix' })
  t.equal(mem.entries.length, 1)
  t.match(mem.entries[0], { kind: 'rewindfs.memory/1', tried: 'rm a.txt', reason: 'undo the rm', to: e.checkpoint, from: e.from })
  const lineage = (await m.client.candidates()).map(c => c.id)
  t.notOk(lineage.includes(r.checkpoints[3]) || lineage.includes(r.checkpoints[4]), 'the abandoned boundaries are off the lineage')
  t.ok(lineage.includes(r.checkpoints[2]) && lineage.includes(r.checkpoints[1]) && lineage.includes(r.checkpoints[0]), 'the kept prefix is on it')

  // the run log: the abandoned file stays readable, the new one names its fork
  const files = readRunLog(logDir, 'fix')
  t.equal(files.length, 2, 'a rewind starts a new log file')
  const [f0, f1] = files
  t.equal(path.basename(f0.path), runLogFileName('fix', 0))
  t.same(f0.header.forkedFrom, null)
  t.equal(f0.header.run, 'fix')
  t.same(f0.records.filter(x => x.type === 'llm_call').length, 5)
  t.same(f0.records.filter(x => x.type === 'checkpoint').map(x => (x as { id: number }).id), r.checkpoints.slice(0, 5))
  t.same(f0.records.filter(x => x.type === 'tool_call').map(x => (x as { name: string }).name), ['write_file', 'write_file', 'rm', 'write_file', BACKTRACK_CANDIDATES, BACKTRACK_COMMIT])
  t.match(f0.records[f0.records.length - 1], { type: 'rewind', from: e.from, to: e.checkpoint, reason: 'undo the rm', memoryCount: 1, restart: false })
  t.same(f1.header.forkedFrom, { checkpoint: e.checkpoint, file: runLogFileName('fix', 0), records: f0.records.length })
  t.equal(f1.header.run, 'fix')
  t.same(f1.records.map(x => x.type), ['checkpoint', 'llm_call', 'tool_call', 'checkpoint', 'llm_call'])
  t.match(f1.records[1], { type: 'llm_call', inputStart: 0, inputLength: e.messages.length }, 'a new file logs the whole context at its first call')
  t.same((f1.records[1] as { input: unknown }).input, e.messages)
  t.notOk(files.some(f => f.records.some(x => x.type === 'tool_call' && JSON.stringify(x.args).includes('never.txt'))), 'the call after the commit was never executed, so never logged')
})

t.test('rewind memory accumulates across three rewinds; a current-state note is refused and adds nothing', async t => {
  const m = await mountWorkspace(t)
  const w = workspaceTools(m)
  const script: Script = s => {
    if (s.rewinds >= 3) return { content: 'finished' }
    if (s.turn === 0) return { toolCalls: [use('write_file', { path: `try${s.rewinds}.txt`, content: String(s.rewinds) })] }
    if (s.turn === 1) return { toolCalls: [use(BACKTRACK_CANDIDATES, { reason: 'bad try' })] }
    if (s.turn === 2 && s.rewinds === 0) {
      return { toolCalls: [use(BACKTRACK_COMMIT, { checkpoint_id: atStep(s.results[0], 1), memory: { ...NOTE, current_state: 'try0.txt exists' }, reason: 'bad' })] }
    }
    const cands = s.messages.filter(x => x.role === 'tool' && x.name === BACKTRACK_CANDIDATES)
    const id = atStep(JSON.parse(cands[cands.length - 1].content), 1)
    return { toolCalls: [use(BACKTRACK_COMMIT, { checkpoint_id: id, memory: { ...NOTE, tried: `try ${s.rewinds}`, facts: [`fact ${s.rewinds}`] }, reason: `rewind ${s.rewinds + 1}` })] }
  }
  const sm = scriptedModel(script)
  const r = await new Runner({ client: m.client, model: sm.model, executeTool: w.execute, run: 'acc', tools: w.tools }).run([{ role: 'user', content: 'task' }])
  t.equal(r.final, 'finished')
  t.equal(r.rewinds.length, 3)
  const refusal = sm.seen.find(s => s.rewinds === 0 && s.turn === 3)
  t.match(refusal?.lastResult, { field: 'memory.current_state', error: /never claims current state/ }, 'the refused note is answered with an error')
  t.same(r.rewinds.map(e => e.memoryCount), [1, 2, 3], 'every commit adds one entry')
  t.same(r.rewinds.map(e => e.checkpoint), [r.checkpoints[0], r.checkpoints[0], r.checkpoints[0]], 'each time to the first boundary (lineage step 1)')
  const entries = (await m.client.memoryGet({ run: 'acc' })).entries
  t.same(entries.map(x => x.tried), ['try 0', 'try 1', 'try 2'], 'kept by the daemon in order; the refused note is not there')
  t.notOk(entries.some(x => 'current_state' in x))
  for (const [i, e] of r.rewinds.entries()) {
    t.equal(e.messages.filter(isMemoryMessage).length, 1, `rewind ${i + 1}: one memory message`)
    const text = e.messages[e.messages.length - 1].content
    t.match(text, new RegExp(`rewound ${i + 1} time`))
    for (let j = 0; j <= i; j++) t.match(text, new RegExp(`Fact: fact ${j}`), `rewind ${i + 1} carries entry ${j + 1}`)
  }
  t.same(w.count.get('write_file:try0.txt'), 1)
  t.same(['try0.txt', 'try1.txt', 'try2.txt'].map(p => read(m, p)), [null, null, null], 'each try was rewound away')
  t.same(sm.seen[sm.seen.length - 1].messages.filter(x => !isMemoryMessage(x)), [{ role: 'user', content: 'task' }], 'the last branch starts from the task')
})

t.test('runner: restartFromBeginning rewinds to the first checkpoint; rewindBudget bounds the commits', async t => {
  const m = await mountWorkspace(t)
  const w = workspaceTools(m)
  const script: Script = s => {
    switch (s.turn) {
      case 0: return { toolCalls: [use('write_file', { path: 'a.txt', content: `A${s.rewinds}` })] }
      case 1: return { toolCalls: [use('write_file', { path: 'b.txt', content: 'B' }), use(BACKTRACK_CANDIDATES, { reason: 'r' })] }
      case 2: return { toolCalls: [use(BACKTRACK_COMMIT, { checkpoint_id: atStep(s.lastResult, 2), memory: NOTE, reason: `commit at rewinds=${s.rewinds}` })] }
      default: return { content: 'done' }
    }
  }
  const sm = scriptedModel(script)
  const events: Array<{ files: Array<string | null> }> = []
  const r = await new Runner({
    client: m.client, model: sm.model, executeTool: w.execute, run: 'restart', tools: w.tools, restartFromBeginning: true, rewindBudget: 1,
    onRewind: () => { events.push({ files: ['a.txt', 'b.txt'].map(p => read(m, p)) }) },
  }).run([{ role: 'user', content: 'task' }])
  t.equal(r.rewinds.length, 1, 'the budget allowed one commit')
  const e = r.rewinds[0]
  t.equal(e.requested, r.checkpoints[1], 'the model named lineage step 2')
  t.equal(e.checkpoint, r.checkpoints[0], 'restart: the first checkpoint was restored instead')
  t.ok(e.restart)
  t.same(events[0].files, [null, null], 'files as at the first checkpoint')
  t.same(e.messages.filter(x => !isMemoryMessage(x)), [{ role: 'user', content: 'task' }], 'context as at the first checkpoint')
  t.same((await m.client.memoryGet({ run: 'restart' })).entries.map(x => x.to), [r.checkpoints[0]], 'the memory records the checkpoint restored')
  const second = sm.seen.find(s => s.rewinds === 1 && s.turn === 3)
  t.match(second?.lastResult, { error: /rewind budget exhausted: 1 of 1/ }, 'a commit over the budget is answered with an error')
  t.equal(r.final, 'done')
  t.same(Object.fromEntries(w.count), { 'write_file:a.txt': 2, 'write_file:b.txt': 2 }, 'a restart re-runs from the beginning (by design)')
  t.same(['a.txt', 'b.txt'].map(p => read(m, p)), ['A1', 'B'], 'the over-budget commit changed nothing')
})

t.test('runner: a commit to a checkpoint the runner did not mark is refused as a tool error and changes nothing', async t => {
  const m = await mountWorkspace(t)
  const w = workspaceTools(m)
  const script: Script = s => {
    if (s.turn === 0) return { toolCalls: [use('write_file', { path: 'a.txt', content: 'A' }), use(BACKTRACK_CANDIDATES, { reason: 'look' })] }
    if (s.turn === 1) return { toolCalls: [use(BACKTRACK_COMMIT, { checkpoint_id: atStep(s.lastResult, 0), memory: NOTE, reason: 'to the mount checkpoint' })] }
    return { content: 'done' }
  }
  const sm = scriptedModel(script)
  const r = await new Runner({ client: m.client, model: sm.model, executeTool: w.execute, run: 'foreign', tools: w.tools }).run([{ role: 'user', content: 'task' }])
  t.equal(r.stopped, 'finished', 'the run goes on')
  t.equal(r.rewinds.length, 0, 'no rewind happened')
  const last = sm.seen[sm.seen.length - 1].lastResult as { error?: string }
  t.match(last?.error ?? '', /not marked by this run's runner/, 'the model is told why')
  t.equal(read(m, 'a.txt'), 'A', 'the workspace was not restored')
  t.same((await m.client.memoryGet({ run: 'foreign' })).entries, [], 'no memory entry was stored')
})

t.test('worked example (examples/worked-example.ts): continue / restart / rewind table', async t => {
  const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..')
  const r = await exec(process.execPath, ['dist/examples/worked-example.js'], { cwd: root, timeout: 60000 }).catch((e: { code: number; stdout: string; stderr: string }) => e)
  const out = (r as { stdout: string }).stdout
  t.equal((r as { code?: number }).code ?? 0, 0, 'exits 0')
  const row = (way: string): string[] => (out.split('\n').find(l => l.startsWith(`| ${way} `)) ?? '').split('|').map(c => c.trim()).filter(c => c !== '')
  t.same(row('continue').slice(-5), ['yes', 'no', 'no', 'no', '1/4'], 'continue: the damage stays')
  t.same(row('restart').slice(-5), ['yes', 'yes', 'no', 'no', '2/4'], 'restart: the budget runs out redoing the prefix')
  t.same(row('rewind').slice(-5), ['yes', 'yes', 'yes', 'yes', '4/4'], 'rewind: every criterion')
  t.match(out, /PASS: only the rewind satisfies every criterion/)
})
