#!/usr/bin/env node
/**
 * The rewindfs command line (commander): the program and its entry point.
 * Each command lives in its own file under cli/commands/ (one file per
 * command, exporting the function that adds it to the program). Every
 * command but `mount` and `daemon` is a client of the daemon's websocket
 * protocol; `gc`, `verify`, `log` and `pin` open the store themselves when
 * its daemon is not running.
 */
import fs from 'node:fs'
import { fileURLToPath } from 'node:url'
import { Command } from 'commander'
import { RewindError, ConnectionError, TimeoutError } from '../client/client.js'
import { CliError } from './errors.js'
import { registerMount } from './commands/mount.js'
import { registerDaemon } from './commands/daemon.js'
import { registerUnmount } from './commands/unmount.js'
import { registerCheckpoint } from './commands/checkpoint.js'
import { registerLog } from './commands/log.js'
import { registerDiff } from './commands/diff.js'
import { registerRestore } from './commands/restore.js'
import { registerShow } from './commands/show.js'
import { registerExport } from './commands/export.js'
import { registerExec } from './commands/exec.js'
import { registerStatus } from './commands/status.js'
import { registerPin } from './commands/pin.js'
import { registerGc } from './commands/gc.js'
import { registerVerify } from './commands/verify.js'
import { registerUndo } from './commands/undo.js'
import { registerBisect } from './commands/bisect.js'
import { registerBlame } from './commands/blame.js'
import { registerMcp } from './commands/mcp.js'
import { registerHooks } from './commands/hooks.js'
import { registerRewind } from './commands/rewind.js'

/** The whole program, every command added; parseAsync(argv) runs one. */
export function program (): Command {
  const p = new Command('rewindfs')
    .description('A versioned workspace with real undo: mount a directory, checkpoint it, restore it exactly.')
    .version('0.1.0')
    .showHelpAfterError('(rewindfs --help, or rewindfs COMMAND --help, lists the options)')
  registerMount(p)
  registerDaemon(p)
  registerUnmount(p)
  registerCheckpoint(p)
  registerLog(p)
  registerDiff(p)
  registerRestore(p)
  registerShow(p)
  registerExport(p)
  registerExec(p)
  registerStatus(p)
  registerPin(p)
  registerGc(p)
  registerVerify(p)
  registerUndo(p)
  registerBisect(p)
  registerBlame(p)
  registerMcp(p)
  registerHooks(p)
  registerRewind(p)
  return p
}

/** Runs the CLI; errors become one line on stderr and exit status 1. */
export async function main (argv: string[]): Promise<void> {
  // a current directory whose mount ended (ENOTCONN) or that was removed: work from / instead of crashing in uv_cwd
  try { process.cwd() } catch (e: any) {
    process.chdir('/')
    console.error(`rewindfs: the current directory is gone (${String(e?.code ?? e)}: its mount ended, or it was removed); working from / (cd to a directory that exists, or give -w DIR)`)
  }
  try {
    await program().parseAsync(argv)
  } catch (e: any) {
    if (e instanceof RewindError) console.error(`rewindfs: ${e.message} [${e.code}]`)
    else if (e instanceof CliError || e instanceof ConnectionError || e instanceof TimeoutError) console.error(`rewindfs: ${e.message}`)
    else console.error(`rewindfs: ${e?.message ?? e}`)
    process.exitCode = 1
  }
}

if (process.argv[1] && fs.realpathSync(process.argv[1]) === fileURLToPath(import.meta.url)) await main(process.argv)
