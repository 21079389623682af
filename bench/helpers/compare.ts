/**
 * Judging a restore: the independent manifest (scripts/manifest.sh, GNU find
 * + sha256sum) of the tree as checkpointed against that of the tree as
 * restored, each difference put in the class of what was lost: modes, empty
 * directories, ignored files, the nested .git, or other content. mtime and
 * nlink are not compared (peers such as git do not keep times; hard-link
 * snapshots change link counts), nor uid/gid (every peer runs as one user).
 */

/** One parsed manifest line (scripts/manifest.sh). */
export interface ManifestEntry {
  path: string
  /** find's %y: f, d, l, ... */
  type: string
  /** permission bits, octal text */
  mode: string
  /** bytes, '-' for directories */
  size: string
  /** sha256 of a file, '-> target' of a symlink, '-' otherwise */
  hash: string
}

/**
 * Parses a manifest line `<path> <type> <mode> <uid> <gid> <nlink> <size>
 * <mtime> <hash | -> target | ->`; the path must hold no spaces. Throws an
 * Error naming the line when it does not parse.
 */
export function parseManifestLine (line: string): ManifestEntry {
  const m = /^(\S+) ([a-zA-Z]) (\d+) \d+ \d+ \d+ (\S+) \S+ (.*)$/.exec(line)
  if (!m) throw new Error(`cannot parse manifest line: ${line}`)
  return { path: m[1], type: m[2], mode: m[3], size: m[4], hash: m[5] }
}

/** What a restore lost, by class; each list holds paths. */
export interface RestoreCheck {
  /** no difference at all */
  correct: boolean
  /** paths whose permission bits differ */
  modes: string[]
  /** directories that were empty at the checkpoint and are missing */
  emptyDirs: string[]
  /** missing or changed paths the checkpointed tree's .gitignore names */
  ignored: string[]
  /** missing or changed paths inside a nested .git directory */
  nestedGit: string[]
  /** every other missing, changed or extra path */
  content: string[]
}

/**
 * Is `p` ignored by `patterns`: gitignore-style lines of the tree's
 * top-level .gitignore, only the forms `name/` (a directory anywhere),
 * `*.ext` and plain `name` (a file or directory anywhere) are understood.
 */
export function isIgnored (p: string, patterns: readonly string[]): boolean {
  const parts = p.replace(/^\.\//, '').split('/')
  for (const raw of patterns) {
    const pat = raw.trim()
    if (pat === '' || pat.startsWith('#')) continue
    if (pat.endsWith('/')) { if (parts.slice(0, -1).includes(pat.slice(0, -1)) || parts.includes(pat.slice(0, -1))) return true; continue }
    if (pat.startsWith('*.')) { if (parts[parts.length - 1].endsWith(pat.slice(1))) return true; continue }
    if (parts.includes(pat)) return true
  }
  return false
}

/**
 * Compares the manifest lines `expected` (the checkpointed tree) with
 * `actual` (the restored tree). `ignorePatterns` are the lines of the
 * expected tree's .gitignore (for the `ignored` class). The root line
 * (path `.`) is compared like any other.
 */
export function checkRestore (expected: readonly string[], actual: readonly string[], ignorePatterns: readonly string[] = []): RestoreCheck {
  const want = new Map(expected.map(l => { const e = parseManifestLine(l); return [e.path, e] }))
  const got = new Map(actual.map(l => { const e = parseManifestLine(l); return [e.path, e] }))
  const r: RestoreCheck = { correct: true, modes: [], emptyDirs: [], ignored: [], nestedGit: [], content: [] }
  const emptyDirs = new Set<string>()
  for (const e of want.values()) if (e.type === 'd') emptyDirs.add(e.path)
  for (const e of want.values()) {
    const parent = e.path.slice(0, e.path.lastIndexOf('/'))
    emptyDirs.delete(parent)
  }
  const classify = (p: string): string[] => {
    if (/(^|\/)\.git(\/|$)/.test(p)) return r.nestedGit
    if (isIgnored(p, ignorePatterns)) return r.ignored
    return r.content
  }
  for (const [p, w] of want) {
    const g = got.get(p)
    if (!g) { (w.type === 'd' && emptyDirs.has(p) ? r.emptyDirs : classify(p)).push(p); continue }
    if (g.type !== w.type || g.hash !== w.hash || (w.type !== 'd' && g.size !== w.size)) { classify(p).push(p); continue }
    if (g.mode !== w.mode) r.modes.push(p)
  }
  for (const p of got.keys()) if (!want.has(p)) classify(p).push(p)
  r.correct = r.modes.length + r.emptyDirs.length + r.ignored.length + r.nestedGit.length + r.content.length === 0
  return r
}

/** One-line verdict: "correct" or "INCORRECT: loses modes (2: ./bin/run.sh, ...), empty dirs (1: ./empty/sub), ...". */
export function verdict (c: RestoreCheck): string {
  if (c.correct) return 'correct'
  const parts: string[] = []
  const part = (what: string, ps: string[]): void => {
    if (ps.length) parts.push(`${what} (${ps.length}: ${ps.slice(0, 2).join(', ')}${ps.length > 2 ? ', ...' : ''})`)
  }
  part('modes', c.modes)
  part('empty dirs', c.emptyDirs)
  part('ignored files', c.ignored)
  part('nested .git', c.nestedGit)
  part('other paths', c.content)
  return `INCORRECT: loses ${parts.join(', ')}`
}
