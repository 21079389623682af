/** The `diff A [B]` command: paths that differ between two checkpoints, or a checkpoint and now. */
import { parseId } from '../parse.js'
import { showPath } from '../output.js'
import { withClient, workspaceOption } from '../locate.js'
import type { Command } from 'commander'

/** Adds `diff` to the program `p`. */
export function registerDiff (p: Command): void {
  p.command('diff').addOption(workspaceOption()).argument('<a>', 'checkpoint id').argument('[b]', 'checkpoint id (default: the live workspace)')
    .description('Paths that differ between two checkpoints, or a checkpoint and now.')
    .option('--json', 'print JSON')
    .addHelpText('after', '\nExample:\n  rewindfs diff 3        # what changed since checkpoint 3')
    .action(async (a: string, b: string | undefined, o: { workspace?: string, json?: boolean }) => {
      const d = await withClient(o, async c => await c.diff({ a: parseId(a), b: b === undefined ? undefined : parseId(b) }))
      if (o.json) console.log(JSON.stringify(d))
      else for (const e of d) console.log(`${{ added: 'A', deleted: 'D', modified: 'M', meta: 'm', type: 'T' }[e.change]} ${showPath(e.path)}`)
    })
}
