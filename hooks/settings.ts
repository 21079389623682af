/**
 * Installing and uninstalling the PreToolUse hook in a harness's settings.
 *
 *   claude --project  <dir>/.claude/settings.json
 *   claude --user     $CLAUDE_CONFIG_DIR/settings.json (default ~/.claude/settings.json)
 *   codex  --project  <dir>/.codex/hooks.json
 *   codex  --user     $CODEX_HOME/hooks.json (default ~/.codex/hooks.json)
 *
 * Both files have the same shape (Claude Code's hooks reference; Codex's
 * hooks.json, whose root takes only `description` and `hooks`):
 *   {"hooks": {"PreToolUse": [{"matcher": "*", "hooks": [{"type": "command", "command": "...", "timeout": 30}]}]}}
 * Codex's matcher is a regular expression on the tool name and optional, so
 * its group has none (every tool); Claude Code's "*" is every tool.
 *
 * install adds one group at the end of hooks.PreToolUse and keeps an install
 * record (<home>/hooks/<24 hex of sha256(file)>.json: the file's bytes
 * before and after, the command, the directories it created). uninstall:
 * when the file still holds exactly the bytes install wrote, it puts back
 * the bytes from before (or removes the file and the directories install
 * created); otherwise it removes only the handlers whose command is the one
 * install added (and a group, `PreToolUse` or `hooks` left empty by that),
 * leaving every other setting as it is now.
 */
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { createHash, randomBytes } from 'node:crypto'
import { fileURLToPath } from 'node:url'
import type { Harness } from '../proto/hook.js'

const here = path.dirname(fileURLToPath(import.meta.url))
/** The hook client, dist/hooks/rewindfs-hook (C; scripts/setup.sh builds it with gcc). */
export const HOOK_BINARY = path.join(here, 'rewindfs-hook')
/** The daemon-down check the hook client starts only when the daemon cannot mark, dist/hooks/offline-check.js. */
export const FALLBACK_SCRIPT = path.join(here, 'offline-check.js')

/** Where the settings go: the project's or the user's. */
export type Scope = 'project' | 'user'

/** Hook timeout written into the settings, seconds (both harnesses count in seconds). */
export const HOOK_TIMEOUT_S = 30

/** A settings file that cannot be changed safely (not JSON, wrong shape); nothing was written. */
export class SettingsError extends Error {
  constructor (readonly file: string, message: string) {
    super(`${file}: ${message}`)
    this.name = 'SettingsError'
  }
}

/** The settings file of `harness` for `scope`; `projectDir` for project scope. */
export function settingsFile (harness: Harness, scope: Scope, projectDir: string, env: NodeJS.ProcessEnv = process.env): string {
  if (harness === 'claude') {
    return scope === 'project' ? path.join(projectDir, '.claude', 'settings.json') : path.join(env.CLAUDE_CONFIG_DIR ?? path.join(os.homedir(), '.claude'), 'settings.json')
  }
  return scope === 'project' ? path.join(projectDir, '.codex', 'hooks.json') : path.join(env.CODEX_HOME ?? path.join(os.homedir(), '.codex'), 'hooks.json')
}

/** `s` quoted for a POSIX shell. */
export function shellQuote (s: string): string {
  return /^[A-Za-z0-9_./=:@%+,-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`
}

/** The hook's command line: the C client, the harness, the rewindfs home, and the Node fallback for a daemon that is down. */
export function hookCommand (o: { harness: Harness, hookBinary: string, home: string, node: string, fallbackScript: string }): string {
  return [o.hookBinary, o.harness, '--home', o.home, '--fallback', o.node, o.fallbackScript].map(shellQuote).join(' ')
}

/** The install record kept in `<home>/hooks/`. */
export interface InstallRecord {
  version: 1
  file: string
  harness: Harness
  command: string
  /** the file's bytes before install, base64; null when it did not exist */
  before: string | null
  /** the bytes install wrote, base64 */
  after: string
  /** directories install created for the file, deepest first */
  createdDirs: string[]
  /** whether `hooks` and `hooks.PreToolUse` existed before install */
  had: { hooks: boolean, preToolUse: boolean }
  /** ms since the epoch */
  time: number
}

/** Path of the install record of `file`. */
export function recordPath (recordDir: string, file: string): string {
  return path.join(recordDir, createHash('sha256').update(path.resolve(file)).digest('hex').slice(0, 24) + '.json')
}

type Json = Record<string, unknown>

function readBytes (file: string): Buffer | null {
  try { return fs.readFileSync(file) } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return null
    throw new SettingsError(file, `cannot read it: ${(e as Error).message}`)
  }
}

function parseSettings (file: string, b: Buffer | null): Json {
  if (b === null || b.toString('utf8').trim() === '') return {}
  let v: unknown
  try { v = JSON.parse(b.toString('utf8')) } catch (e) { throw new SettingsError(file, `is not valid JSON (${(e as Error).message}); fix it first, nothing was changed`) }
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new SettingsError(file, 'does not hold a JSON object; nothing was changed')
  const hooks = (v as Json).hooks
  if (hooks !== undefined && (typeof hooks !== 'object' || hooks === null || Array.isArray(hooks))) throw new SettingsError(file, '"hooks" is not an object; nothing was changed')
  const pre = (hooks as Json | undefined)?.PreToolUse
  if (pre !== undefined && !Array.isArray(pre)) throw new SettingsError(file, '"hooks.PreToolUse" is not an array; nothing was changed')
  return v as Json
}

/** Writes `bytes` to `file` atomically (temporary file, rename), with `mode`. */
function writeAtomic (file: string, bytes: Buffer, mode: number): void {
  const tmp = `${file}.rewindfs-${randomBytes(4).toString('hex')}.tmp`
  fs.writeFileSync(tmp, bytes, { mode, flag: 'wx' })
  try { fs.renameSync(tmp, file) } catch (e) { fs.rmSync(tmp, { force: true }); throw e }
}

/** True when a handler runs `command`. */
function runs (h: unknown, command: string): boolean {
  return typeof h === 'object' && h !== null && (h as Json).command === command
}

/** What install or uninstall did, in lines for the user. */
export interface SettingsChange { file: string, changed: boolean, lines: string[] }

/**
 * Add the PreToolUse hook running `command` to `file`. Nothing changes when
 * a handler with that command is already there. Throws SettingsError for a
 * file it cannot change safely.
 */
export function installHook (o: { harness: Harness, file: string, command: string, recordDir: string }): SettingsChange {
  const before = readBytes(o.file)
  const obj = parseSettings(o.file, before)
  const hooks = (obj.hooks ?? {}) as Json
  const pre = (hooks.PreToolUse ?? []) as unknown[]
  if (pre.some(g => Array.isArray((g as Json | null)?.hooks) && ((g as Json).hooks as unknown[]).some(h => runs(h, o.command)))) {
    return { file: o.file, changed: false, lines: [`${o.file}: the rewindfs hook is already installed; nothing changed`] }
  }
  const group: Json = o.harness === 'claude' ? { matcher: '*', hooks: [] } : { hooks: [] }
  ;(group.hooks as unknown[]).push({ type: 'command', command: o.command, timeout: HOOK_TIMEOUT_S })
  const had = { hooks: obj.hooks !== undefined, preToolUse: hooks.PreToolUse !== undefined }
  pre.push(group)
  hooks.PreToolUse = pre
  obj.hooks = hooks
  const after = Buffer.from(JSON.stringify(obj, null, 2) + '\n')
  const createdDirs: string[] = []
  for (let d = path.dirname(o.file); !fs.existsSync(d); d = path.dirname(d)) createdDirs.push(d)
  fs.mkdirSync(path.dirname(o.file), { recursive: true })
  const mode = before === null ? 0o644 : fs.statSync(o.file).mode & 0o7777
  writeAtomic(o.file, after, mode)
  const rec: InstallRecord = { version: 1, file: path.resolve(o.file), harness: o.harness, command: o.command, before: before?.toString('base64') ?? null, after: after.toString('base64'), createdDirs, had, time: Date.now() }
  fs.mkdirSync(o.recordDir, { recursive: true, mode: 0o700 })
  fs.writeFileSync(recordPath(o.recordDir, o.file), JSON.stringify(rec, null, 2) + '\n', { mode: 0o600 })
  return {
    file: o.file, changed: true,
    lines: [
      `${before === null ? 'created' : 'changed'} ${o.file}: added hooks.PreToolUse[${pre.length - 1}] = ${JSON.stringify(group)}`,
      `(the install record, which uninstall uses to undo exactly this, is ${recordPath(o.recordDir, o.file)})`,
    ],
  }
}

/**
 * Remove what installHook added to `file` (see the file's comment for how).
 * Without an install record, removes handlers whose command runs a program
 * named rewindfs-hook. Throws SettingsError for a file it cannot parse.
 */
export function uninstallHook (o: { file: string, recordDir: string }): SettingsChange {
  const recFile = recordPath(o.recordDir, o.file)
  let rec: InstallRecord | null = null
  try { rec = JSON.parse(fs.readFileSync(recFile, 'utf8')) as InstallRecord } catch {}
  const now = readBytes(o.file)
  const done = (changed: boolean, lines: string[]): SettingsChange => {
    if (rec) fs.rmSync(recFile, { force: true })
    return { file: o.file, changed, lines }
  }
  if (now === null) return done(false, [`${o.file} does not exist; nothing to uninstall`])
  if (rec && now.equals(Buffer.from(rec.after, 'base64'))) {
    if (rec.before === null) {
      fs.rmSync(o.file)
      for (const d of rec.createdDirs) { try { fs.rmdirSync(d) } catch {} }
      return done(true, [`removed ${o.file} (install created it and nothing else changed it)`])
    }
    writeAtomic(o.file, Buffer.from(rec.before, 'base64'), fs.statSync(o.file).mode & 0o7777)
    return done(true, [`restored ${o.file} byte for byte as it was before install (nothing else changed it since)`])
  }
  const obj = parseSettings(o.file, now)
  const isOurs = rec ? (h: unknown) => runs(h, rec!.command) : (h: unknown) => typeof (h as Json | null)?.command === 'string' && /(^|\/|')rewindfs-hook'? /.test((h as Json).command as string)
  const hooks = obj.hooks as Json | undefined
  const pre = hooks?.PreToolUse as unknown[] | undefined
  if (!hooks || !pre) return done(false, [`${o.file} has no PreToolUse hooks; nothing to uninstall`])
  let removed = 0
  const kept: unknown[] = []
  for (const g of pre) {
    const hs = (g as Json | null)?.hooks
    if (!Array.isArray(hs)) { kept.push(g); continue }
    const rest = hs.filter(h => !isOurs(h))
    removed += hs.length - rest.length
    if (rest.length === hs.length) kept.push(g)
    else if (rest.length > 0) kept.push({ ...(g as Json), hooks: rest })
  }
  if (removed === 0) return done(false, [`${o.file}: no rewindfs hook found; nothing changed`])
  if (kept.length > 0 || (rec?.had.preToolUse ?? true)) hooks.PreToolUse = kept
  else delete hooks.PreToolUse
  if (Object.keys(hooks).length === 0 && rec && !rec.had.hooks) delete obj.hooks
  writeAtomic(o.file, Buffer.from(JSON.stringify(obj, null, 2) + '\n'), fs.statSync(o.file).mode & 0o7777)
  return done(true, [`changed ${o.file}: removed the rewindfs hook (${removed} handler${removed === 1 ? '' : 's'}); your other settings are kept as they are now (the file changed since install, so it is rewritten as JSON with 2-space indentation)`])
}
