/** The `restore ID` command: make the workspace exactly checkpoint ID again. */
import { parseId } from '../parse.js'
import { fmtMs } from '../output.js'
import { withClient, workspaceOption } from '../locate.js'
import type { Command } from 'commander'

/** Adds `restore` to the program `p`. */
export function registerRestore (p: Command): void {
  p.command('restore').addOption(workspaceOption()).argument('<id>', 'checkpoint id')
    .description('Make the workspace exactly checkpoint ID again (unsaved changes are checkpointed first).')
    .option('--json', 'print JSON')
    .addHelpText('after', '\nExample:\n  rewindfs restore 3')
    .action(async (id: string, o: { workspace?: string, json?: boolean }) => {
      const r = await withClient(o, async c => await c.restore({ id: parseId(id) }))
      if (o.json) console.log(JSON.stringify(r))
      else console.log(`restored checkpoint #${r.checkpoint} (${r.changed} paths changed, ${fmtMs(r.ms)}); now on branch ${r.branch}${r.saved !== null ? `; the unsaved changes it replaced are checkpoint #${r.saved}` : ''}`)
    })
}
