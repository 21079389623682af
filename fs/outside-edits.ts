/**
 * Crash resume's rule for edits made to the workspace directory while no
 * daemon had it mounted (daemon/resume.ts calls it; README "After a
 * crash"): for every path edited there, the directory wins. The live
 * workspace, resumed from the last acknowledged state, takes the
 * directory's entry at each such path (a record of lower, read from the
 * directory: nothing is copied), so that what the mount shows, the
 * checkpoint the caller then marks, and the write-back at unmount agree.
 * The store's earlier version stays in the checkpoint the resume started from.
 *
 * Per path of `changed` (lower.ts changedOutside: ctime after the session
 * started), parents first:
 *   - below a directory the live state still lists from the directory
 *     itself (never listed in the session), or below a path taken whole:
 *     nothing to do, the directory shows through;
 *   - a directory on both sides: its attributes are the directory's; names
 *     only the directory has are taken; names only the live state has are
 *     removed when they were still read from the directory (they were
 *     deleted outside); names the session made or changed are kept (the
 *     directory cannot tell those from names deleted outside);
 *   - anything else: the live entry (and its subtree) is removed and the
 *     directory's entry taken; missing parents are made as directories.
 * Cost: one lstat per changed path, one readdir per changed directory.
 */
import fs from 'node:fs'
import type { Ino } from '../base/types.js'
import { isDir, type InodeRecord } from './inode.js'
import { WRITEBACK_TEMP_PREFIX } from './lower.js'
import type { Workspace } from './workspace.js'

/** The caller that owns what the rule creates: root (attributes are then set from the directory). */
const ROOT = { uid: 0, gid: 0 }

/** What adoptOutsideEdits did. */
export interface AdoptedEdits {
  /** workspace-relative paths whose live entry is now the directory's ('' is the root) */
  taken: string[]
  /** paths removed from the live state because the directory no longer has them */
  removed: string[]
  /** paths the rule could not apply, with the reason; the live state keeps the store's version there */
  failed: Array<{ path: string, reason: string }>
}

/**
 * Applies "the directory wins" to `ws` for `changed` (workspace-relative
 * paths of its lower directory, sorted, '' the root). Never throws: a path
 * that fails is listed in `failed` and left as the store has it.
 */
export function adoptOutsideEdits (ws: Workspace, changed: string[]): AdoptedEdits {
  const out: AdoptedEdits = { taken: [], removed: [], failed: [] }
  const whole: string[] = []
  const below = (p: string): boolean => whole.some(w => w === '' || p === w || p.startsWith(w + '/'))
  for (const p of changed) {
    if (below(p) || showsThrough(ws, p)) continue
    try {
      const disk = diskStat(ws, p)
      if (disk === undefined) continue // gone again since the scan: its parent's listing says so
      const live = liveAt(ws, p)
      if (disk.isDirectory() && live !== undefined && isDir(live)) {
        sameDirectory(ws, p, disk, out, whole)
        continue
      }
      if (p === '') throw new Error('the workspace root is not a directory on both sides')
      makeParents(ws, p)
      if (live !== undefined) removeTree(ws, p)
      takeWhole(ws, p)
      out.taken.push(p)
      whole.push(p)
    } catch (e: any) {
      out.failed.push({ path: p, reason: e?.message ?? String(e) })
    }
  }
  return out
}

/** The live record at `p`, or undefined when there is none (or a parent is missing or not a directory). */
function liveAt (ws: Workspace, p: string): InodeRecord | undefined {
  try { return ws.get(ws.resolve(p)) } catch { return undefined }
}

/** True when the live state shows `p` from the directory as it is now: an ancestor (or `p`) is a directory of this session not listed yet. */
function showsThrough (ws: Workspace, p: string): boolean {
  const names = p === '' ? [] : p.split('/')
  let r = ws.get(1)
  for (let i = 0; r !== undefined; i++) {
    const prefix = names.slice(0, i).join('/')
    if (isDir(r) && r.entries === undefined && r.lower !== undefined && r.lower.s === ws.lower.session && r.lower.p === prefix && ws.lower.isLive(r.lower)) return true
    if (i === names.length || !isDir(r)) return false
    const ino: Ino | undefined = ws.entriesOf(r).get(names[i]!)
    r = ino === undefined ? undefined : ws.get(ino)
  }
  return false
}

/** A directory on both sides: the directory's attributes, its new names taken, names it lost removed when they were read from it. */
function sameDirectory (ws: Workspace, p: string, disk: fs.BigIntStats, out: AdoptedEdits, whole: string[]): void {
  const dir = ws.get(ws.resolve(p))!
  const onDisk = new Set(fs.readdirSync(ws.lower.pathOf(p)).filter(n => !n.startsWith(WRITEBACK_TEMP_PREFIX)))
  const live = ws.entriesOf(dir)
  const join = (n: string): string => p === '' ? n : `${p}/${n}`
  for (const [name, ino] of [...live]) {
    if (onDisk.has(name)) continue
    const r = ws.get(ino)
    if (r === undefined || r.lower === undefined || r.lower.s !== ws.lower.session || !ws.lower.isLive(r.lower)) continue
    removeTree(ws, join(name))
    out.removed.push(join(name))
  }
  for (const name of onDisk) {
    if (live.has(name)) continue
    takeWhole(ws, join(name))
    out.taken.push(join(name))
    whole.push(join(name))
  }
  ws.chmod(p, Number(disk.mode) & 0o7777)
  ws.chown(p, Number(disk.uid), Number(disk.gid))
  ws.utimens(p, disk.atimeNs, disk.mtimeNs)
  if (p !== '') out.taken.push(p)
}

/** lstat of `p` in the directory (the root through '/.': its fd path is a magic link). */
function diskStat (ws: Workspace, p: string): fs.BigIntStats | undefined {
  return fs.lstatSync(p === '' ? `${ws.lower.root}/.` : ws.lower.pathOf(p), { bigint: true, throwIfNoEntry: false })
}

/**
 * Takes the directory's entry at `p` (absent from the live state) with
 * everything below it: a record of lower, except for a directory this
 * process listed before (the lower layer answers a path's listing from its
 * first read, now stale), which is made again entry by entry.
 */
function takeWhole (ws: Workspace, p: string): void {
  const st = diskStat(ws, p)
  if (st === undefined || !st.isDirectory() || ws.lower.known(p) === undefined) { ws.adoptLower(p); return }
  ws.mkdir(p, Number(st.mode) & 0o7777, ROOT)
  ws.chown(p, Number(st.uid), Number(st.gid))
  for (const name of fs.readdirSync(ws.lower.pathOf(p))) if (!name.startsWith(WRITEBACK_TEMP_PREFIX)) takeWhole(ws, `${p}/${name}`)
  ws.utimens(p, st.atimeNs, st.mtimeNs)
}

/** Removes `p` and everything below it from the live state. */
function removeTree (ws: Workspace, p: string): void {
  const r = ws.get(ws.resolve(p))!
  // a directory never listed has no records below it (and may be gone from the directory: not listed now)
  if (isDir(r) && r.entries !== undefined) for (const name of [...r.entries.keys()]) removeTree(ws, `${p}/${name}`)
  ws.dropEntry(p)
}

/** Makes the missing parent directories of `p` in the live state (the session removed them), with the directory's attributes. */
function makeParents (ws: Workspace, p: string): void {
  const names = p.split('/')
  for (let i = 1; i < names.length; i++) {
    const q = names.slice(0, i).join('/')
    if (liveAt(ws, q) !== undefined) continue
    const st = fs.lstatSync(ws.lower.pathOf(q))
    ws.mkdir(q, st.mode & 0o7777, ROOT)
    ws.chown(q, st.uid, st.gid)
  }
}
