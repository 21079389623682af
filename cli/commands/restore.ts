/** The `restore ID [-- PATH...]` command: make the workspace (or only some paths) exactly checkpoint ID again. */
import { parseId } from '../parse.js'
import { fmtMs, showPath } from '../output.js'
import type { RestoreInfo } from '../../proto/messages.js'
import { withClient, workspaceOption, locate } from '../locate.js'
import { CHANGE_LETTER, toWorkspacePath } from '../workspace-path.js'
import { CliError } from '../errors.js'
import type { Command } from 'commander'

/** Adds `restore` to the program `p`. */
export function registerRestore (p: Command): void {
  p.command('restore').addOption(workspaceOption()).argument('<id>', 'checkpoint id').argument('[paths...]', 'only these files or directories (after --)')
    .description('Make the workspace exactly checkpoint ID again (unsaved changes are checkpointed first). With paths: only those files or subtrees go back (a path absent at ID is removed), on the current branch, as a new checkpoint.')
    .option('--dry-run', 'list what would change, change nothing')
    .option('--json', 'print JSON')
    .addHelpText('after', '\nEach changed path is printed as diff prints it (A added, D deleted, M content, m attributes, T type) when paths or --dry-run are given.\n\nExamples:\n  rewindfs restore 3\n  rewindfs restore 3 -- src/index.js tests/   # only these; everything else stays\n  rewindfs restore 3 --dry-run -- src         # what that would change')
    .action(async (id: string, paths: string[], o: { workspace?: string, json?: boolean, dryRun?: boolean }) => {
      const cp = parseId(id)
      let wsPaths: string[] | undefined
      if (paths.length > 0) {
        const { workspace } = locate(o)
        wsPaths = paths.map(x => toWorkspacePath(workspace, x))
        if (wsPaths.includes('')) throw new CliError('the workspace root cannot be restored selectively: leave the paths out (rewindfs restore ID) to restore everything')
      }
      const [r, before] = await withClient(o, async c => {
        // a full restore always starts a new branch, except of the head with nothing unsaved (nothing to do): told by the branch
        const before = wsPaths === undefined && o.dryRun !== true ? (await c.status()).branch : null
        return [await c.restore({ id: cp, paths: wsPaths, dryRun: o.dryRun === true ? true : undefined }), before] as const
      })
      if (o.json) { console.log(JSON.stringify(r)); return }
      for (const e of r.changes ?? []) console.log(`${CHANGE_LETTER[e.change]} ${showPath(e.path)}`)
      if (r.dryRun === true) console.log(`dry run: ${r.changed} path${r.changed === 1 ? '' : 's'} would change; nothing was changed`)
      else if (wsPaths) {
        console.log(r.result === null || r.result === undefined
          ? `nothing to restore: ${r.paths!.join(', ')} already as at checkpoint #${r.checkpoint}`
          : `restored ${r.paths!.join(', ')} from checkpoint #${r.checkpoint} (${r.changed} paths changed, ${fmtMs(r.ms)}) as checkpoint #${r.result} on branch ${r.branch}${r.saved !== null ? `; the unsaved changes were first saved as checkpoint #${r.saved} (rewindfs restore ${r.saved} undoes this)` : ''}`)
      } else if (r.branch === before) console.log(`nothing to restore: the workspace already is checkpoint #${r.checkpoint} (the head, nothing unsaved); still on branch ${r.branch}`)
      else console.log(`restored checkpoint #${r.checkpoint} (${r.changed} paths changed, ${fmtMs(r.ms)}); now on branch ${r.branch}${savedNote(r)}`)
      const open = openNote(r)
      if (open !== '') console.log(open)
    })
}

/**
 * What the reply says of files left open across the restore (oldIncarnations, ll layer): processes that
 * hold them keep the content they had, and what they write through those descriptors is not kept.
 */
export function openNote (r: RestoreInfo): string {
  const o = r.oldIncarnations
  if (o === undefined || o.files === 0) return ''
  return `note: ${o.files} changed file${o.files === 1 ? '' : 's'} ${o.files === 1 ? 'was' : 'were'} open (${o.handles} descriptor${o.handles === 1 ? '' : 's'}): ` +
    'the processes holding them keep reading the content from before the restore, and what they write through those descriptors is not kept; reopen the files to see the restored content'
}

/** What the reply says about the unsaved changes: one checkpoint, or several when writes landed during the restore. */
function savedNote (r: RestoreInfo): string {
  const all = r.savedAll ?? (r.saved === null ? [] : [r.saved])
  if (all.length === 0) return ''
  if (all.length === 1) return `; the unsaved changes it replaced are checkpoint #${all[0]}`
  return `; the unsaved changes it replaced are checkpoint #${all[all.length - 1]} (with ${all.slice(0, -1).map(i => `#${i}`).join(', ')} before it: writes landed while the restore ran)`
}
