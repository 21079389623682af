/**
 * The external-effect pattern list as the hooks read it: shell commands that
 * act outside the workspace, which no restore can undo. When the daemon is
 * down a hook lets ordinary tool calls through but refuses (fails closed) a
 * command that matches.
 *
 * Stand-in until the effect ledger (issue 15) lands its own module: same
 * file, same format, same function names, so the lead can replace this file
 * by an import. The file is `<store>/config/external-commands.json`:
 *
 *     {"version": 1, "patterns": [{"name": "git push", "regex": "...", "class": "irreversible", "description": "..."}]}
 *
 * `regex` is a JavaScript regular expression (flag `u`) tested against the
 * whole command line; `class` is the ledger's effect class (kept, not used
 * here). Without the file the defaults below apply; a file that is not valid
 * is an error (PatternFileError), never "no patterns": callers fail closed.
 */
import fs from 'node:fs'
import path from 'node:path'

/** One pattern. */
export interface ExternalCommandPattern {
  /** short name shown in messages */
  name: string
  /** JavaScript regular expression source, tested with flag `u` against the command line */
  regex: string
  /** effect class: replayable | idempotent | compensable | irreversible | unknown */
  class: string
  /** what it catches */
  description: string
}

/** Path of the pattern file inside a store directory. */
export const EXTERNAL_COMMANDS_FILE = path.join('config', 'external-commands.json')

/** A command word starts the line or follows a separator or a space. */
const AT = '(?:^|[\\s;&|(`$])'
/** The rest of the same simple command. */
const SAME = '[^;&|\\n]*'

/**
 * Defaults. Sources: git-push(1); curl(1) -X/--request, -d/--data*, -F/--form,
 * -T/--upload-file, --json (each makes the request other than GET);
 * wget(1) --method, --post-data/--post-file, --body-data/--body-file;
 * npm-publish(1); ssh(1), scp(1), sftp(1); rsync(1) HOST:PATH.
 */
export const DEFAULT_EXTERNAL_PATTERNS: readonly ExternalCommandPattern[] = [
  { name: 'git push', regex: `${AT}git\\s${SAME}\\bpush\\b`, class: 'irreversible', description: 'git push: changes a remote repository' },
  { name: 'curl (not GET)', regex: `${AT}curl(?=\\s)${SAME}(?:\\s(?:-X|--request)[=\\s]*(?!GET\\b|HEAD\\b)[A-Za-z]|\\s-[A-Za-z]*[dFT]|\\s--(?:data|form|upload-file|json)\\b)`, class: 'unknown', description: 'curl with a method other than GET/HEAD or with a body' },
  { name: 'wget (not GET)', regex: `${AT}wget(?=\\s)${SAME}\\s--(?:post-data|post-file|body-data|body-file|method[=\\s]+(?!GET\\b|HEAD\\b)[A-Za-z])`, class: 'unknown', description: 'wget with a body or a method other than GET/HEAD' },
  { name: 'npm publish', regex: `${AT}(?:npm|pnpm|yarn)\\s${SAME}\\b(?:publish|unpublish)\\b`, class: 'irreversible', description: 'publishing a package to a registry' },
  { name: 'ssh/scp/sftp', regex: `${AT}(?:ssh|scp|sftp)\\s`, class: 'unknown', description: 'a remote shell or a copy to another host' },
  { name: 'rsync to a host', regex: `${AT}rsync\\s${SAME}\\S+:`, class: 'unknown', description: 'rsync with a HOST:PATH side' },
  { name: 'docker push', regex: `${AT}(?:docker|podman)\\s${SAME}\\bpush\\b`, class: 'irreversible', description: 'pushing an image to a registry' },
]

/** The pattern file is unreadable or malformed; callers fail closed. */
export class PatternFileError extends Error {
  constructor (readonly file: string, message: string) {
    super(`${file}: ${message} (fix the file, or delete it to use the defaults)`)
    this.name = 'PatternFileError'
  }
}

/** Check a parsed pattern file; returns its patterns. Throws PatternFileError naming the first wrong field. */
export function parsePatternFile (x: unknown, file: string): ExternalCommandPattern[] {
  const o = x as { version?: unknown, patterns?: unknown } | null
  if (typeof o !== 'object' || o === null || Array.isArray(o)) throw new PatternFileError(file, 'expected an object {"version": 1, "patterns": [...]}')
  if (o.version !== 1) throw new PatternFileError(file, `version: expected 1, got ${JSON.stringify(o.version)}`)
  if (!Array.isArray(o.patterns)) throw new PatternFileError(file, 'patterns: expected an array')
  return o.patterns.map((p: unknown, i: number) => {
    const q = p as Record<string, unknown>
    if (typeof q !== 'object' || q === null) throw new PatternFileError(file, `patterns[${i}]: expected an object {name, regex, class, description}`)
    if (typeof q.name !== 'string' || q.name === '') throw new PatternFileError(file, `patterns[${i}].name: expected a non-empty string`)
    if (typeof q.regex !== 'string' || q.regex === '') throw new PatternFileError(file, `patterns[${i}].regex: expected a non-empty string`)
    try { new RegExp(q.regex, 'u') } catch (e) { throw new PatternFileError(file, `patterns[${i}].regex: not a valid regular expression: ${(e as Error).message}`) }
    return { name: q.name, regex: q.regex, class: typeof q.class === 'string' ? q.class : 'unknown', description: typeof q.description === 'string' ? q.description : '' }
  })
}

/**
 * The patterns of the store `storeDir`: its file when present, else the
 * defaults. Throws PatternFileError when the file exists but cannot be read
 * or parsed.
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

/** The first pattern matching `command`, or null. */
export function matchExternalCommand (command: string, patterns: readonly ExternalCommandPattern[]): ExternalCommandPattern | null {
  for (const p of patterns) if (new RegExp(p.regex, 'u').test(command)) return p
  return null
}
