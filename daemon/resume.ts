/**
 * Crash resume: the workspace of a mount whose previous daemon died while
 * mounted (the store's state says `mounted`). The directory still holds the
 * crashed session's lower layer; the workspace goes on from the last
 * acknowledged state (the head checkpoint, or the live state the last
 * fsync made durable), after completing a restore the crash interrupted
 * (fs/history/journal.ts). README "After a crash" says what the user sees.
 */
import fs from 'node:fs'
import path from 'node:path'
import type { BlockStore } from '../store/blocks.js'
import type { Generations } from '../fs/history/generations.js'
import { Workspace } from '../fs/workspace.js'
import { changedOutside, type LowerLayer } from '../fs/lower.js'
import { loadAll, allRecords } from '../fs/itable.js'

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

/**
 * The workspace after a crash: completes an interrupted restore, loads the
 * last acknowledged state, names the paths of the directory changed
 * outside the mount since the session started (and keeps a copy of each
 * changed file once, in `<store>/outside-edits/`). Logs what it did, with
 * a pointer to README "After a crash".
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
  if (state.sessionStarted !== undefined) {
    let changed: string[] = []
    try { changed = changedOutside(lower, o.dir, state.sessionStarted) } catch (e: any) { log(`rewindfs: warning: could not check ${o.dir} for changes made outside the mount (${e.message})`) }
    if (changed.length > 0) {
      const shown = changed.slice(0, 5).map(p => p === '' ? '.' : p).join(', ')
      const { copied, dir: kept, earlier } = keepOutsideEdits(o.store, o.dir, changed, log)
      const where = copied > 0 ? `; copies: ${kept}` : earlier > 0 ? `; copies kept at an earlier mount: ${path.join(o.store, 'outside-edits')}` : ''
      log(`rewindfs: warning: ${changed.length} path${changed.length === 1 ? '' : 's'} in ${o.dir} changed after this session started, outside the mount (${shown}${changed.length > 5 ? ', ...' : ''}): the workspace shows the store's version${where} (README "After a crash")`)
    }
  }
  log(`rewindfs: the previous daemon died (or its write-back did not finish): resumed from ${state.live ? 'the state its last fsync made durable' : `checkpoint ${state.head}`} (README "After a crash")`)
  return ws
}

/**
 * Keeps a copy of each file of `changed` (workspace-relative paths of
 * `dir` changed outside the mount after a crash) in
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
