/** The `unmount` command: checkpoint, write the final state back (or --discard) and stop the daemon. */
import fs from 'node:fs'
import path from 'node:path'
import { spawn } from 'node:child_process'
import { mountState, mountIdOf } from '../../daemon/mounts.js'
import { mountUsers, busyMessage, leftInsideMessage } from '../users.js'
import { UNMOUNT_FILE, type UnmountOutcome } from '../../daemon/daemon.js'
import { fullDiskNote } from '../../store/diskfull.js'
import { CONNECTION_FILE } from '../../proto/messages.js'
import { CliError } from '../errors.js'
import { locate, withClient, alive, workspaceOption, workspaceArgument, workspaceFrom } from '../locate.js'
import { logTail, sizeOf } from '../daemon-start.js'
import type { Command } from 'commander'

/** Adds `unmount` to the program `p`. */
export function registerUnmount (p: Command): void {
  p.command('unmount').addArgument(workspaceArgument()).addOption(workspaceOption())
    .description('Unmount the workspace DIR (default: the one containing the current directory). DIR keeps the final state (checkpointed first), or its original content with --discard.')
    .option('--discard', 'leave the directory as it was before mount; changes since the last checkpoint are dropped, every checkpoint is kept')
    .option('--lazy', 'detach even while processes use the workspace (they then get "Transport endpoint is not connected")')
    .addHelpText('after', '\nWhile a process has its working directory or an open file in the workspace, unmount refuses and names it\n(as umount does); cd out or stop it, or detach anyway with --lazy.\n\nExample:\n  rewindfs unmount ~/project')
    .action(async (dir: string | undefined, opts: { workspace?: string, discard?: boolean, lazy?: boolean }) => {
      const o = workspaceFrom(dir, opts)
      const { workspace, store } = locate(o)
      let info: { pid: number }
      try { info = JSON.parse(fs.readFileSync(path.join(store, CONNECTION_FILE), 'utf8')) } catch {
        if (mountState(workspace) === 'stale') {
          await new Promise(resolve => spawn('fusermount', ['-uz', workspace]).on('exit', resolve))
          console.log(`cleared the dead mount on ${workspace}; run rewindfs mount ${workspace} to resume from its last checkpoint`)
          return
        }
        throw new CliError(`${workspace} is not mounted`)
      }
      // as umount(8): refuse while processes use it (found through /proc's links, never by stat'ing inside);
      // with --lazy, name them once detached
      const users = mountUsers(workspace, mountIdOf(workspace), [process.pid, info.pid])
      for (const u of users) if (u.pid === process.ppid) u.command += ', the shell this command runs from'
      if (o.lazy !== true && users.length > 0) throw new CliError(busyMessage(workspace, users))
      const outcomeFile = path.join(store, UNMOUNT_FILE)
      const logFile = path.join(store, 'daemon.log')
      const logStart = sizeOf(logFile)
      fs.rmSync(outcomeFile, { force: true })
      // E_NO_SPACE here: the final checkpoint could not be written, the workspace stays mounted
      await withClient(o, async c => await c.unmount({ discard: o.discard === true }, { timeoutMs: 3600000 }))
      const deadline = Date.now() + 600000
      let outcome: UnmountOutcome | null = null
      while (Date.now() < deadline && alive(info.pid)) {
        await new Promise(resolve => setTimeout(resolve, 20))
        try { outcome = JSON.parse(fs.readFileSync(outcomeFile, 'utf8')) } catch {}
        if (outcome?.mounted === true) break
      }
      try { outcome = JSON.parse(fs.readFileSync(outcomeFile, 'utf8')) } catch {}
      if (!outcome) {
        if (alive(info.pid)) throw new CliError(`the daemon (pid ${info.pid}) is still unmounting ${workspace} after 10 minutes (a large write-back?); it goes on in the background: check with rewindfs status, or its log ${logFile}`)
        const tail = logTail(logFile, logStart)
        const full = fullDiskNote(store, `run rewindfs mount ${workspace} (it resumes from the store) and rewindfs unmount -w ${workspace} again`, tail)
        const said = tail ? `\nits last log lines:\n${tail}` : `\n(nothing in its log ${logFile})`
        if (full) throw new CliError(`the daemon (pid ${info.pid}) exited before it finished unmounting ${workspace}: ${full}${said}`)
        throw new CliError(`the daemon (pid ${info.pid}) exited before it finished unmounting ${workspace} (was it killed?): the directory may not hold the final state yet. Nothing is lost: rewindfs mount ${workspace} resumes from the store (do that before using the directory: until then checkpoints of this session still read it), and rewindfs unmount then finishes the job${said}`)
      }
      if (outcome.mounted === true) {
        throw new CliError(`the unmount of ${workspace} failed, it stays mounted and the daemon (pid ${info.pid}) keeps serving it: ${outcome.errors.join('; ')}. Nothing is lost: fix that, then rewindfs unmount again`)
      }
      if (outcome && !outcome.ok) {
        throw new CliError(`unmounted ${workspace}, but writing the final state back failed for ${outcome.errors.length} paths:\n  ${outcome.errors.slice(0, 20).join('\n  ')}${outcome.errors.length > 20 ? `\n  ... and ${outcome.errors.length - 20} more` : ''}\nNothing is lost: the store keeps the final state as checkpoint #${outcome.checkpoint}, and rewindfs mount ${workspace} resumes from it.`)
      }
      for (const w of outcome?.warnings ?? []) console.error(`rewindfs: warning: ${w}`)
      if (users.length > 0) console.error(`rewindfs: warning: ${leftInsideMessage(workspace, users)}`)
      console.log(`unmounted ${workspace}${o.discard ? ' (discarded: the directory holds its original content; changes since the last checkpoint were dropped, every checkpoint is kept)' : ''}`)
    })
}
