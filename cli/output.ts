/**
 * What the CLI prints: times, sizes, a line of `log`, gc's report, the
 * warning of a mount made from below its mount point, the hint of a path
 * `show` cannot find.
 */
import fs from 'node:fs'
import bytes from 'bytes'
import { isByteName } from '../proto/names.js'
import type { RewindClient } from '../client/client.js'
import type { CheckpointInfo, GcReport } from '../daemon/api.js'

/** Milliseconds, two decimals below 10 ms, else one. */
export function fmtMs (ms: number): string { return ms < 10 ? `${ms.toFixed(2)} ms` : `${ms.toFixed(1)} ms` }

/** A time (ms since the epoch) as UTC "YYYY-MM-DD HH:MM:SSZ". */
export function fmtTime (ms: number): string { return new Date(ms).toISOString().replace('T', ' ').replace(/\.\d+Z$/, 'Z') }

/**
 * One line of `log`: `*` on the head (the checkpoint the workspace's
 * current state started from), id (padded to `width`), time, branch,
 * inodes recorded in the store at the checkpoint (proto/PROTOCOL.md
 * CheckpointInfo `inodes`: not a count of paths), pin, label.
 */
export function printCheckpoint (c: CheckpointInfo, width: number, head = false): void {
  console.log(`${head ? '*' : ' '} ${`#${c.id}`.padEnd(width + 1)}  ${fmtTime(c.time)}  ${c.branch.padEnd(6)} ${String(c.inodes).padStart(7)} recorded ${c.pinned ? ' pinned ' : '        '}${c.label ?? ''}`)
}

/** What `inodes` counts, in the CLI's words (one definition for checkpoint, log and status). */
export const RECORDED_NOTE = 'inodes recorded in the store: created, changed or listed through the mount; files of directories never listed are read from the directory and not counted'

/** The real path of this process's current directory, or null when it cannot be resolved (deleted, or under a dead mount). */
export function realCwd (): string | null {
  try { return fs.realpathSync(process.cwd()) } catch { return null }
}

/**
 * Warns (stderr) when `cwd`, the CLI's current directory before the mount,
 * is the new mount point `dir` or below it: the shell's directory is then
 * the one under the mount, and what is written through it is not versioned.
 */
export function warnCwdBelow (dir: string, cwd: string | null): void {
  if (cwd === null || (cwd !== dir && !cwd.startsWith(dir + '/'))) return
  console.error(`rewindfs: warning: your shell's current directory is below the new mount: it still points at the directory underneath, so what you write there bypasses rewindfs (not versioned, and it leaks into later checkpoints). Run \`cd ${cwd}\` (full path) so your work goes through rewindfs`)
}

/**
 * Why `p` is not shown at checkpoint `id`, with where to look instead: the
 * nearest directory that exists there, whether `p` exists now, diff and log.
 */
export async function missingAt (c: RewindClient, id: number, p: string): Promise<string> {
  const parts = p.split('/').filter(x => x !== '')
  let dir = ''
  for (let n = parts.length - 1; n > 0; n--) {
    const d = parts.slice(0, n).join('/')
    const st = await c.stat({ id, path: d })
    if (st?.type === 'dir') { dir = d; break }
  }
  const now = await c.stat({ path: p })
  const hints = [
    now ? `it exists in the workspace now, so it was created after checkpoint ${id}` : null,
    `rewindfs show ${id}:${dir === '' ? '/' : dir} lists ${dir === '' ? 'the top directory' : dir} as it was then`,
    `rewindfs diff ${id} lists what changed since`,
    'rewindfs log lists the checkpoints'
  ].filter(h => h !== null)
  return `${p} does not exist at checkpoint ${id}: ${hints.join('; ')}`
}

/** Bytes in powers of 1024 ("1.5 MB"). */
export function fmtBytes (n: number): string {
  return bytes.format(n, { unitSeparator: ' ' }) ?? `${n} B`
}

/** Prints gc's report: what went (or would go), packs compacted, space returned. */
export function printGcReport (r: GcReport): void {
  const cps = r.checkpoints
  const verb = r.dryRun ? 'would be removed' : 'removed'
  console.log(`${r.dryRun ? 'dry run: ' : ''}${cps.removed.length} of ${cps.before} checkpoints ${verb}${cps.removed.length ? ` (#${cps.removed.join(', #')})` : ''}; ${cps.kept} kept`)
  if (r.branches.removed.length) console.log(`branches ${verb}: ${r.branches.removed.join(', ')}`)
  console.log(`${verb}: ${r.nodes} table nodes and inode records, ${r.contexts} contexts, ${r.frozen} frozen copies, ${r.blocks.removed} blocks (${fmtBytes(r.blocks.bytes)})`)
  if (!r.dryRun) {
    console.log(`packs: ${r.packs.deleted} deleted, ${r.packs.compacted} compacted; ${fmtBytes(r.bytes.packsBefore)} -> ${fmtBytes(r.bytes.packsAfter)}; metadata ${fmtBytes(r.bytes.metaBefore)} -> ${fmtBytes(r.bytes.metaAfter)}`)
    for (const n of r.packs.notCompacted) console.log(`  pack ${n.pack} not compacted: ${n.reason}`)
  }
  console.log(`space ${r.dryRun ? 'that would be returned (block bytes)' : 'returned'}: ${fmtBytes(r.bytes.returned)} (${fmtMs(r.ms)})`)
}

/**
 * A path as the CLI prints it: as it is, unless it holds a byte that is not
 * UTF-8 (issue 18: an escaped byte, proto/names.ts) or a control character;
 * then escaped the way `ls -b` does: such bytes as `\ooo` (octal), `\n`,
 * `\t`, and a backslash as `\\`, so the line stays one line and says
 * which bytes the name has.
 */
export function showPath (p: string): string {
  // eslint-disable-next-line no-control-regex
  if (!isByteName(p) && !/[\x00-\x1f\x7f]/.test(p)) return p
  let out = ''
  for (const ch of p) {
    const c = ch.charCodeAt(0)
    if (ch.length === 1 && c >= 0xdc80 && c <= 0xdcff) out += '\\' + (c - 0xdc00).toString(8).padStart(3, '0')
    else if (ch === '\\') out += '\\\\'
    else if (ch === '\n') out += '\\n'
    else if (ch === '\t') out += '\\t'
    else if (c < 0x20 || c === 0x7f) out += '\\' + c.toString(8).padStart(3, '0')
    else out += ch
  }
  return out
}
