/** The `exec -- CMD` command: run a command with a checkpoint before it; an external command (cli/exec-effect.ts) is recorded in the effect ledger and refused when the recovery gate says so. */
import { locate, withClient, workspaceOption } from '../locate.js'
import { beginExec, completeExec, externalPattern, runCommand, EXIT_REFUSED } from '../exec-effect.js'
import type { ExternalCommandPattern } from '../../effects/patterns.js'
import type { Command } from 'commander'

/** Adds `exec` to the program `p`. */
export function registerExec (p: Command): void {
  p.command('exec').addOption(workspaceOption()).argument('<cmd...>', 'the command and its arguments (after --)')
    .description('Run a command (in the current directory), checkpointing the workspace first: wrap an agent\'s shell tool with it and every command gets a checkpoint before it runs. A command matching the store\'s external-command patterns (git push, curl -X POST, npm publish, ssh, ...) is recorded in the effect ledger and not run when the recovery gate refuses it.')
    .option('--checkpoint-each', 'mark a checkpoint before the command (the default; kept for scripts that say it)')
    .option('--no-checkpoint', 'run without marking')
    .addHelpText('after', `\nExit status: the command's; ${EXIT_REFUSED} when rewindfs did not run it (the recovery gate refused an external command, its pattern file is malformed, or the effect could not be recorded); the reason is on stderr.\nAn external command that exits non-zero or is killed has an unknown outcome: the gate refuses it again until rewindfs effects reconcile records what the target shows.\nThe patterns: rewindfs effects patterns (edit <store>/config/external-commands.json).\n\nExample:\n  rewindfs exec --checkpoint-each -- npm test\n  (the checkpoint is labelled "before: npm test"; its segment metadata holds the command)`)
    .action(async (cmd: string[], o: { workspace?: string, checkpoint?: boolean }) => {
      const { workspace, store } = locate(o)
      let ext: ExternalCommandPattern | null
      try { ext = externalPattern(store, cmd) } catch (e) {
        process.stderr.write(`rewindfs: not run: the external-command patterns cannot be read, so rewindfs cannot tell whether this command acts outside the workspace: ${(e as Error).message}\n`)
        process.exitCode = EXIT_REFUSED
        return
      }
      let occurrence: number | null = null
      if (o.checkpoint !== false || ext !== null) {
        const r = await withClient(o, async cl => {
          if (o.checkpoint !== false) {
            const c = await cl.mark({ label: `before: ${cmd.join(' ')}`.slice(0, 1000), meta: { exec: cmd, cwd: process.cwd() } })
            process.stderr.write(`rewindfs: checkpoint #${c.id} before ${cmd[0]}\n`)
          }
          return ext === null ? null : await beginExec(cl, cmd, ext, workspace)
        })
        if (r !== null && 'exit' in r) { process.exitCode = r.exit; return }
        occurrence = r?.occurrence ?? null
      }
      const end = await runCommand(cmd)
      if (occurrence !== null && ext !== null) {
        const name = ext.name
        await withClient(o, async cl => await completeExec(cl, occurrence!, end, name)).catch((e: Error) => {
          process.stderr.write(`rewindfs: warning: the outcome of external effect #${occurrence} could not be recorded (${e.message}); the daemon makes it unknown\n`)
        })
      }
      process.exitCode = end.code
    })
}
