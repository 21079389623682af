/**
 * `rewindfs hooks install|uninstall claude|codex [--project|--user]`: the
 * PreToolUse hook that marks a checkpoint before every tool call
 * (hooks/settings.ts writes the settings; hooks/rewindfs-hook.c is the hook).
 */
import fs from 'node:fs'
import path from 'node:path'
import type { Command } from 'commander'
import { findWorkspace, rewindHome } from '../../daemon/paths.js'
import { discover } from '../../client/discover.js'
import { HOOK_BINARY, FALLBACK_SCRIPT, hookCommand, installHook, settingsFile, uninstallHook, SettingsError, type Scope } from '../../hooks/settings.js'
import type { Harness } from '../../proto/hook.js'
import { CliError } from '../errors.js'


interface Opts { project?: boolean, user?: boolean, workspace?: string, home?: string }

function harnessOf (s: string): Harness {
  if (s === 'claude' || s === 'codex') return s
  throw new CliError(`"${s}" is not a harness rewindfs installs hooks for: give claude (Claude Code) or codex (Codex CLI)`)
}

/** The mounted workspace containing `from`: this user's registry, else discovery (a mount made through sudo); null when neither knows one. */
async function workspaceOf (from: string): Promise<string | null> {
  const mine = findWorkspace(from)
  if (mine) return mine.workspace
  try { return (await discover(from))?.workspace ?? null } catch { return null }
}

async function target (harness: Harness, o: Opts): Promise<{ file: string, scope: Scope, project: string, mounted: boolean }> {
  if (o.project && o.user) throw new CliError('give --project or --user, not both')
  const scope: Scope = o.user ? 'user' : 'project'
  const found = await workspaceOf(o.workspace ? path.resolve(o.workspace) : process.cwd())
  const project = o.workspace ? path.resolve(o.workspace) : (found ?? process.cwd())
  return { file: settingsFile(harness, scope, project), scope, project, mounted: found !== null }
}

function settings<T> (fn: () => T): T {
  try { return fn() } catch (e) {
    if (e instanceof SettingsError) throw new CliError(e.message)
    throw e
  }
}

/** Adds `hooks` to the CLI. */
export function registerHooks (p: Command): void {
  const hooks = p.command('hooks').description('Install or remove the harness hook that marks a checkpoint before every tool call (Claude Code, Codex).')
  const common = (c: Command): Command => c
    .option('--project', 'the project\'s settings (default): .claude/settings.json or .codex/hooks.json in the workspace (or the current directory)')
    .option('--user', 'the user\'s settings: ~/.claude/settings.json or ~/.codex/hooks.json')
    .option('-w, --workspace <dir>', 'the project directory for --project (default: the mounted workspace containing the current directory, else the current directory)')
  common(hooks.command('install').argument('<harness>', 'claude or codex'))
    .option('--home <dir>', 'the rewindfs home whose workspace registry the hook reads (default: this user\'s, as rewindfs mount uses it)')
    .description('Add a PreToolUse hook to the harness\'s settings: before every tool call (Bash included) it marks a checkpoint labelled with the tool\'s name, so `rewindfs rewind TOOL_USE_ID` can take that call back.')
    .addHelpText('after', '\nExample:\n  cd ~/project && rewindfs hooks install claude\n  rewindfs hooks install codex --user')
    .action(async (h: string, o: Opts) => {
      const harness = harnessOf(h)
      if (!fs.existsSync(HOOK_BINARY)) throw new CliError(`the hook client ${HOOK_BINARY} is not built: run npm run setup (it needs gcc and nettle-dev)`)
      const { file, project, scope, mounted } = await target(harness, o)
      const home = path.resolve(o.home ?? rewindHome())
      const command = hookCommand({ harness, hookBinary: HOOK_BINARY, home, node: process.execPath, fallbackScript: FALLBACK_SCRIPT })
      const r = settings(() => installHook({ harness, file, command, recordDir: path.join(home, 'hooks') }))
      for (const l of r.lines) console.log(l)
      if (scope === 'project' && !mounted) console.log(`note: ${project} is not a rewindfs workspace yet: the hook does nothing until it is mounted (rewindfs mount ${project})`)
      if (harness === 'codex' && r.changed) console.log('note: Codex asks you to review and trust a new hook before it runs it')
    })
  common(hooks.command('uninstall').argument('<harness>', 'claude or codex'))
    .option('--home <dir>', 'the rewindfs home given at install (default: this user\'s)')
    .description('Remove exactly what hooks install added; other settings stay as they are now. An unchanged file gets its bytes from before the install back.')
    .addHelpText('after', '\nExample:\n  rewindfs hooks uninstall claude')
    .action(async (h: string, o: Opts) => {
      const harness = harnessOf(h)
      const { file } = await target(harness, o)
      const home = path.resolve(o.home ?? rewindHome())
      for (const l of settings(() => uninstallHook({ file, recordDir: path.join(home, 'hooks') })).lines) console.log(l)
    })
}
