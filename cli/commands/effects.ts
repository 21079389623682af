/**
 * The `effects` commands (issue 15): the store's effect ledger as a person
 * sees and settles it. They open the ledger file itself (store/effect-chain.ts,
 * effects/ledger.ts; its file lock orders them with a running daemon), so
 * they work on a running and on a stopped workspace alike.
 *
 * - `rewindfs effects`: list occurrences (filters: run, branch, status, target);
 * - `rewindfs effects reconcile N --verdict absent|present|wrong`: record what
 *   an authoritative re-read of the target showed;
 * - `rewindfs effects override N --reason TEXT`: a person's override of the
 *   recovery gate, recorded with the OS user (and the sudo user) and the
 *   reason; the protocol has no override, so a client holding the token
 *   cannot do this;
 * - `rewindfs effects patterns`: the external-command patterns in force.
 */
import os from 'node:os'
import { Ledger } from '../../effects/ledger.js'
import { loadExternalPatterns } from '../../effects/patterns.js'
import { EFFECT_STATUSES, RECONCILE_VERDICTS, type EffectInfo, type EffectStatus, type ReconcileVerdict } from '../../proto/effects.js'
import { parseMessage, stringifyMessage } from '../../proto/json.js'
import { storeOf, workspaceOption } from '../locate.js'
import { parseCount, parseId } from '../parse.js'
import { fmtTime } from '../output.js'
import { CliError } from '../errors.js'
import type { Command } from 'commander'

// the subcommands read -w and --store given before or after their name (optsWithGlobals)

/** The person running the CLI: the OS user name and uid, and the user who ran sudo (SUDO_USER) when there is one. */
export function osUser (): { user: string, uid: number } {
  const u = os.userInfo()
  const sudo = process.env.SUDO_USER
  return { user: sudo !== undefined && sudo !== '' && sudo !== u.username ? `${u.username} (sudo by ${sudo})` : u.username, uid: u.uid }
}

async function withLedger<T> (o: { workspace?: string, store?: string }, fn: (l: Ledger) => Promise<T>): Promise<T> {
  const { store } = storeOf(o)
  const l = await Ledger.open(store)
  try { return await fn(l) } finally { await l.close() }
}

/** One occurrence as one line. */
function line (e: EffectInfo): string {
  const settled = e.reconcile !== null ? ` reconciled ${e.reconcile.verdict}` : ''
  const over = e.override !== null ? ` overridden by ${e.override.user}: ${JSON.stringify(e.override.reason)}` : ''
  const comp = e.compensates !== null ? ` compensates #${e.compensates}` : ''
  return `#${e.occurrence}  ${e.status.padEnd(9)} ${e.class.padEnd(12)} ${fmtTime(e.time)}  ${e.tool} -> ${e.target}  (branch ${e.actor.branch}, after #${e.actor.checkpoint ?? '-'}${e.actor.run !== null ? `, run ${e.actor.run}` : ''})${comp}${settled}${over}`
}

function oneOf<T extends string> (name: string, v: string, allowed: readonly T[]): T {
  if (!(allowed as readonly string[]).includes(v)) throw new CliError(`${name} must be one of ${allowed.join(', ')}, got ${JSON.stringify(v)}`)
  return v as T
}

/** Adds `effects` (list) and its subcommands to the program `p`. */
export function registerEffects (p: Command): void {
  const storeOpt = ['--store <dir>', 'a store directory (default: the workspace\'s)'] as const
  const e = p.command('effects').addOption(workspaceOption()).option(...storeOpt)
    .description('List the external effects recorded in the store\'s effect ledger (newest first), with their status; subcommands settle them.')
    .option('--run <name>', 'only this run')
    .option('--branch <name>', 'only effects begun on this branch')
    .option('--status <status>', `only this status (${EFFECT_STATUSES.join(', ')})`)
    .option('--target <target>', 'only this target')
    .option('-n, --limit <n>', 'at most N', v => parseCount(v, 1))
    .option('--json', 'print JSON (one array)')
    .addHelpText('after', '\nA rewind undoes none of these. An unknown outcome fails closed: the recovery gate refuses the same effect again until it is reconciled or overridden.\n\nExamples:\n  rewindfs effects --status unknown\n  rewindfs effects reconcile 7 --verdict absent --evidence \'{"GET /tickets": 404}\'\n  rewindfs effects override 7 --reason "checked by hand: the ticket was never created"')
    .action(async (o: { workspace?: string, store?: string, run?: string, branch?: string, status?: string, target?: string, limit?: number, json?: boolean }) => {
      const status = o.status === undefined ? undefined : oneOf<EffectStatus>('--status', o.status, EFFECT_STATUSES)
      const list = await withLedger(o, async l => await l.list({ run: o.run, branch: o.branch, status, target: o.target, limit: o.limit }))
      if (o.json === true) { console.log(stringifyMessage(list)); return }
      if (list.length === 0) { console.log('no external effects recorded'); return }
      for (const x of list) console.log(line(x))
    })

  e.command('reconcile').addOption(workspaceOption()).option(...storeOpt).argument('<occurrence>', 'the occurrence id (rewindfs effects lists them)')
    .description('Record what an authoritative re-read of the target showed: absent (it did not happen), present (as intended) or wrong (present, but not as intended).')
    .requiredOption('--verdict <verdict>', RECONCILE_VERDICTS.join(' | '))
    .option('--evidence <json>', 'what the re-read showed, as JSON (default: who reconciled)')
    .addHelpText('after', '\nExample:\n  rewindfs effects reconcile 7 --verdict present --evidence \'{"ticket": 41}\'')
    .action(async (occ: string, _o: unknown, cmd: Command) => {
      const o = cmd.optsWithGlobals<{ workspace?: string, store?: string, verdict: string, evidence?: string }>()
      const occurrence = parseId(occ)
      const verdict = oneOf<ReconcileVerdict>('--verdict', o.verdict, RECONCILE_VERDICTS)
      let evidence: unknown = { by: 'rewindfs effects reconcile', user: osUser().user }
      if (o.evidence !== undefined) {
        try { evidence = parseMessage(o.evidence) } catch (err) { throw new CliError(`--evidence is not JSON (${(err as Error).message}): quote it for the shell, e.g. --evidence '{"status": 404}'`) }
      }
      const r = await withLedger(o, async l => await l.reconcile({ occurrence, verdict, evidence }))
      console.log(line(r))
    })

  e.command('override').addOption(workspaceOption()).option(...storeOpt).argument('<occurrence>', 'the occurrence id (rewindfs effects lists them)')
    .description('Override the recovery gate for one occurrence: the same effect may happen again, as a new occurrence. A person\'s act: your OS user and the reason are recorded in the ledger.')
    .requiredOption('--reason <text>', 'why (recorded; required)')
    .addHelpText('after', '\nOnly this command overrides: the protocol has no override, so an agent holding the token cannot.\n\nExample:\n  rewindfs effects override 7 --reason "the payment provider shows no charge for order 1234"')
    .action(async (occ: string, _o: unknown, cmd: Command) => {
      const o = cmd.optsWithGlobals<{ workspace?: string, store?: string, reason: string }>()
      const occurrence = parseId(occ)
      if (o.reason.trim() === '') throw new CliError('--reason must say why (it is recorded with your user name)')
      const who = osUser()
      const r = await withLedger(o, async l => await l.override({ occurrence, reason: o.reason, user: who.user, uid: who.uid }))
      console.log(line(r))
    })

  e.command('patterns').addOption(workspaceOption()).option(...storeOpt)
    .description('The external-command patterns in force for the store (its config/external-commands.json, or the defaults): rewindfs exec records a matching command in the ledger.')
    .option('--json', 'print JSON')
    .action(async (_o: unknown, cmd: Command) => {
      const o = cmd.optsWithGlobals<{ workspace?: string, store?: string, json?: boolean }>()
      const { store } = storeOf(o)
      const pats = loadExternalPatterns(store)
      if (o.json === true) { console.log(JSON.stringify(pats)); return }
      for (const x of pats) console.log(`${x.name.padEnd(24)} ${x.class.padEnd(12)} ${x.description}`)
    })
}
