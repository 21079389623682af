/**
 * `rewindfs exec` for commands that act outside the workspace (issue 15
 * item 4): a command line matching the store's external-command pattern
 * list (effects/patterns.ts, `<store>/config/external-commands.json`) is
 * recorded in the effect ledger through the daemon before it runs, and is
 * not run when the recovery gate refuses it.
 *
 * - tool `exec: <pattern name> (<class>)`, registered with the pattern's class;
 * - target: the command line; identity derived from {method "exec", body
 *   {argv, cwd}} (cwd relative to the workspace when inside it), so the same
 *   command in the same directory is the same effect;
 * - outcome: exit status 0 is `confirmed`; a command that could not start
 *   (not found, not executable) is `failed` (it did nothing); any other exit
 *   status or a signal is `unknown` (a command can fail after it acted), so
 *   the gate refuses it again until it is reconciled
 *   (`rewindfs effects reconcile`) or a person overrides it.
 *
 * Exit status: the command's own, or EXIT_REFUSED (77) when it was not run
 * because the gate refused it, the pattern file is malformed, or the effect
 * could not be recorded (fail closed).
 */
import os from 'node:os'
import path from 'node:path'
import { spawn } from 'node:child_process'
import type { RewindClient } from '../client/client.js'
import { RewindError } from '../client/errors.js'
import { loadExternalPatterns, matchExternalCommand, type ExternalCommandPattern } from '../effects/patterns.js'
import type { GateInfo } from '../proto/effects.js'

/** Exit status of `rewindfs exec` when it did not run the command: the gate refused it, or it could not be recorded (77, EX_NOPERM of sysexits.h). */
export const EXIT_REFUSED = 77

/** ms an exec'd external command may run before its occurrence is unknown (1 day, the ledger's largest). */
const EXEC_EFFECT_TIMEOUT_MS = 24 * 60 * 60 * 1000

/** What running a command gave: its exit status or signal, or why it could not start. */
export interface CommandEnd { code: number, signal: string | null, spawnError: string | null }

/** Run `cmd` with inherited stdio; resolves when it ends (127 when it cannot start, 128 + signal number when killed). */
export async function runCommand (cmd: string[]): Promise<CommandEnd> {
  const child = spawn(cmd[0], cmd.slice(1), { stdio: 'inherit' })
  return await new Promise<CommandEnd>((resolve) => {
    child.on('error', (e: any) => { console.error(`rewindfs: cannot run ${cmd[0]}: ${e.code === 'ENOENT' ? 'command not found' : e.message}`); resolve({ code: 127, signal: null, spawnError: String(e.code ?? e.message) }) })
    child.on('exit', (c, sig) => resolve({ code: c ?? (sig ? 128 + (os.constants.signals[sig] ?? 0) : 1), signal: sig, spawnError: null }))
  })
}

/**
 * The pattern `cmd` matches in the store's list, or null. Throws
 * PatternFileError when the store's pattern file is malformed (the caller
 * refuses the command: fail closed).
 */
export function externalPattern (store: string, cmd: string[]): ExternalCommandPattern | null {
  return matchExternalCommand(cmd, loadExternalPatterns(store))
}

/** A refusal: printed, and the exit status to end with. */
function refused (message: string): number {
  process.stderr.write(`rewindfs: not run: ${message}\n`)
  return EXIT_REFUSED
}

/**
 * Begin the effect of `cmd` (matching `pattern`) through `client`: the
 * occurrence id, or the exit status to end with when the gate refused it or
 * the ledger could not record it (the command is then not run; the reason
 * is printed).
 */
export async function beginExec (client: RewindClient, cmd: string[], pattern: ExternalCommandPattern, workspace: string): Promise<{ occurrence: number } | { exit: number }> {
  const tool = `exec: ${pattern.name} (${pattern.class})`
  const cwd = path.relative(workspace, process.cwd())
  const at = cwd.startsWith('..') || path.isAbsolute(cwd) ? process.cwd() : (cwd === '' ? '.' : cwd)
  try {
    await client.effectRegister({ tool, class: pattern.class, description: pattern.description.slice(0, 2000) })
    const b = await client.effectBegin({ tool, target: cmd.join(' ').slice(0, 4096), request: { method: 'exec', body: { argv: cmd, cwd: at } }, timeoutMs: EXEC_EFFECT_TIMEOUT_MS })
    await client.effectSent({ occurrence: b.occurrence, evidence: { pid: process.pid } })
    process.stderr.write(`rewindfs: external effect #${b.occurrence} (${pattern.name}, ${pattern.class}) recorded before running ${cmd[0]}\n`)
    return { occurrence: b.occurrence }
  } catch (e) {
    if (e instanceof RewindError) {
      const gate = (e.details as { gate?: GateInfo } | undefined)?.gate
      if (gate !== undefined) return { exit: refused(`the recovery gate refused this ${pattern.name} command [${e.code}]: ${gate.message}${gate.occurrence !== null ? ` (rewindfs effects lists #${gate.occurrence}; rewindfs effects reconcile ${gate.occurrence} --verdict absent|present|wrong records what the target shows)` : ''}`) }
      return { exit: refused(`the ${pattern.name} command could not be recorded in the effect ledger, so it was not run [${e.code}]: ${e.message}`) }
    }
    return { exit: refused(`the ${pattern.name} command could not be recorded in the effect ledger, so it was not run: ${(e as Error).message}`) }
  }
}

/** Record how the command ended (module comment: which end is which status). Returns the status recorded, or null when it could not be (printed). */
export async function completeExec (client: RewindClient, occurrence: number, end: CommandEnd, name: string): Promise<string | null> {
  const status = end.spawnError !== null ? 'failed' : end.code === 0 && end.signal === null ? 'confirmed' : 'unknown'
  const evidence = { exitStatus: end.spawnError !== null ? null : end.code, signal: end.signal, spawnError: end.spawnError }
  try {
    await client.effectComplete({ occurrence, status, evidence })
  } catch (e) {
    process.stderr.write(`rewindfs: warning: the outcome of external effect #${occurrence} could not be recorded (${(e as Error).message}); the daemon makes it unknown, and the gate refuses it again until it is reconciled\n`)
    return null
  }
  if (status === 'unknown') process.stderr.write(`rewindfs: external effect #${occurrence} (${name}) ended with ${end.signal !== null ? `signal ${end.signal}` : `exit status ${end.code}`}: its outcome is unknown, and the gate refuses it again until it is reconciled (rewindfs effects reconcile ${occurrence} --verdict absent|present|wrong)\n`)
  return status
}
