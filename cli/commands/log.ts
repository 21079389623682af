/** The `log` command: list checkpoints, newest first (from the store when the daemon is stopped). */
import { parseCount } from '../parse.js'
import { logStopped } from '../../daemon/offline.js'
import { printCheckpoint, RECORDED_NOTE } from '../output.js'
import { withClient, storeOf, offline, workspaceOption } from '../locate.js'
import type { Command } from 'commander'

/** Adds `log` to the program `p`. */
export function registerLog (p: Command): void {
  p.command('log').addOption(workspaceOption())
    .description('List checkpoints, newest first; * marks the head (the checkpoint the workspace\'s current state started from).')
    .option('--branch <name>', 'only this branch')
    .option('-n, --limit <n>', 'at most n checkpoints', v => parseCount(v, 1), 100)
    .option('--json', 'print JSON')
    .addHelpText('after', '\nWorks on a stopped workspace too (it reads the store, as gc and verify do).\n\nExample:\n  rewindfs log -n 10')
    .option('--store <dir>', 'a store directory (default: the workspace\'s); read directly when its daemon is not running')
    .action(async (o: { workspace?: string, store?: string, branch?: string, limit: number, json?: boolean }) => {
      const { store, daemon } = storeOf(o)
      const [list, total, head, branch] = daemon
        ? await withClient({ workspace: daemon }, async c => { const s = await c.status(); return [await c.log({ branch: o.branch, limit: o.limit }), s.checkpoints, s.head, s.branch] as const })
        : await offline(async () => { const r = await logStopped(store, { branch: o.branch, limit: o.limit }); return [r.list, r.total, r.head, r.branch] as const })
      if (o.json) console.log(JSON.stringify(list))
      else {
        const width = Math.max(0, ...list.map(c => String(c.id).length))
        console.log(`on branch ${branch}, at ${head === null ? 'no checkpoint yet' : `#${head} (*)`}${daemon ? '' : ' (not mounted: the next mount goes on from there)'}; "recorded": ${RECORDED_NOTE}`)
        for (const c of list) printCheckpoint(c, width, c.id === head)
        if (o.branch === undefined && list.length < total) console.log(`(showing ${list.length} of ${total} checkpoints; -n ${total} shows all)`)
      }
    })
}
