/** The `exec -- CMD` command: run a command with a checkpoint before it; an external command (cli/exec-effect.ts) is recorded in the effect ledger and refused when the recovery gate says so. */
import { locate, withClient, workspaceOption } from '../locate.js'
import { beginExec, completeExec, externalPattern, runCommand, EXIT_REFUSED } from '../exec-effect.js'
import type { ExternalCommandPattern } from '../../effects/patterns.js'
import type { Command } from 'commander'
import type { RewindClient } from '../../client/client.js'

/**
 * Begins tool call "exec" for this process (the command starts as its child,
 * so it and everything it starts are in the call); null when the daemon
 * could not (an older daemon): then the changes are not attributed (a warning says so).
 */
async function beginCall (cl: RewindClient, cmd: string[]): Promise<number | null> {
  try {
    return (await cl.callBegin({ tool: 'exec', args: cmd, pid: process.pid })).call
  } catch (e) {
    process.stderr.write(`rewindfs: warning: the changes of ${cmd[0]} are not attributed to it (${(e as Error).message})\n`)
    return null
  }
}

/** Adds `exec` to the program `p`. */
export function registerExec (p: Command): void {
  p.command('exec').addOption(workspaceOption()).argument('<cmd...>', 'the command and its arguments (after --)')
    .description('Run a command (in the current directory), checkpointing the workspace first: wrap an agent\'s shell tool with it and every command gets a checkpoint before it runs. A command matching the store\'s external-command patterns (git push, curl -X POST, npm publish, ssh, ...) is recorded in the effect ledger and not run when the recovery gate refuses it.')
    .option('--checkpoint-each', 'mark a checkpoint before the command (the default; kept for scripts that say it)')
    .option('--no-checkpoint', 'run without marking')
    .option('--no-attribute', 'do not attribute the command\'s changes to it (by default the daemon puts it in a cgroup of its own and the next checkpoint lists what it changed)')
    .addHelpText('after', `\nExit status: the command's; ${EXIT_REFUSED} when rewindfs did not run it (the recovery gate refused an external command, its pattern file is malformed, or the effect could not be recorded); the reason is on stderr.\nAn external command that exits non-zero or is killed has an unknown outcome: the gate refuses it again until rewindfs effects reconcile records what the target shows.\nThe patterns: rewindfs effects patterns (edit <store>/config/external-commands.json).\n\nExample:\n  rewindfs exec --checkpoint-each -- npm test\n  (the checkpoint is labelled "before: npm test"; its segment metadata holds the command,\n   and the next checkpoint lists, as tool call "exec", the files npm test and the processes it started changed:\n   rewindfs blame PATH names it)`)
    .action(async (cmd: string[], o: { workspace?: string, checkpoint?: boolean, attribute?: boolean }) => {
      const { workspace, store } = locate(o)
      let ext: ExternalCommandPattern | null
      try { ext = externalPattern(store, cmd) } catch (e) {
        process.stderr.write(`rewindfs: not run: the external-command patterns cannot be read, so rewindfs cannot tell whether this command acts outside the workspace: ${(e as Error).message}\n`)
        process.exitCode = EXIT_REFUSED
        return
      }
      let occurrence: number | null = null
      // set inside the client callback below (an object: TypeScript does not follow assignments in callbacks)
      const begun: { call: number | null } = { call: null }
      const attribute = o.attribute !== false
      if (o.checkpoint !== false || ext !== null || attribute) {
        const r = await withClient(o, async cl => {
          if (o.checkpoint !== false) {
            const c = await cl.mark({ label: `before: ${cmd.join(' ')}`.slice(0, 1000), meta: { exec: cmd, cwd: process.cwd() } })
            process.stderr.write(`rewindfs: checkpoint #${c.id} before ${cmd[0]}\n`)
          }
          const gate = ext === null ? null : await beginExec(cl, cmd, ext, workspace)
          if (gate !== null && 'exit' in gate) return gate
          if (attribute) begun.call = await beginCall(cl, cmd)
          return gate
        }).catch((e: Error) => {
          // attribution alone is not worth refusing the command for
          if (o.checkpoint !== false || ext !== null) throw e
          process.stderr.write(`rewindfs: warning: the changes of ${cmd[0]} are not attributed to it (${e.message})\n`)
          return null
        })
        if (r !== null && 'exit' in r) { process.exitCode = r.exit; return }
        occurrence = r?.occurrence ?? null
      }
      const end = await runCommand(cmd)
      const call = begun.call
      if ((occurrence !== null && ext !== null) || call !== null) {
        const name = ext?.name ?? ''
        await withClient(o, async cl => {
          if (call !== null) await cl.callEnd({ call, exitStatus: end.code }).catch((e: Error) => { process.stderr.write(`rewindfs: warning: tool call ${call} could not be ended (${e.message}); the daemon ends it at unmount\n`) })
          if (occurrence !== null) await completeExec(cl, occurrence, end, name)
        }).catch((e: Error) => {
          process.stderr.write(`rewindfs: warning: ${occurrence !== null ? `the outcome of external effect #${occurrence} could not be recorded (${e.message}); the daemon makes it unknown` : `tool call ${call} could not be ended (${e.message})`}\n`)
        })
      }
      process.exitCode = end.code
    })
}
