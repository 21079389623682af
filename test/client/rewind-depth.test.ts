/**
 * Depth choices of a backtrack (issue 16) with a scripted model against a
 * real daemon and mount: `both` restores the files and rebuilds the
 * context, `context` (depth 0) rebuilds the context and keeps the files,
 * `workspace` restores the files and keeps the conversation (the other
 * calls of that reply answered "not run"). The depth comes from
 * backtrack_commit's argument or, when absent, the runner's option; the
 * run log records it, and forks only when the context was rebuilt.
 */
import t from 'tap'
import fs from 'node:fs'
import path from 'node:path'
import { mountWorkspace } from '../helpers/mount.js'
import { scriptedModel, use, type Script } from '../helpers/scripted-model.js'
import { BACKTRACK_COMMIT, parseCommitArgs, ToolArgumentError, backtrackCommitSpec, type RewindDepth } from '../../client/tools.js'
import { Runner, type ExecuteTool } from '../../client/runner.js'
import { RunLog, readRunLog } from '../../client/runlog.js'
import { isMemoryMessage } from '../../client/memory.js'
import type { ToolSpec } from '../../client/chat.js'

const NOTE = { tried: 'broke a.txt', why_abandoned: 'the test fails', instead: 'keep a.txt', facts: [], milestones: [] }

t.test('backtrack_commit takes a depth; a bad one is a tool error naming the field', async t => {
  t.same((backtrackCommitSpec.parameters as { properties: { depth: { enum: string[] } } }).properties.depth.enum, ['both', 'context', 'workspace'])
  t.equal(parseCommitArgs({ checkpoint_id: 1, memory: NOTE, reason: 'r', depth: 'context' }).depth, 'context')
  t.equal(parseCommitArgs({ checkpoint_id: 1, memory: NOTE, reason: 'r' }).depth, undefined)
  t.throws(() => parseCommitArgs({ checkpoint_id: 1, memory: NOTE, reason: 'r', depth: 'files' }), new ToolArgumentError('depth', 'depth must be one of both, context, workspace'))
})

for (const [depth, how] of [['both', 'argument'], ['context', 'argument'], ['workspace', 'argument'], ['context', 'runner option']] as Array<[RewindDepth, string]>) {
  t.test(`depth ${depth} (${how})`, async t => {
    const m = await mountWorkspace(t)
    const file = path.join(m.dir, 'a.txt')
    const tools: ToolSpec[] = [{ name: 'write_file', description: 'write a.txt', parameters: { type: 'object', properties: { content: { type: 'string' } }, required: ['content'] } }]
    let writes = 0
    const execute: ExecuteTool = async call => { writes++; fs.writeFileSync(file, String(call.arguments.content)); return { result: 'ok', exitStatus: 0 } }
    let target = 0
    const script: Script = s => {
      if (s.rewinds === 0 && s.turn === 0) return { content: 'good', toolCalls: [use('write_file', { content: 'good' })] }
      if (s.rewinds === 0 && s.turn === 1) return { content: 'bad', toolCalls: [use('write_file', { content: 'bad' })] }
      if (s.rewinds === 0 && s.turn === 2) {
        const args: Record<string, unknown> = { checkpoint_id: target, memory: NOTE, reason: 'the bad write' }
        if (how === 'argument') args.depth = depth
        return { toolCalls: [use(BACKTRACK_COMMIT, args), use('write_file', { content: 'never' })] }
      }
      return { content: 'done' }
    }
    const sm = scriptedModel(script)
    const logDir = path.join(m.root, 'logs')
    const runner = new Runner({
      client: m.client, model: sm.model, executeTool: execute, run: `depth-${depth}`, tools, log: RunLog.open(logDir, `depth-${depth}`),
      rewindDepth: how === 'runner option' ? depth : undefined,
      onRewind: e => { t.equal(e.depth, depth, 'the event names the depth') }
    })
    // the checkpoint before model call 2 (a.txt = good) is the target; known once call 2 is marked
    const orig = m.client.mark.bind(m.client)
    let marks = 0
    m.client.mark = async (a) => { const c = await orig(a); if (++marks === 2) target = c.id; return c }
    const r = await runner.run([{ role: 'user', content: 'write a.txt' }])
    t.equal(r.stopped, 'finished')
    t.equal(r.rewinds.length, 1)
    t.equal(r.rewinds[0].checkpoint, target)
    t.equal(writes, 2, 'the call after the commit never ran')
    const last = sm.seen[sm.seen.length - 1]
    if (depth === 'context') t.equal(fs.readFileSync(file, 'utf8'), 'bad', 'depth context: the files stay as they were')
    else t.equal(fs.readFileSync(file, 'utf8'), 'good', 'the files went back')
    if (depth === 'workspace') {
      t.equal(last.turn, 3, 'the conversation went on')
      t.notOk(last.messages.some(isMemoryMessage), 'no context rebuilt, no memory injected')
      t.match(last.results, [{ restored: target, depth: 'workspace' }, { error: /not run/ }], 'the commit is answered, the rest of the reply is answered "not run"')
    } else {
      t.equal(last.turn, 1, 'the context is the one stored at the checkpoint')
      t.ok(last.messages.some(isMemoryMessage), 'with the memory injected')
      t.same(last.messages.filter(x => !isMemoryMessage(x)), sm.seen[1].messages)
    }
    const files = readRunLog(logDir, `depth-${depth}`)
    const rec = files.flatMap(f => f.records).find(x => x.type === 'rewind')
    t.match(rec, { type: 'rewind', to: target, depth }, 'the run log records the depth')
    t.equal(files.length, depth === 'workspace' ? 1 : 2, 'the log forks only when the context was rebuilt')
    if (depth === 'context') {
      const lineage = (await m.client.candidates()).map(c => c.id)
      t.ok(lineage.includes(r.checkpoints[2]), 'depth context: the workspace went on, so the later checkpoints stay on the lineage')
    }
  })
}
