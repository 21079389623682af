/** The `exec -- CMD` command: run a command with a checkpoint before it. */
import os from 'node:os'
import { spawn } from 'node:child_process'
import { withClient, workspaceOption } from '../locate.js'
import type { Command } from 'commander'

/** Adds `exec` to the program `p`. */
export function registerExec (p: Command): void {
  p.command('exec').addOption(workspaceOption()).argument('<cmd...>', 'the command and its arguments (after --)')
    .description('Run a command (in the current directory), checkpointing the workspace first: wrap an agent\'s shell tool with it and every command gets a checkpoint before it runs.')
    .option('--checkpoint-each', 'mark a checkpoint before the command (the default; kept for scripts that say it)')
    .option('--no-checkpoint', 'run without marking')
    .addHelpText('after', '\nExample:\n  rewindfs exec --checkpoint-each -- npm test\n  (the checkpoint is labelled "before: npm test"; its segment metadata holds the command)')
    .action(async (cmd: string[], o: { workspace?: string, checkpoint?: boolean }) => {
      if (o.checkpoint !== false) {
        const label = `before: ${cmd.join(' ')}`.slice(0, 1000)
        const c = await withClient(o, async cl => await cl.mark({ label, meta: { exec: cmd, cwd: process.cwd() } }))
        process.stderr.write(`rewindfs: checkpoint #${c.id} before ${cmd[0]}\n`)
      }
      const child = spawn(cmd[0], cmd.slice(1), { stdio: 'inherit' })
      const code = await new Promise<number>((resolve) => {
        child.on('error', (e: any) => { console.error(`rewindfs: cannot run ${cmd[0]}: ${e.code === 'ENOENT' ? 'command not found' : e.message}`); resolve(127) })
        child.on('exit', (c, sig) => resolve(c ?? (sig ? 128 + (os.constants.signals[sig] ?? 0) : 1)))
      })
      process.exitCode = code
    })
}
