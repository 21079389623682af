/** The `undo ID` command: revert what the segment ending at checkpoint ID changed, where nothing later touched it. */
import { parseId } from '../parse.js'
import { fmtMs, showPath } from '../output.js'
import { withClient, workspaceOption } from '../locate.js'
import { CHANGE_LETTER } from '../workspace-path.js'
import { CliError } from '../errors.js'
import type { Command } from 'commander'

/** Adds `undo` to the program `p`. */
export function registerUndo (p: Command): void {
  p.command('undo').addOption(workspaceOption()).argument('<id>', 'the checkpoint that ends the segment to revert')
    .description('Revert what the segment ending at checkpoint ID changed (diff from its parent to ID), as a new checkpoint on the current branch. When a later checkpoint (or an unsaved change) touched one of those paths, the conflicts are listed and nothing is applied.')
    .option('--dry-run', 'list what would change, change nothing')
    .option('--json', 'print JSON')
    .addHelpText('after', '\nExit status 1 when there are conflicts.\n\nExamples:\n  rewindfs undo 7 --dry-run\n  rewindfs undo 7')
    .action(async (id: string, o: { workspace?: string, json?: boolean, dryRun?: boolean }) => {
      const r = await withClient(o, async c => await c.undo({ id: parseId(id), dryRun: o.dryRun === true ? true : undefined }))
      if (o.json) { console.log(JSON.stringify(r)); if (r.conflicts.length > 0) process.exitCode = 1; return }
      if (r.conflicts.length > 0) {
        const lines = r.conflicts.map(c => `  ${CHANGE_LETTER[c.change]} ${showPath(c.path)}: ${c.by === null ? 'unsaved changes' : `checkpoint #${c.by}`} changed ${c.laterPath === c.path ? 'it' : showPath(c.laterPath)} later (${CHANGE_LETTER[c.laterChange]})`)
        throw new CliError(`cannot undo checkpoint #${r.checkpoint}: ${r.conflicts.length} path${r.conflicts.length === 1 ? '' : 's'} it changed ${r.conflicts.length === 1 ? 'was' : 'were'} changed again later; nothing was applied\n${lines.join('\n')}\n(rewindfs restore ${r.from} -- PATH puts single paths back as they were before it)`)
      }
      for (const e of r.restore?.changes ?? []) console.log(`${CHANGE_LETTER[e.change]} ${showPath(e.path)}`)
      for (const s of r.skipped) console.log(`  (${s}: attributes changed again later, left as they are)`)
      if (r.restore === null) console.log(`nothing to undo: checkpoint #${r.checkpoint} changed nothing`)
      else if (r.dryRun) console.log(`dry run: undoing checkpoint #${r.checkpoint} would change ${r.restore.changed} path${r.restore.changed === 1 ? '' : 's'}; nothing was changed`)
      else if (!r.applied) console.log(`nothing to undo: the paths checkpoint #${r.checkpoint} changed are already as at #${r.from}`)
      else console.log(`undid checkpoint #${r.checkpoint} (${r.restore.changed} paths, ${fmtMs(r.restore.ms)}) as checkpoint #${r.restore.result} on branch ${r.restore.branch}${r.restore.saved !== null ? `; unsaved changes were first saved as checkpoint #${r.restore.saved}` : ''}`)
    })
}
