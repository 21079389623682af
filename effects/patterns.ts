/**
 * The external-command pattern list: shell commands that act outside the
 * workspace (git push, curl/wget with a method other than GET, npm publish,
 * ssh, ...). `rewindfs exec` records a matching command in the effect
 * ledger and refuses it when the recovery gate says so; agent hooks (Claude
 * Code, Codex) refuse a matching command when the daemon is down (fail
 * closed). A restore never undoes what such a command did.
 *
 * The list lives in the store, outside the workspace, as the JSON file
 * `<store>/config/external-commands.json` (format below and in README
 * "External effects"); without that file the defaults below apply. A file
 * that is not valid is an error (PatternFileError), never "no patterns":
 * callers fail closed.
 *
 *     {
 *       "version": 1,
 *       "patterns": [
 *         {"name": "git push", "regex": "...", "class": "irreversible", "description": "..."}
 *       ]
 *     }
 *
 * `regex` is a JavaScript regular expression (no flags; matched with the
 * `u` flag against the whole command line as the shell would receive it,
 * e.g. "cd app && git push origin main"). `class` is the effect class the
 * ledger records (proto/effects.ts). Matching errs towards matching: a
 * pattern may also match a harmless command (`git commit -m "push"`); the
 * cost of that is one ledger entry, and a refusal only when the same
 * command's earlier occurrence is unknown.
 */
import fs from 'node:fs'
import path from 'node:path'
import { isEffectClass, type EffectClass } from '../proto/effects.js'

/** One external-command pattern. */
export interface ExternalCommandPattern {
  /** short name shown in messages, e.g. "git push" */
  name: string
  /** JavaScript regular expression source, matched with flag `u` against the command line */
  regex: string
  /** effect class recorded for a matching command */
  class: EffectClass
  /** what the pattern catches and why it is external */
  description: string
}

/** The file's shape. */
export interface ExternalCommandsFile {
  version: 1
  patterns: ExternalCommandPattern[]
}

/** Path of the pattern file inside a store directory. */
export const EXTERNAL_COMMANDS_FILE = path.join('config', 'external-commands.json')

/** Start of a command word: line start or a shell separator or space before it. */
const W = '(?:^|[\\s;&|()`$])'
/** The rest of the same simple command (stops at ; & | newline). */
const REST = '[^;&|\\n]*'

/**
 * The defaults. Sources: the commands' own manuals (git-push(1), curl(1)
 * `-X`/`-d`/`-F`/`-T`/`--json`, wget(1) `--post-data`/`--method`,
 * npm-publish(1), ssh(1), scp(1)).
 */
export const DEFAULT_EXTERNAL_PATTERNS: readonly ExternalCommandPattern[] = [
  { name: 'git push', regex: `${W}git\\s${REST}\\b(push|send-email)\\b`, class: 'irreversible', description: 'git push or git send-email: changes a remote repository or sends mail' },
  { name: 'curl (not GET)', regex: `${W}curl\\b${REST}(\\s-X\\s*(?!GET\\b|HEAD\\b)[A-Za-z]+|\\s--request[=\\s]+(?!GET\\b|HEAD\\b)[A-Za-z]+|\\s-[a-zA-Z]*[dFT]|\\s--(data|data-\\S+|form|form-string|upload-file|json)\\b)`, class: 'unknown', description: 'curl with a method other than GET/HEAD, or with a body (-d, -F, -T, --data*, --form, --json), which makes it a POST or PUT' },
  { name: 'wget (not GET)', regex: `${W}wget\\b${REST}\\s--(post-data|post-file|body-data|body-file|method[=\\s]+(?!GET\\b|HEAD\\b)[A-Za-z]+)`, class: 'unknown', description: 'wget with a body or a method other than GET/HEAD' },
  { name: 'package publish', regex: `${W}(npm|pnpm|yarn|bun)\\s${REST}\\b(publish|unpublish|deprecate|dist-tag|owner)\\b`, class: 'irreversible', description: 'publishing or changing a package on a registry' },
  { name: 'cargo/twine/gem publish', regex: `${W}(cargo\\s${REST}\\b(publish|yank)|twine\\s${REST}\\bupload|gem\\s${REST}\\b(push|yank)|poetry\\s${REST}\\bpublish)\\b`, class: 'irreversible', description: 'publishing a package (crates.io, PyPI, RubyGems)' },
  { name: 'ssh/scp/sftp', regex: `${W}(ssh|scp|sftp|mosh)\\s`, class: 'unknown', description: 'a remote shell or a file copy to another host: anything may happen there' },
  { name: 'rsync to a host', regex: `${W}rsync\\s${REST}\\S+:`, class: 'unknown', description: 'rsync with a remote (host:path) side' },
  { name: 'docker push', regex: `${W}(docker|podman)\\s${REST}\\b(push|login)\\b`, class: 'irreversible', description: 'pushing an image to a registry' },
  { name: 'gh write', regex: `${W}gh\\s+(pr\\s+(create|merge|close|comment|edit|review)|issue\\s+(create|close|comment|edit|delete)|release\\s+(create|delete|upload|edit)|repo\\s+(create|delete|edit|fork)|api|gist\\s+create|workflow\\s+run)\\b`, class: 'irreversible', description: 'GitHub CLI commands that change a repository, an issue or a release' },
  { name: 'cloud and cluster', regex: `${W}(kubectl\\s${REST}\\b(apply|create|delete|patch|replace|scale|rollout)|terraform\\s${REST}\\b(apply|destroy|import)|helm\\s${REST}\\b(install|upgrade|uninstall|rollback)|aws\\s|gcloud\\s|az\\s)\\b`, class: 'unknown', description: 'changes to a cluster or a cloud account' },
  { name: 'mail', regex: `${W}(sendmail|mail|mailx|mutt)\\s`, class: 'irreversible', description: 'sending mail' },
]

/** The pattern file is unreadable or malformed; `file` names it. Callers fail closed. */
export class PatternFileError extends Error {
  constructor (readonly file: string, message: string) {
    super(`${file}: ${message} (fix the file, or delete it to use the defaults listed by rewindfs effects patterns)`)
    this.name = 'PatternFileError'
  }
}

/**
 * Check a parsed pattern file; returns its patterns. Throws PatternFileError
 * naming the first wrong field (`file` is only for the message).
 */
export function parsePatternFile (x: unknown, file = EXTERNAL_COMMANDS_FILE): ExternalCommandPattern[] {
  if (typeof x !== 'object' || x === null || Array.isArray(x)) throw new PatternFileError(file, 'expected an object {"version": 1, "patterns": [...]}')
  const o = x as Record<string, unknown>
  if (o.version !== 1) throw new PatternFileError(file, `version: expected 1, got ${JSON.stringify(o.version)}`)
  if (!Array.isArray(o.patterns)) throw new PatternFileError(file, 'patterns: expected an array')
  return o.patterns.map((p, i) => {
    const at = `patterns[${i}]`
    if (typeof p !== 'object' || p === null || Array.isArray(p)) throw new PatternFileError(file, `${at}: expected an object {name, regex, class, description}`)
    const q = p as Record<string, unknown>
    for (const k of Object.keys(q)) if (!['name', 'regex', 'class', 'description'].includes(k)) throw new PatternFileError(file, `${at}.${k}: unknown field (the fields are name, regex, class, description)`)
    if (typeof q.name !== 'string' || q.name.length === 0 || q.name.length > 200) throw new PatternFileError(file, `${at}.name: expected a string of 1..200 characters`)
    if (typeof q.regex !== 'string' || q.regex.length === 0) throw new PatternFileError(file, `${at}.regex: expected a non-empty string`)
    try { new RegExp(q.regex, 'u') } catch (e) { throw new PatternFileError(file, `${at}.regex: not a valid regular expression: ${(e as Error).message}`) }
    if (!isEffectClass(q.class)) throw new PatternFileError(file, `${at}.class: expected one of replayable, idempotent, compensable, irreversible, unknown, got ${JSON.stringify(q.class)}`)
    const description = q.description === undefined ? '' : q.description
    if (typeof description !== 'string') throw new PatternFileError(file, `${at}.description: expected a string`)
    return { name: q.name, regex: q.regex, class: q.class, description }
  })
}

/**
 * The patterns of the store in `storeDir`: its config file when present,
 * else the defaults. Sync (a hook runs it before anything else). Throws
 * PatternFileError when the file exists but cannot be read or is malformed.
 */
export function loadExternalPatterns (storeDir: string): ExternalCommandPattern[] {
  const file = path.join(storeDir, EXTERNAL_COMMANDS_FILE)
  let text: string
  try { text = fs.readFileSync(file, 'utf8') } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return DEFAULT_EXTERNAL_PATTERNS.map(p => ({ ...p }))
    throw new PatternFileError(file, `cannot read it: ${(e as Error).message}`)
  }
  let parsed: unknown
  try { parsed = JSON.parse(text) } catch (e) { throw new PatternFileError(file, `not valid JSON: ${(e as Error).message}`) }
  return parsePatternFile(parsed, file)
}

/**
 * Write the defaults to `<storeDir>/config/external-commands.json` unless the
 * file exists (so a person can edit it). Returns true when it was written.
 */
export function writeDefaultPatterns (storeDir: string): boolean {
  const file = path.join(storeDir, EXTERNAL_COMMANDS_FILE)
  fs.mkdirSync(path.dirname(file), { recursive: true })
  const body: ExternalCommandsFile = { version: 1, patterns: DEFAULT_EXTERNAL_PATTERNS.map(p => ({ ...p })) }
  try {
    fs.writeFileSync(file, JSON.stringify(body, null, 2) + '\n', { flag: 'wx', mode: 0o644 })
    return true
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'EEXIST') return false
    throw e
  }
}

/**
 * The first pattern matching `command` (a command line, or an argv joined
 * with spaces), or null. Cost: one regular expression test per pattern.
 */
export function matchExternalCommand (command: string | readonly string[], patterns: readonly ExternalCommandPattern[]): ExternalCommandPattern | null {
  const line = typeof command === 'string' ? command : command.join(' ')
  for (const p of patterns) if (new RegExp(p.regex, 'u').test(line)) return p
  return null
}
