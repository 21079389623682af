/**
 * `rewindfs rewind TOOL_USE_ID`: files and conversation back to just before
 * one tool call (hooks/rewind.ts).
 */
import type { Command } from 'commander'
import { rewindToolCall, hookCalls, RewindError } from '../../hooks/rewind.js'
import { HookReplyError } from '../../hooks/socket-client.js'
import { CliError } from '../errors.js'
import { route, connect, workspaceOption } from '../locate.js'

/** Adds `rewind` to the CLI. */
export function registerRewind (p: Command): void {
  p.command('rewind').argument('[tool_use_id]', 'the tool call to take back (toolu_... in Claude Code), as the hook recorded it; without it, list the tool calls you can rewind')
    .addOption(workspaceOption())
    .option('--files-only', 'restore the files only; leave the conversation as it is')
    .option('--json', 'print JSON')
    .description('Restore the workspace to the checkpoint the hook marked before a tool call, and (Claude Code) write the conversation cut at the same point as a new session to resume.')
    .addHelpText('after', '\nExample:\n  rewindfs rewind                                 # the tool calls, newest first\n  rewindfs rewind toolu_01VnqHcC4sNaG7dDZ8yK2XrB\n  claude --resume <the session id it prints>')
    .action(async (id: string | undefined, o: { workspace?: string, filesOnly?: boolean, json?: boolean }) => {
      const { workspace, hook } = await route(o)
      const client = await connect(o)
      try {
        if (id === undefined) {
          const calls = await hookCalls(client)
          if (o.json) { console.log(JSON.stringify(calls)); return }
          if (calls.length === 0) { console.log(`no tool call of ${workspace} has a checkpoint yet: install the hook (rewindfs hooks install claude|codex) and let the agent work`); return }
          for (const c of calls) console.log(`${c.meta.tool_use_id ?? '(no id)'}  #${c.checkpoint}  ${new Date(c.time).toISOString().replace(/\.\d{3}Z$/, 'Z')}  ${c.meta.harness} ${c.meta.tool_name}${c.meta.input ? `: ${c.meta.input}` : ''}`)
          return
        }
        const r = await rewindToolCall({ hook, client, toolUseId: id, filesOnly: o.filesOnly })
        if (o.json) { console.log(JSON.stringify(r)); return }
        for (const n of r.notes) console.log(`note: ${n}`)
        console.log(`restored checkpoint #${r.checkpoint}, marked before ${r.meta.tool_name} ${r.toolUseId}${r.meta.input ? ` (${r.meta.input})` : ''}: ${r.restore.changed} paths changed${r.restore.saved !== null ? `; the state it replaced is checkpoint #${r.restore.saved}` : ''}`)
        if (r.transcript) {
          console.log(`wrote the conversation up to that tool call as a new session (${r.transcript.kept} lines kept, ${r.transcript.dropped} dropped): ${r.transcript.file}`)
          console.log(`resume it with: claude --resume ${r.transcript.sessionId}`)
        }
      } catch (e) {
        if (e instanceof RewindError) throw new CliError(e.message)
        if (e instanceof HookReplyError) throw new CliError(`the daemon's hook socket answered: ${e.message} [${e.code}]`)
        if ((e as NodeJS.ErrnoException).code === 'ENOENT' || (e as NodeJS.ErrnoException).code === 'ECONNREFUSED') throw new CliError(`the daemon for ${workspace} has no hook socket (${(e as Error).message}): mount it with this version of rewindfs`)
        throw e
      } finally { await client.close().catch(() => {}) }
    })
}
