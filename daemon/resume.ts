/**
 * Crash resume: the workspace of a mount whose previous daemon died while
 * mounted (the store's state says `mounted`). The directory still holds the
 * crashed session's lower layer; the workspace goes on from the last
 * acknowledged state (the head checkpoint, or the live state the last
 * fsync made durable), after completing a restore the crash interrupted
 * (fs/history/journal.ts), and the directory wins for paths edited there
 * while not mounted. README "After a crash" says what the user sees.
 */
import fs from 'node:fs'
import path from 'node:path'
import type { BlockStore } from '../store/blocks.js'
import type { Generations } from '../fs/history/generations.js'
import { Workspace } from '../fs/workspace.js'
import { changedOutside, type LowerLayer } from '../fs/lower.js'
import { loadAll, allRecords } from '../fs/itable.js'
import { adoptOutsideEdits } from '../fs/outside-edits.js'

/** What resumeWorkspace needs: the opened store, the session's lower layer, where DIR and the store are. */
export interface ResumeOptions {
  gens: Generations
  blocks: BlockStore
  lower: LowerLayer
  /** the workspace directory (absolute) */
  dir: string
  /** the store directory (absolute) */
  store: string
  log: (line: string) => void
}

/** The label of the checkpoint that records edits made to the directory while no daemon had it mounted. */
export const OUTSIDE_EDITS_LABEL = 'edits made while not mounted'
/** The label of the checkpoint that seals the state the last fsync made durable, before such edits go on top of it. */
export const RESUMED_LABEL = 'resumed after a crash'

/**
 * The workspace after a crash: completes an interrupted restore, loads the
 * last acknowledged state, then applies the rule for the directory's
 * paths changed outside the mount since the session started (by ctime,
 * fs/lower.ts changedOutside): the directory wins (fs/outside-edits.ts),
 * and those edits become a checkpoint of their own, OUTSIDE_EDITS_LABEL,
 * on top of the last acknowledged state, which stays restorable (when it
 * was only fsync'd, it is sealed first as RESUMED_LABEL). The session's
 * start moves to the scan, so the next resume does not find the same edits
 * again. A path the rule cannot apply keeps the store's version and a
 * copy of the file is kept once in `<store>/outside-edits/`. Logs short
 * lines with a pointer to README "After a crash".
 */
export async function resumeWorkspace (o: ResumeOptions): Promise<Workspace> {
  const { gens, blocks, lower, log } = o
  const state = gens.state
  const completed = await gens.completeInterruptedRestore()
  if (completed) log(`rewindfs: the previous daemon died during a restore to checkpoint ${completed.to}; the restore was completed (it was journaled before anything changed)`)
  const t = await gens.resumeTable()
  await loadAll(gens, t, gens.nodes, gens.records)
  const ws = new Workspace({ blocks, lower, base: t, nextIno: state.nextIno })
  for (const r of allRecords(t)) ws.noteLowerKey(r)
  log(`rewindfs: the previous daemon died (or its write-back did not finish): resumed from ${state.live ? 'the state its last fsync made durable' : `checkpoint ${state.head}`} (README "After a crash")`)
  if (state.sessionStarted === undefined) return ws
  const scanned = Date.now()
  let changed: string[]
  try { changed = changedOutside(lower, o.dir, state.sessionStarted) } catch (e: any) {
    log(`rewindfs: warning: could not check ${o.dir} for edits made while not mounted (${e.message}); the workspace shows the store's version (README "After a crash")`)
    return ws
  }
  if (changed.length === 0) return ws
  const before = gens.isDirty(ws) ? await gens.mark(ws, { label: RESUMED_LABEL }) : null
  const done = adoptOutsideEdits(ws, changed)
  state.sessionStarted = scanned
  const n = done.taken.length + done.removed.length
  if (n > 0) {
    const cp = await gens.mark(ws, { label: OUTSIDE_EDITS_LABEL })
    const all = [...done.taken, ...done.removed].sort().map(p => p === '' ? '.' : p)
    log(`rewindfs: ${n} path${n === 1 ? '' : 's'} edited in ${o.dir} while not mounted (${all.slice(0, 5).join(', ')}${n > 5 ? ', ...' : ''}): the directory's version wins, as checkpoint ${cp.id} "${OUTSIDE_EDITS_LABEL}"; before them: checkpoint ${cp.parent ?? before?.id} (README "After a crash")`)
  } else {
    await gens.saveState(ws)
  }
  if (done.failed.length > 0) {
    const { copied, dir: kept } = keepOutsideEdits(o.store, o.dir, done.failed.map(f => f.path), log)
    const first = done.failed[0]!
    log(`rewindfs: warning: ${done.failed.length} edited path${done.failed.length === 1 ? '' : 's'} could not be taken (${first.path || '.'}: ${first.reason}${done.failed.length > 1 ? '; ...' : ''}): the store's version stays${copied > 0 ? `; copies: ${kept}` : ''} (README "After a crash")`)
  }
  return ws
}

/**
 * Keeps a copy of each file of `changed` (workspace-relative paths of
 * `dir` edited after a crash that the resume could not take) in
 * `store`/outside-edits/<time>/, once: a file whose mtime, ctime and size
 * are those of a copy kept at an earlier resume (the index
 * outside-edits/kept.json) is not copied again. Directories are skipped.
 * Returns how many files were copied now, where, and how many were kept
 * earlier. Failures are logged and skipped.
 */
function keepOutsideEdits (store: string, dir: string, changed: string[], log: (line: string) => void): { copied: number, dir: string, earlier: number } {
  const root = path.join(store, 'outside-edits')
  const indexFile = path.join(root, 'kept.json')
  let index: Record<string, { sig: string, dir: string }> = {}
  try { index = JSON.parse(fs.readFileSync(indexFile, 'utf8')) } catch {}
  const kept = path.join(root, new Date().toISOString().replace(/[:.]/g, '-'))
  let copied = 0
  let earlier = 0
  for (const rel of changed) {
    const src = path.join(dir, rel)
    try {
      if (rel === '') continue
      const st = fs.lstatSync(src, { bigint: true })
      if (st.isDirectory()) continue
      const sig = `${st.mtimeNs}:${st.ctimeNs}:${st.size}`
      if (index[rel]?.sig === sig) { earlier++; continue }
      fs.cpSync(src, path.join(kept, rel), { preserveTimestamps: true, verbatimSymlinks: true })
      index[rel] = { sig, dir: kept }
      copied++
    } catch (e: any) { log(`rewindfs: warning: could not keep a copy of ${rel} (${e.message})`) }
  }
  if (copied > 0) {
    try { fs.writeFileSync(indexFile, JSON.stringify(index)) } catch (e: any) { log(`rewindfs: warning: could not write ${indexFile} (${e.message})`) }
  }
  return { copied, dir: kept, earlier }
}
