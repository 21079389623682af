/**
 * The MCP server of one mounted workspace (`rewindfs mcp`): the tools a model
 * uses to checkpoint, inspect and rewind the workspace, served with the
 * official TypeScript SDK (@modelcontextprotocol/sdk, v1 line) over any
 * transport (stdio in the CLI, in-memory or stdio in tests). Every tool is a
 * client of the daemon's websocket protocol (client/client.ts).
 *
 * The harness owns its conversation, so backtrack_commit over MCP restores
 * the files, records the rewind memory in the daemon and returns the whole
 * accumulated memory as text for the model to carry on with; it cannot take
 * the conversation back (the hooks' `rewindfs rewind` does that for Claude
 * Code, see hooks/).
 *
 * Nothing here writes to stdout: the stdio transport owns it.
 */
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js'
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js'
import { z } from 'zod'
import type { RewindClient } from '../client/client.js'
import { RewindError } from '../client/errors.js'
import { renderMemoryText, NOTE_LIST_MAX, NOTE_TEXT_MAX } from '../client/memory.js'
import { backtrackCommit, candidateView, MAX_CANDIDATES, REASON_MAX, ToolArgumentError } from '../client/tools.js'

/** What a tool cannot undo, said in every description that changes the workspace. */
export const CANNOT_UNDO = 'It cannot undo anything outside the workspace directory: commands that reached the network or other machines (git push, deploys, sent mail, HTTP POSTs, package publishes), databases or services outside the workspace, files outside it, and processes still running keep their effects.'

/** Options of createMcpServer. */
export interface McpOptions {
  /** the daemon client; called once per tool call, so it may connect lazily (and throw a message that says what to do) */
  client: () => Promise<RewindClient>
  /** the rewind memory's run name used by backtrack_commit and memory (proto: 1..200 characters, no control characters, no '!') */
  run: string
  /** the workspace directory, shown in descriptions and status */
  workspace: string
  /** rewindfs's version, announced to the MCP client (serverInfo.version) */
  version: string
}

/** Text result. */
function text (s: string): CallToolResult {
  return { content: [{ type: 'text', text: s }] }
}

/** An error the model can read: the daemon's code and message, or what was wrong with the arguments. */
function failure (e: unknown): CallToolResult {
  const msg = e instanceof RewindError
    ? `${e.message} [${e.code}]`
    : e instanceof ToolArgumentError ? `${e.field}: ${e.message}` : (e as Error)?.message ?? String(e)
  return { content: [{ type: 'text', text: `rewindfs: ${msg}` }], isError: true }
}

/** ms since the epoch as an ISO time without milliseconds. */
function iso (ms: number): string {
  return new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z')
}

const CHANGE = { added: 'A', deleted: 'D', modified: 'M', meta: 'm', type: 'T' } as const

/** Longest file content returned by show_file, bytes (a model's context is the limit, not the protocol). */
export const SHOW_MAX = 256 * 1024

/**
 * An McpServer with the rewindfs tools registered; connect it to a
 * transport with `server.connect(transport)`. Tool errors are results with
 * isError (the model reads them), never thrown.
 */
export function createMcpServer (o: McpOptions): McpServer {
  const server = new McpServer({ name: 'rewindfs', version: o.version }, {
    instructions: `rewindfs versions every write in the workspace ${o.workspace} (edits, shell commands, builds, git). Mark a checkpoint before a risky step; when work goes wrong, look at backtrack_candidates and diff, then restore or backtrack_commit instead of repairing by hand. ${CANNOT_UNDO}`,
  })
  const wrap = <A>(fn: (c: RewindClient, args: A) => Promise<CallToolResult>) => async (args: A): Promise<CallToolResult> => {
    try { return await fn(await o.client(), args) } catch (e) { return failure(e) }
  }

  server.registerTool('checkpoint', {
    title: 'Mark a checkpoint',
    description: `Save the exact state of every file in the workspace as a new checkpoint (a few ms, whatever the size of the workspace) and return its id. Use it before a risky step: a refactor, a migration, deleting files, running an unfamiliar script, a dependency upgrade. Give a label that says what comes next ("before migrating the schema"). Marking is cheap; mark often. A checkpoint records the workspace's files only: not this conversation, and nothing outside the workspace directory (remote repositories, databases, services, other directories), so it cannot later undo effects there.`,
    inputSchema: { label: z.string().max(1024).optional().describe('what the checkpoint is before, e.g. "before refactoring auth"') },
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
  }, wrap(async (c, a: { label?: string }) => {
    const cp = await c.mark({ label: a.label, meta: { kind: 'rewindfs.mcp/1', tool: 'checkpoint' } })
    return text(`checkpoint #${cp.id}${cp.label ? ` "${cp.label}"` : ''} on branch ${cp.branch} (${cp.dirtyBytes} bytes written since the previous one, ${cp.ms.toFixed(1)} ms)`)
  }))

  server.registerTool('backtrack_candidates', {
    title: 'Checkpoints you can go back to',
    description: `List up to ${MAX_CANDIDATES} earlier checkpoints on the path the workspace came through, newest first: id, step (0 = oldest), label, time, and a summary of what happened after it. Call it when the work has gone wrong in a way that is cheaper to undo than to repair, then pick one for diff, show_file, restore or backtrack_commit. It changes nothing.`,
    inputSchema: { reason: z.string().max(REASON_MAX).optional().describe('why you are considering a rewind'), limit: z.number().int().min(1).max(MAX_CANDIDATES).optional().describe(`how many (default ${MAX_CANDIDATES})`) },
    annotations: { readOnlyHint: true, openWorldHint: false },
  }, wrap(async (c, a: { limit?: number }) => {
    const list = (await c.candidates({ limit: a.limit ?? MAX_CANDIDATES })).map(candidateView)
    if (list.length === 0) return text('no checkpoints yet')
    return text(list.map(v => `#${v.id} step ${v.step} ${iso(v.time)} ${v.branch} ${v.label === null ? '(no label)' : JSON.stringify(v.label)}: ${v.eta}`).join('\n'))
  }))

  server.registerTool('list_checkpoints', {
    title: 'All checkpoints',
    description: 'List checkpoints of every branch, newest first (id, label, time, branch, parent, pinned). A restore starts a new branch; the abandoned one stays listed here and restorable, though backtrack_candidates no longer shows it. Use it to find a checkpoint you abandoned. It changes nothing.',
    inputSchema: { limit: z.number().int().min(1).max(1000).optional().describe('how many (default 50)'), branch: z.string().min(1).max(255).optional().describe('only this branch') },
    annotations: { readOnlyHint: true, openWorldHint: false },
  }, wrap(async (c, a: { limit?: number, branch?: string }) => {
    const list = await c.log({ limit: a.limit ?? 50, branch: a.branch })
    if (list.length === 0) return text('no checkpoints')
    return text(list.map(cp => `#${cp.id} ${iso(cp.time)} ${cp.branch}${cp.parent !== null ? ` parent #${cp.parent}` : ''}${cp.pinned ? ' pinned' : ''} ${cp.label === null ? '(no label)' : JSON.stringify(cp.label)}`).join('\n'))
  }))

  server.registerTool('diff', {
    title: 'What changed since a checkpoint',
    description: 'List the paths that differ between checkpoint `from` and checkpoint `to` (default: the workspace now), one per line: A added, D deleted, M content modified, m attributes only (mode, owner, mtime), T type changed. Use it before a restore to see what it would undo, or to review what a step did. It changes nothing.',
    inputSchema: { from: z.number().int().min(1).describe('checkpoint id'), to: z.number().int().min(1).optional().describe('checkpoint id (default: the live workspace)') },
    annotations: { readOnlyHint: true, openWorldHint: false },
  }, wrap(async (c, a: { from: number, to?: number }) => {
    const d = (await c.diff({ a: a.from, b: a.to })).filter(e => e.path !== '/')
    const what = `#${a.from} and ${a.to === undefined ? 'now' : `#${a.to}`}`
    if (d.length === 0) return text(`no difference between ${what}`)
    return text(`${d.length} path${d.length === 1 ? '' : 's'} differ between ${what}:\n` + d.map(e => `${CHANGE[e.change]} ${e.path}`).join('\n'))
  }))

  server.registerTool('show_file', {
    title: 'A file as it was at a checkpoint',
    description: `Show a file's content (or a directory's listing, or a symlink's target) as it was at a checkpoint, without changing the workspace. Use it to recover one file's old content or to compare. Text up to ${SHOW_MAX / 1024} KiB is returned; larger or binary files are described.`,
    inputSchema: { checkpoint: z.number().int().min(1).describe('checkpoint id'), path: z.string().max(4096).describe('path inside the workspace, e.g. src/index.js') },
    annotations: { readOnlyHint: true, openWorldHint: false },
  }, wrap(async (c, a: { checkpoint: number, path: string }) => {
    const p = a.path.replace(/^\/+/, '')
    const st = await c.stat({ id: a.checkpoint, path: p })
    if (!st) return { ...text(`${a.path} did not exist at checkpoint #${a.checkpoint}`), isError: true }
    if (st.type === 'dir') {
      const list = await c.readdir({ id: a.checkpoint, path: p })
      return text(list.map(e => (e.path.split('/').pop() ?? e.path) + (e.type === 'dir' ? '/' : '')).join('\n') || '(empty directory)')
    }
    if (st.type === 'symlink') return text(`symbolic link -> ${st.target ?? ''}`)
    if (st.type !== 'file') return text(`${a.path} is a ${st.type} at checkpoint #${a.checkpoint}`)
    const b = Buffer.from(await c.read({ id: a.checkpoint, path: p, length: SHOW_MAX }))
    if (b.includes(0)) return text(`${a.path} is a binary file of ${st.size} bytes at checkpoint #${a.checkpoint}`)
    const cut = st.size > b.length ? `\n[... cut: ${st.size} bytes in all, the first ${b.length} shown]` : ''
    return text(b.toString('utf8') + cut)
  }))

  server.registerTool('restore', {
    title: 'Restore the workspace to a checkpoint',
    description: `Make every file in the workspace exactly what it was at the checkpoint: content, deletions, renames, modes, the workspace's .git. Changes made since the last checkpoint are saved first as a "before restore" checkpoint (its id is returned), so a restore can itself be undone by restoring that one. Give paths to put back only those files or directories (each as it was at the checkpoint; one that did not exist there is removed) and leave everything else as it is: that is recorded as a new checkpoint on the current branch. Use it to get the files back as they were (or to undo a restore); it does not change this conversation and does not record a lesson: to abandon an approach, use backtrack_commit instead. ${CANNOT_UNDO}`,
    inputSchema: {
      checkpoint: z.number().int().min(1).describe('checkpoint id'),
      paths: z.array(z.string().min(1)).min(1).max(1000).optional().describe('workspace-relative paths (files or directories) to restore; omit to restore the whole workspace')
    },
    annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false },
  }, wrap(async (c, a: { checkpoint: number, paths?: string[] }) => {
    if (a.paths !== undefined) {
      const r = await c.restore({ id: a.checkpoint, paths: a.paths })
      const n = r.changes?.length ?? r.changed
      return text(`restored ${(r.paths ?? a.paths).join(', ')} as at checkpoint #${r.checkpoint}: ${n} path${n === 1 ? '' : 's'} changed${r.result != null ? `; the result is checkpoint #${r.result} on branch ${r.branch}` : ' (nothing differed)'}${r.saved !== null ? `; the changes it replaced are checkpoint #${r.saved}` : ''}`)
    }
    const r = await c.restore({ id: a.checkpoint })
    return text(`restored checkpoint #${r.checkpoint}: ${r.changed} path${r.changed === 1 ? '' : 's'} changed (${r.ms.toFixed(1)} ms); now on branch ${r.branch}${r.saved !== null ? `; the changes it replaced are checkpoint #${r.saved} (restore it to get them back)` : ''}`)
  }))

  const note = z.object({
    tried: z.string().max(NOTE_TEXT_MAX).describe('what was tried on the branch being abandoned'),
    why_abandoned: z.string().max(NOTE_TEXT_MAX).describe('why it was abandoned (the evidence)'),
    instead: z.string().max(NOTE_TEXT_MAX).describe('what to do instead after the rewind'),
    facts: z.array(z.string().max(NOTE_TEXT_MAX)).max(NOTE_LIST_MAX).describe('facts about the environment that stay true after the rewind'),
    milestones: z.array(z.string().max(NOTE_TEXT_MAX)).max(NOTE_LIST_MAX).describe('milestones already reached that stay reached at the restored checkpoint'),
  }).strict().describe('what you learned, for yourself after the rewind; never the current state of files (they are about to be restored)')

  server.registerTool('backtrack_commit', {
    title: 'Abandon an approach: restore a checkpoint and keep the lesson',
    description: `Go back to checkpoint checkpoint_id (one listed by backtrack_candidates): the workspace is restored exactly, your note is added to the rewind memory kept by rewindfs, and the whole rewind memory of this session comes back as text. Continue from it: the files are as they were at that checkpoint, but this conversation is not rewound, so disregard what you did to the files after that checkpoint and re-read them before relying on them. ${CANNOT_UNDO}`,
    inputSchema: { checkpoint_id: z.number().int().min(1).describe('id of a checkpoint listed by backtrack_candidates'), memory: note, reason: z.string().max(REASON_MAX).describe('why this checkpoint') },
    annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: false },
  }, wrap(async (c, a: { checkpoint_id: number, memory: unknown, reason: string }) => {
    const done = await backtrackCommit(c, o.run, a as unknown as Record<string, unknown>)
    const entries = (await c.memoryGet({ run: o.run })).entries
    // backtrack_commit's default depth restores the workspace; a context-only rewind (depth 'context') leaves it
    const r = done.restore
    const what = r ? `Restored checkpoint #${done.checkpoint} (${r.changed} paths changed; the abandoned state is checkpoint #${r.saved ?? done.from ?? '?'}).` : `Went back to checkpoint #${done.checkpoint} without restoring the files.`
    return text(`${what}\n\n${renderMemoryText(entries)}`)
  }))

  server.registerTool('memory', {
    title: 'The rewind memory',
    description: 'Show the rewind memory of this session: every lesson recorded by backtrack_commit (what was tried, why it was abandoned, what to do instead, lasting facts, milestones), oldest first. Read it after a rewind or when you resume work, so you do not repeat an abandoned approach. It changes nothing.',
    inputSchema: {},
    annotations: { readOnlyHint: true, openWorldHint: false },
  }, wrap(async (c) => {
    const entries = (await c.memoryGet({ run: o.run })).entries
    return text(entries.length === 0 ? 'the rewind memory is empty: no backtrack_commit in this session yet' : renderMemoryText(entries))
  }))

  server.registerTool('status', {
    title: 'Workspace status',
    description: 'Show the workspace, its branch, the head checkpoint (the one the files started from), how many checkpoints exist and how many paths changed since the head. Use it to see whether there is unsaved work before a restore. It changes nothing.',
    inputSchema: {},
    annotations: { readOnlyHint: true, openWorldHint: false },
  }, wrap(async (c) => {
    const s = await c.status()
    const changed = s.head === null ? null : (await c.diff({ a: s.head })).filter(e => e.path !== '/').length
    return text(`workspace ${s.workspace}\nbranch ${s.branch}\nhead checkpoint ${s.head === null ? '(none)' : '#' + s.head}\ncheckpoints ${s.checkpoints}\nchanged since the head: ${changed === null ? '-' : `${changed} path${changed === 1 ? '' : 's'}`} (${s.dirtyBytes} bytes written)\nrewind memory run ${JSON.stringify(o.run)}`)
  }))

  return server
}
