/** The `log` command: list checkpoints, newest first (from the store when the daemon is stopped). */
import { parseCount } from '../parse.js'
import { logStopped } from '../../daemon/offline.js'
import { printCheckpoint } from '../output.js'
import { withClient, storeOf, offline, workspaceOption } from '../locate.js'
import type { Command } from 'commander'

/** Adds `log` to the program `p`. */
export function registerLog (p: Command): void {
  p.command('log').addOption(workspaceOption())
    .description('List checkpoints, newest first.')
    .option('--branch <name>', 'only this branch')
    .option('-n, --limit <n>', 'at most n checkpoints', v => parseCount(v, 1), 100)
    .option('--json', 'print JSON')
    .addHelpText('after', '\nWorks on a stopped workspace too (it reads the store, as gc and verify do).\n\nExample:\n  rewindfs log -n 10')
    .option('--store <dir>', 'a store directory (default: the workspace\'s); read directly when its daemon is not running')
    .action(async (o: { workspace?: string, store?: string, branch?: string, limit: number, json?: boolean }) => {
      const { store, daemon } = storeOf(o)
      const [list, total] = daemon
        ? await withClient({ workspace: daemon }, async c => [await c.log({ branch: o.branch, limit: o.limit }), (await c.status()).checkpoints] as const)
        : await offline(async () => { const r = await logStopped(store, { branch: o.branch, limit: o.limit }); return [r.list, r.total] as const })
      if (o.json) console.log(JSON.stringify(list))
      else {
        const width = Math.max(0, ...list.map(c => String(c.id).length))
        for (const c of list) printCheckpoint(c, width)
        if (o.branch === undefined && list.length < total) console.log(`(showing ${list.length} of ${total} checkpoints; -n ${total} shows all)`)
      }
    })
}
