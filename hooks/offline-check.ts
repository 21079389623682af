/**
 * The hook's check when the daemon is down (started by hooks/rewindfs-hook.c
 * only then, with the payload on stdin):
 *
 *   node offline-check.js --store STORE --workspace WS --why REASON [--offline FILE]
 *
 * A shell command that matches the store's external-command list
 * (effects/patterns.ts) is refused: exit 2, the reason on stderr (the harness
 * shows it to the model). Any other command runs: exit 0 with a note on
 * stderr. The list is the store's; when this user cannot read the store
 * (a daemon run through sudo keeps it root's), the copy in the offline
 * record FILE (`R/<key>.offline`, proto/discovery.ts OfflineRecord). A list
 * that cannot be read or parsed refuses every command (fail closed).
 */
import fs from 'node:fs'
import { commandOf } from '../proto/hook.js'
import type { OfflineRecord } from '../proto/discovery.js'
import { loadExternalPatterns, matchExternalCommand, parsePatternFile, type ExternalCommandPattern } from '../effects/patterns.js'

/** The patterns of the store, else of the offline record `offline` (null: none); throws the store's error when neither can be read. */
function patternsFor (store: string, offline: string | null): ExternalCommandPattern[] {
  try { return loadExternalPatterns(store) } catch (e) {
    if (offline === null) throw e
    try {
      const rec = JSON.parse(fs.readFileSync(offline, 'utf8')) as OfflineRecord
      return parsePatternFile(rec.externalCommands, offline)
    } catch { throw e }
  }
}

/** The decision for one payload: exit status and the line for stderr. `offline`: the offline record's path, or null. */
export function offlineDecision (payload: unknown, store: string, workspace: string, why: string, offline: string | null = null): { code: 0 | 2, message: string } {
  const command = commandOf(payload)
  if (command === null) return { code: 0, message: `rewindfs: ${workspace}: ${why}, so this tool call runs without a checkpoint (run: rewindfs mount ${workspace})` }
  let hit
  try { hit = matchExternalCommand(command, patternsFor(store, offline)) } catch (e) {
    return { code: 2, message: `rewindfs: ${workspace}: ${why}, and the external-command list cannot be read (${(e as Error).message}): refusing the command until the daemon runs again (run: rewindfs mount ${workspace})` }
  }
  if (hit) return { code: 2, message: `rewindfs: refused: this command matches the external-effect pattern "${hit.name}" (${hit.description}), whose effects no restore can undo, and ${why} for ${workspace}, so it would not even be recorded. Ask the user to run: rewindfs mount ${workspace}, then retry.` }
  return { code: 0, message: `rewindfs: ${workspace}: ${why}, so this command runs without a checkpoint (run: rewindfs mount ${workspace})` }
}

function arg (name: string): string {
  const i = process.argv.indexOf(name)
  return i > 0 && i + 1 < process.argv.length ? process.argv[i + 1] : ''
}

if (process.argv[1]?.endsWith('offline-check.js')) {
  let payload: unknown = null
  try { payload = JSON.parse(fs.readFileSync(0, 'utf8')) } catch {}
  const d = payload === null
    ? { code: 2 as const, message: 'rewindfs: the hook payload is not JSON; refusing the command while the daemon is down' }
    : offlineDecision(payload, arg('--store'), arg('--workspace'), arg('--why') || 'the daemon is not running', arg('--offline') || null)
  process.stderr.write(d.message + '\n')
  process.exitCode = d.code
}
