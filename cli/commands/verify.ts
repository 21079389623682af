/** The `verify` command: check (and with --repair rebuild) a stopped store. */
import path from 'node:path'
import { envReserve } from '../parse.js'
import { verifyStore, VerifyError, lossSummary, type VerifyReport } from '../../fs/maint/verify.js'
import { repairStore, RepairError } from '../../fs/maint/repair.js'
import { CliError } from '../errors.js'
import { locate, runningDaemon, workspaceOption, workspaceArgument, workspaceFrom } from '../locate.js'
import type { Command } from 'commander'

/** Adds `verify` to the program `p`. */
export function registerVerify (p: Command): void {
  p.command('verify').addArgument(workspaceArgument()).addOption(workspaceOption())
    .description('Check the store of a stopped workspace: every checkpoint\'s records, references and blocks (re-hashed). Exit 0 when clean, 1 when problems were found.')
    .option('--store <dir>', 'verify this store directory (default: the workspace\'s)')
    .option('--repair', 'rebuild what can be rebuilt (a damaged metadata database with LevelDB\'s repair; the block index from the records in the packs), then verify again and say what could not be rebuilt')
    .option('--json', 'print the report as JSON')
    .addHelpText('after', '\nThe daemon must not be running (verify reads the store alone): unmount first.\n\nExample:\n  rewindfs unmount -w ~/project && rewindfs verify -w ~/project\n  rewindfs verify --store /var/lib/rewindfs/stores/x --repair')
    .action(async (dir: string | undefined, opts: { workspace?: string, store?: string, json?: boolean, repair?: boolean }) => {
      const o = workspaceFrom(dir, opts)
      const loc = o.store !== undefined ? null : locate(o)
      const store = loc ? loc.store : path.resolve(o.store!)
      const d = runningDaemon(store)
      if (d) {
        const ws = loc?.workspace ?? d.workspace
        const unmount = ws !== null ? `rewindfs unmount -w ${ws}` : `rewindfs unmount (in the workspace whose store is ${store})`
        throw new CliError(`the daemon for this workspace is running (pid ${d.pid}) and holds the store; verify reads the store alone: ${unmount}, then rewindfs verify${o.store !== undefined ? ` --store ${store}` : ''}${o.repair ? ' --repair' : ''}`)
      }
      let r: VerifyReport
      if (o.repair) {
        let rep
        try { rep = await repairStore(store, { reserve: envReserve() }) } catch (e) {
          if (e instanceof RepairError) throw new CliError(e.message)
          throw e
        }
        if (o.json) { console.log(JSON.stringify(rep)); if (!rep.after.ok) process.exitCode = 1; return }
        if (rep.before) console.log(`before repair: ${rep.before.ok ? 'clean' : `${rep.before.problems.length} problem${rep.before.problems.length === 1 ? '' : 's'}`}`)
        for (const a of rep.actions.slice(0, 50)) console.log(`repaired: ${a}`)
        if (rep.actions.length > 50) console.log(`repaired: ... and ${rep.actions.length - 50} more (--json lists all)`)
        if (rep.actions.length === 0) console.log('nothing to repair')
        if (!rep.after.ok) console.log('could not be repaired (these need a backup of the store, or the checkpoints they name are lost):')
        r = rep.after
      } else {
        try { r = await verifyStore(store) } catch (e) {
          if (e instanceof VerifyError) throw new CliError(e.message)
          throw e
        }
      }
      if (o.json) console.log(JSON.stringify(r))
      else {
        for (const pr of r.problems) console.log(`${pr.code}: ${pr.message}`)
        const lost = lossSummary(r, o.repair === true)
        if (lost) console.log(`LOST: ${lost}`)
        const c = r.counts
        console.log(`${r.ok ? 'clean' : `${r.problems.length} problem${r.problems.length === 1 ? '' : 's'}`}: ${c.checkpoints} checkpoints, ${c.tables} inode tables, ${c.records} records, ${c.frozen} frozen lower paths, ${c.blocks} blocks (${c.bytes} bytes), ${c.ledgerEntries} effect ledger entries checked in ${r.store}`)
      }
      if (!r.ok) process.exitCode = 1
    })
}
