/** The `pin ID` command: keep a checkpoint whatever gc's policy says (--unpin undoes it). */
import { parseId } from '../parse.js'
import { pinStopped } from '../../daemon/offline.js'
import { withClient, storeOf, offline, workspaceOption } from '../locate.js'
import type { Command } from 'commander'

/** Adds `pin` to the program `p`. */
export function registerPin (p: Command): void {
  p.command('pin').addOption(workspaceOption()).argument('<id>', 'checkpoint id')
    .description('Pin a checkpoint: garbage collection never removes it (--unpin undoes it).')
    .option('--unpin', 'remove the pin')
    .option('--store <dir>', 'a store directory (default: the workspace\'s); written directly when its daemon is not running')
    .addHelpText('after', '\nWorks on a stopped workspace too (it writes the pin into the store).\n\nExample:\n  rewindfs pin 12          # keep #12 whatever gc\'s policy says')
    .action(async (id: string, o: { workspace?: string, store?: string, unpin?: boolean }) => {
      const n = parseId(id)
      const { store, daemon } = storeOf(o)
      const c = daemon
        ? await withClient({ workspace: daemon }, async cl => await cl.pin({ id: n, pinned: o.unpin !== true }))
        : await offline(async () => await pinStopped(store, n, o.unpin !== true))
      console.log(`checkpoint #${c.id} ${c.pinned ? 'pinned' : 'unpinned'}`)
    })
}
