/** The `status` command: workspace, branch, head checkpoint, unsaved bytes. */
import { withClient, workspaceOption, workspaceArgument, workspaceFrom } from '../locate.js'
import { RECORDED_NOTE } from '../output.js'
import type { Command } from 'commander'

/** Adds `status` to the program `p`. */
export function registerStatus (p: Command): void {
  p.command('status').addArgument(workspaceArgument()).addOption(workspaceOption())
    .description('Show the workspace, branch, head checkpoint and unsaved bytes.')
    .option('--json', 'print JSON')
    .addHelpText('after', '\nExample:\n  rewindfs status')
    .action(async (dir: string | undefined, opts: { workspace?: string, json?: boolean }) => {
      const o = workspaceFrom(dir, opts)
      // unsaved paths as `diff <head>` counts them, without the root line (record counts would include directories listed for the first time)
      const [s, changed, requests] = await withClient(o, async c => {
        const st = await c.status()
        return [st, o.json || st.head === null ? null : (await c.diff({ a: st.head })).filter(e => e.path !== '/').length, Object.values(st.requests ?? {}).reduce((a, b) => a + b, 0)] as const
      })
      if (o.json) { console.log(JSON.stringify(s)); return }
      console.log(`workspace  ${s.workspace}\nstore      ${s.store}\nbranch     ${s.branch}\nhead       ${s.head === null ? '(none)' : '#' + s.head}\ninodes     ${s.inodes} recorded now (${RECORDED_NOTE})\nunsaved    ${changed === null ? '-' : `${changed} paths changed`} since the head (${s.dirtyInodes} inodes recorded or changed, ${s.dirtyBytes} bytes written)\ndaemon     pid ${s.pid}, protocol ${s.protocol}, ${requests} FUSE requests served`)
    })
}
