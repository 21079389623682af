/**
 * The workspace a CLI command acts on, and the CLI's one-line error. Shared
 * by the commands in cli/commands/ (cli/main.ts still has its own copy of
 * both until it is split into one file per command: then it imports these).
 */
import fs from 'node:fs'
import path from 'node:path'
import { findWorkspace, registered } from '../daemon/paths.js'

/** An error the CLI reports as one line and exit status 1. */
export class CliError extends Error {}

/**
 * The workspace a command acts on: `-w DIR` (which must have been mounted
 * once), else the registered workspace containing the current directory.
 * Returns its absolute path and its store directory. Throws CliError saying
 * what to do when there is none.
 */
export function locate (opts: { workspace?: string }): { workspace: string, store: string } {
  if (opts.workspace) {
    const ws = path.resolve(opts.workspace)
    const store = registered(ws)
    if (!store) {
      let exists = true
      try { fs.statSync(ws) } catch (e: any) { exists = e.code !== 'ENOENT' }
      throw new CliError(exists ? `${ws} has never been mounted by rewindfs: run rewindfs mount ${ws}` : `${ws} does not exist`)
    }
    return { workspace: ws, store }
  }
  const found = findWorkspace(process.cwd())
  if (!found) throw new CliError('not inside a rewindfs workspace: cd into a mounted workspace or give -w DIR')
  return found
}
