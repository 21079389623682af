/** The `blame PATH` command: which checkpoint, and which tool call of its segment, last changed a path. */
import { fmtTime } from '../output.js'
import { withClient, workspaceOption, locate } from '../locate.js'
import { CHANGE_LETTER, toWorkspacePath } from '../workspace-path.js'
import { isSegmentMeta } from '../../client/segment.js'
import { isBacktrackTool } from '../../client/tools.js'
import type { Command } from 'commander'
import type { CallChanges, SegmentAttribution } from '../../proto/messages.js'

/** Adds `blame` to the program `p`. */
export function registerBlame (p: Command): void {
  p.command('blame').addOption(workspaceOption()).argument('<path>', 'a file or directory of the workspace')
    .description('Say which checkpoint last changed PATH (on the current lineage) and the tool calls of the segment that ends there, and the tool call that changed it: the daemon\'s attribution when the change was made inside a tool call (rewindfs exec, the runner), else the segment metadata\'s tool calls (DECISIONS.md "Attribution of changes to tool calls").')
    .option('--json', 'print JSON')
    .addHelpText('after', '\nExample:\n  rewindfs blame src/calc.js')
    .action(async (p0: string, o: { workspace?: string, json?: boolean }) => {
      const { workspace } = locate(o)
      const path = toWorkspacePath(workspace, p0)
      const [last] = await withClient(o, async c => await c.history({ path, limit: 1, meta: true }))
      const meta = last?.meta ?? null
      const tools = isSegmentMeta(meta) ? meta.tools.filter(t => !isBacktrackTool(t.name)) : []
      // the daemon's attribution first (the calls that changed this path, or below it); else the segment's recorded calls
      const byCall = last?.calls ? callsOf(last.calls, path) : null
      const toolCall = byCall === null ? (tools.length === 1 ? tools[0] : null) : null
      if (o.json) { console.log(JSON.stringify(last === undefined ? null : { ...last, toolCall, tools, changedBy: byCall })); return }
      if (last === undefined) { console.log(`/${path}: no checkpoint on the current lineage changed it`); return }
      console.log(`/${path}: ${CHANGE_LETTER[last.change]} at checkpoint #${last.checkpoint} (${fmtTime(last.time)}, branch ${last.branch}${last.label ? `, ${last.label}` : ''})${last.parent !== null ? `; rewindfs diff ${last.parent} ${last.checkpoint} shows the segment` : ''}`)
      if (byCall !== null && byCall.length > 0) {
        for (const c of byCall) console.log(c.call === null ? 'changed outside any tool call (by a process no call started)' : `tool call ${c.call}: ${c.tool} ${c.args} -> ${c.exitStatus ?? (c.open ? 'still running at the checkpoint' : '?')} (${c.mechanism})`)
        return
      }
      if (!isSegmentMeta(meta)) console.log(meta === null ? 'no segment metadata: the mark gave none (the runner and recorder record the tool calls)' : `segment metadata: ${JSON.stringify(meta).slice(0, 400)}`)
      else if (toolCall) console.log(`tool call: ${toolCall.name} ${toolCall.args} -> ${toolCall.exitStatus}`)
      else if (tools.length === 0) console.log('the segment recorded no tool call')
      else {
        console.log(`one of the segment's ${tools.length} tool calls (the segment records its files, not which call wrote each):`)
        for (const t of tools) console.log(`  ${t.name} ${t.args} -> ${t.exitStatus}`)
      }
    })
}

/**
 * The calls of a segment's attribution that changed `path` or a path below
 * it (a directory), in call order; null when no call's lists name it (the
 * lists are cut at 200 paths per kind).
 */
export function callsOf (a: SegmentAttribution, path: string): CallChanges[] | null {
  const hit = (p: string): boolean => p === path || path === '' || p.startsWith(path + '/')
  const out = a.calls.filter(c => c.created.some(f => hit(f.path)) || c.modified.some(f => hit(f.path)) || c.deleted.some(f => hit(f.path)))
  return out.length === 0 ? null : out
}
