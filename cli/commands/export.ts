/** The `export ID DIR` command: a checkpoint written as plain files. */
import path from 'node:path'
import { parseId } from '../parse.js'
import { withClient, workspaceOption } from '../locate.js'
import type { Command } from 'commander'

/** Adds `export` to the program `p`. */
export function registerExport (p: Command): void {
  p.command('export').addOption(workspaceOption()).argument('<id>', 'checkpoint id').argument('<dir>', 'destination (new or empty, outside the workspace)')
    .description('Write a checkpoint as plain files into DIR.')
    .addHelpText('after', '\nExample:\n  rewindfs export 3 /tmp/at-3')
    .action(async (id: string, dir: string, o: { workspace?: string }) => {
      const n = parseId(id)
      const r = await withClient(o, async c => await c.export({ id: n, dir: path.resolve(dir) }))
      console.log(`exported checkpoint #${n} to ${path.resolve(dir)} (${r.files} paths, ${r.bytes} bytes)`)
    })
}
