/** The `gc` command: remove what the retention policy does not keep (daemon or stopped store). */
import path from 'node:path'
import { parseCount, parseDuration } from '../parse.js'
import { gcStore, GcError, DEFAULT_GC_POLICY } from '../../fs/maint/gc.js'
import type { GcReport } from '../../daemon/api.js'
import { printGcReport } from '../output.js'
import { CliError } from '../errors.js'
import { locate, withClient, runningDaemon, workspaceOption, workspaceArgument, workspaceFrom } from '../locate.js'
import type { Command } from 'commander'

/** Adds `gc` to the program `p`. */
export function registerGc (p: Command): void {
  p.command('gc').addArgument(workspaceArgument()).addOption(workspaceOption())
    .description('Remove the checkpoints the retention policy does not keep, and everything only they used; compact packs; print what went and the space returned. Works while the workspace is mounted (asks the daemon) and on a stopped store.')
    .option('--keep-last <n>', 'keep the newest N checkpoints (default 50)', v => parseCount(v))
    .option('--abandoned-after <duration>', 'a branch with no checkpoint newer than this is abandoned and its checkpoints go (e.g. 7d, 12h, 0 = every branch but the current one; default 7d)', v => parseDuration(v))
    .option('--run-idle <duration>', 'a run that marked nothing for this long is over: its checkpoints are no longer kept for it (default 1d)', v => parseDuration(v))
    .option('--dry-run', 'say what would be removed, remove nothing')
    .option('--store <dir>', 'a stopped store directory (default: the workspace\'s)')
    .option('--json', 'print the report as JSON')
    .addHelpText('after', '\nAlways kept: the head, every ancestor of the current branch\'s head and of live branches\' heads, pinned checkpoints (rewindfs pin), and checkpoints of runs still going.\n\nExample:\n  rewindfs gc --keep-last 20 --abandoned-after 2d')
    .action(async (dir: string | undefined, opts: { workspace?: string, keepLast?: number, abandonedAfter?: number, runIdle?: number, dryRun?: boolean, store?: string, json?: boolean }) => {
      const o = workspaceFrom(dir, opts)
      const policy = {
        keepLast: o.keepLast ?? DEFAULT_GC_POLICY.keepLast,
        abandonedAfterMs: o.abandonedAfter ?? DEFAULT_GC_POLICY.abandonedAfterMs,
        runIdleMs: o.runIdle ?? DEFAULT_GC_POLICY.runIdleMs,
        dryRun: o.dryRun === true
      }
      const loc = o.store !== undefined ? null : locate(o)
      const store = loc ? loc.store : path.resolve(o.store!)
      const d = runningDaemon(store)
      let r: GcReport
      if (d) {
        if (!loc) throw new CliError(`the daemon (pid ${d.pid}) holds the store ${store}: run rewindfs gc -w ${d.workspace ?? 'WORKSPACE'} to ask it`)
        r = await withClient(o, async c => await c.gc(policy, { timeoutMs: 3600000 }))
      } else {
        try { r = await gcStore(store, policy) } catch (e) {
          if (e instanceof GcError) throw new CliError(e.message)
          throw e
        }
      }
      if (o.json) { console.log(JSON.stringify(r)); return }
      printGcReport(r)
    })
}
