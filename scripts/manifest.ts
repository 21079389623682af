/**
 * Independent manifests of a directory tree, for the main job
 * (scripts/main-job.ts) and the real-tools tests (test/tools/tools-*.test.ts):
 * runs scripts/manifest.sh (GNU find + sha256sum, not rewindfs's own view)
 * and compares its output.
 *
 * A manifest line is `<path> <type> <mode> <uid> <gid> <nlink> <size>
 * <mtime s.ns> <sha256 | -> target | ->`, one per path, sorted (see
 * manifest.sh).
 */
import { execFile } from 'node:child_process'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

/** scripts/manifest.sh (this module runs as dist/scripts/manifest.js) */
export const MANIFEST_SH = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../scripts/manifest.sh')

/** A manifest: its lines, and how many of them are regular files / paths. */
export interface Manifest { lines: string[], files: number, paths: number }

/**
 * The manifest of `dir` (any directory: a mount or a plain one).
 * Throws an Error carrying manifest.sh's stderr when it fails (DIR missing,
 * unreadable) or takes longer than `timeoutMs` (default 300 s).
 */
export async function manifest (dir: string, timeoutMs = 300000): Promise<Manifest> {
  const stdout = await new Promise<string>((resolve, reject) => {
    execFile('bash', [MANIFEST_SH, dir], { timeout: timeoutMs, maxBuffer: 1024 * 1024 * 1024 }, (err, out, errOut) => {
      if (err) reject(new Error(`manifest.sh ${dir} failed (${err.killed ? `timed out after ${timeoutMs} ms` : `exit ${String(err.code)}`}): ${String(errOut).trim().slice(-2000)}`))
      else resolve(out)
    })
  })
  const lines = stdout.split('\n').filter(l => l.length > 0)
  return { lines, paths: lines.length, files: lines.filter(l => / f \d+ \d+ \d+ \d+ /.test(l)).length }
}

/**
 * Lines only in a (prefixed `- `) and only in b (`+ `), in path order:
 * `count` of them all and the first `show` (default 12).
 */
export function manifestDiff (a: string[], b: string[], show = 12): { count: number, shown: string[] } {
  const sa = new Set(a)
  const sb = new Set(b)
  const onlyA = a.filter(l => !sb.has(l)).map(l => `- ${l}`)
  const onlyB = b.filter(l => !sa.has(l)).map(l => `+ ${l}`)
  const all = [...onlyA, ...onlyB].sort((x, y) => x.slice(2) < y.slice(2) ? -1 : x.slice(2) > y.slice(2) ? 1 : 0)
  return { count: all.length, shown: all.slice(0, show) }
}

/**
 * The manifest line with its mtime truncated to microseconds (for trees
 * written by tools that set times at µs). Fields: path type mode uid gid
 * nlink size mtime hash; the path must hold no spaces. Throws on a line it
 * cannot parse.
 */
export function truncateMtime (line: string): string {
  const m = /^(\S+ [a-zA-Z] \d+ \d+ \d+ \d+ \S+ )(\d+)(?:\.(\d*))?( .*)$/.exec(line)
  if (!m) throw new Error(`cannot parse manifest line: ${line}`)
  const frac = (m[3] ?? '').padEnd(6, '0').slice(0, 6)
  return `${m[1]}${m[2]}.${frac}${m[4]}`
}
