/** The `checkpoint` command: seal the current state as a checkpoint. */
import { fmtMs } from '../output.js'
import { withClient, workspaceOption } from '../locate.js'
import type { Command } from 'commander'

/** Adds `checkpoint` to the program `p`. */
export function registerCheckpoint (p: Command): void {
  p.command('checkpoint').addOption(workspaceOption())
    .description('Seal the current state as a checkpoint.')
    .option('-m, --message <label>', 'label of the checkpoint')
    .option('--json', 'print the checkpoint as JSON')
    .addHelpText('after', '\nExample:\n  rewindfs checkpoint -m "tests pass"')
    .action(async (o: { workspace?: string, message?: string, json?: boolean }) => {
      const c = await withClient(o, async cl => await cl.mark({ label: o.message }))
      if (o.json) console.log(JSON.stringify(c))
      else console.log(`checkpoint #${c.id} (${c.inodes} inode${c.inodes === 1 ? '' : 's'} recorded, ${c.dirtyBytes} bytes written since the last one, ${fmtMs(c.ms)})`)
    })
}
