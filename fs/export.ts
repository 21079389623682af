/**
 * `export`: writes a checkpoint as plain files into a directory outside the
 * workspace. O(size of the checkpoint): one of the three operations allowed
 * to walk a whole tree (DESIGN.md "Costs").
 */
import fs from 'node:fs'
import path from 'node:path'
import type { CheckpointId } from '../base/types.js'
import type { Generations } from './history/generations.js'
import type { Workspace } from './workspace.js'
import { TreeView } from './tree.js'
import { writeNode, applyMeta, setTimes, type TimeBatch, type XattrIo } from './materialize.js'
import { ApiError } from '../proto/errors.js'
import { resolveOutside, sameMounts, InsideMountError } from './safepath.js'

export interface ExportOptions {
  gens: Generations
  ws: Workspace
  id: CheckpointId
  /** absolute destination; must not exist or be an empty directory, and must be outside the workspace */
  dir: string
  workspaceDir: string
  /** writes the user.* and trusted.* xattrs (fuse/xattr.ts via daemon.ts); without it none are written */
  xattrs?: XattrIo
}

/** Exports checkpoint `id`; returns the number of paths and file bytes written. */
export async function exportCheckpoint (o: ExportOptions): Promise<{ files: number, bytes: number }> {
  if (!path.isAbsolute(o.dir)) throw new ApiError('E_BAD_REQUEST', `export directory must be an absolute path, got ${o.dir}`)
  const ws = path.resolve(o.workspaceDir)
  let dest: string
  try {
    // never stat a path inside our own mount (it would deadlock the daemon): resolve by hand
    dest = resolveOutside(o.dir, sameMounts(ws))
  } catch (e) {
    if (e instanceof InsideMountError) throw new ApiError('E_BAD_REQUEST', `export directory ${o.dir} is inside the workspace (${e.message}); choose a directory outside ${ws}`)
    throw new ApiError('E_BAD_REQUEST', `export directory ${o.dir}: ${(e as Error).message}`)
  }
  o.ws.blocks.recheck?.() // hash every block again on its way out
  const existing = fs.statSync(dest, { throwIfNoEntry: false })
  if (existing && (!existing.isDirectory() || fs.readdirSync(dest).length > 0)) throw new ApiError('E_BAD_REQUEST', `export directory ${dest} exists and is not an empty directory: give a new path or an empty directory`)
  // a typo in a parent must not create a tree of directories somewhere: only the last component is made
  const parent = path.dirname(dest)
  if (!existing && !fs.statSync(parent, { throwIfNoEntry: false })?.isDirectory()) throw new ApiError('E_BAD_REQUEST', `export directory ${dest}: its parent ${parent} does not exist (or is not a directory); create it first (mkdir -p ${parent}) or choose another path`)
  const view = new TreeView(o.gens, o.ws, await o.gens.tableOf(o.id))
  const root = await view.root()
  const count = { files: 0, bytes: 0 }
  const links = new Map<string, string>()
  if (!existing) fs.mkdirSync(dest, { mode: 0o700 })
  const times: TimeBatch = []
  try {
    for (const [name, c] of await view.children(root)) await writeNode(view, c, `${dest}/${name}`, links, count, times, o.xattrs)
    applyMeta(root, dest, times, o.xattrs)
    await setTimes(times)
  } catch (e: any) {
    if (e instanceof ApiError) throw e
    throw new ApiError('E_IO', `export stopped after ${count.files} paths: ${e.message}; ${dest} holds a partial export`)
  }
  return count
}
