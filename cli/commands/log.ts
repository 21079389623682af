/** The `log` command: list checkpoints, newest first (from the store when the daemon is stopped). */
import { parseCount } from '../parse.js'
import { logStopped } from '../../daemon/offline.js'
import { fmtBytes, fmtTime, printCheckpoint, RECORDED_NOTE } from '../output.js'
import { withClient, storeOf, offline, workspaceOption } from '../locate.js'
import { CHANGE_LETTER, toWorkspacePath } from '../workspace-path.js'
import { CliError } from '../errors.js'
import type { Command } from 'commander'

/** Adds `log` to the program `p`. */
export function registerLog (p: Command): void {
  p.command('log').addOption(workspaceOption()).argument('[path]', 'only the checkpoints at which this path changed (a directory: anything below it)')
    .description('List checkpoints, newest first; * marks the head (the checkpoint the workspace\'s current state started from). With PATH: the checkpoints on the current lineage (--all: every branch) at which PATH\'s content, attributes or type changed, with sizes.')
    .option('--all', 'with PATH: every branch, not only the current lineage')
    .option('--branch <name>', 'only this branch')
    .option('-n, --limit <n>', 'at most n checkpoints', v => parseCount(v, 1), 100)
    .option('--json', 'print JSON')
    .addHelpText('after', '\nWorks on a stopped workspace too (it reads the store, as gc and verify do), except with PATH.\nWith PATH each line is: checkpoint, time, branch, change (A added, D deleted, M content, m attributes, T type; a directory\'s M counts the inodes below it that changed), size before -> after, label; a rename shows as D (-> new path) here and A (<- old path) there.\n\nExamples:\n  rewindfs log -n 10\n  rewindfs log src/index.js')
    .option('--store <dir>', 'a store directory (default: the workspace\'s); read directly when its daemon is not running')
    .action(async (path: string | undefined, o: { workspace?: string, store?: string, branch?: string, limit: number, json?: boolean, all?: boolean }) => {
      if (path !== undefined) { await logPath(path, o); return }
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

/** `log PATH`: the path's history through the daemon (it needs the workspace mounted). */
async function logPath (p: string, o: { workspace?: string, store?: string, limit: number, json?: boolean, all?: boolean }): Promise<void> {
  const { daemon } = storeOf(o)
  if (!daemon) throw new CliError('rewindfs log PATH needs the workspace mounted (it asks the daemon); rewindfs log without PATH works on a stopped workspace')
  const path = toWorkspacePath(daemon, p)
  const [h, known] = await withClient({ workspace: daemon }, async c => {
    const h = await c.history({ path, all: o.all === true ? true : undefined, limit: o.limit })
    // no entry at all: the path is in no checkpoint examined (each shows as added at the first that has it); is it in the workspace now?
    return [h, h.length > 0 || await c.stat({ path }) !== null] as const
  })
  if (!known) throw new CliError(`/${path}: no such path in any checkpoint ${o.all === true ? 'of any branch' : 'of the current lineage'} nor in the workspace now (check its spelling${o.all === true ? '' : '; --all looks at every branch'})`)
  if (o.json) { console.log(JSON.stringify(h)); return }
  if (h.length === 0) { console.log(`/${path}: no change at any checkpoint${o.all === true ? '' : ' on the current lineage (--all looks at every branch)'}`); return }
  const width = Math.max(...h.map(e => String(e.checkpoint).length))
  const size = (n: number | null): string => n === null ? '-' : fmtBytes(n)
  for (const e of h) {
    const what = e.below !== undefined ? `${e.below} below` : `${size(e.sizeBefore)} -> ${size(e.size)}`
    const rename = e.to !== undefined ? ` (-> ${e.to})` : e.from !== undefined ? ` (<- ${e.from})` : ''
    console.log(`${`#${e.checkpoint}`.padEnd(width + 1)}  ${fmtTime(e.time)}  ${e.branch.padEnd(6)} ${CHANGE_LETTER[e.change]} ${what}${rename}  ${e.label ?? ''}`)
  }
}
