/** The `restore ID` command: make the workspace exactly checkpoint ID again. */
import { parseId } from '../parse.js'
import { fmtMs } from '../output.js'
import type { RestoreInfo } from '../../proto/messages.js'
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
      else console.log(`restored checkpoint #${r.checkpoint} (${r.changed} paths changed, ${fmtMs(r.ms)}); now on branch ${r.branch}${savedNote(r)}`)
    })
}

/** What the reply says about the unsaved changes: one checkpoint, or several when writes landed during the restore. */
function savedNote (r: RestoreInfo): string {
  const all = r.savedAll ?? (r.saved === null ? [] : [r.saved])
  if (all.length === 0) return ''
  if (all.length === 1) return `; the unsaved changes it replaced are checkpoint #${all[0]}`
  return `; the unsaved changes it replaced are checkpoint #${all[all.length - 1]} (with ${all.slice(0, -1).map(i => `#${i}`).join(', ')} before it: writes landed while the restore ran)`
}
