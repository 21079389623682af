/**
 * Paths given on the command line (restore -- PATH, log PATH, blame PATH)
 * as workspace paths: an absolute path must lie inside the workspace; a
 * relative one is taken from the current directory when that is inside the
 * workspace, else from the workspace root.
 */
import path from 'node:path'
import { CliError } from './errors.js'

/** `p` as a workspace-relative path ('' = root) of `workspace` (absolute). Throws CliError for a path outside it. */
export function toWorkspacePath (workspace: string, p: string, cwd: string = process.cwd()): string {
  const inside = (a: string): boolean => a === workspace || a.startsWith(workspace + '/')
  const base = inside(cwd) ? cwd : workspace
  const abs = path.resolve(base, p)
  if (!inside(abs)) throw new CliError(`${p} is outside the workspace ${workspace}: give a path inside it (relative to the workspace root, or to the current directory inside it)`)
  return path.relative(workspace, abs).split(path.sep).join('/')
}

/** One letter per kind of change, as diff prints them: A added, D deleted, M content, m attributes only, T type. */
export const CHANGE_LETTER = { added: 'A', deleted: 'D', modified: 'M', meta: 'm', type: 'T' } as const
