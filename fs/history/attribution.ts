/**
 * Attribution of a segment's changes to tool calls (DECISIONS.md
 * "Attribution of changes to tool calls"; wire shapes proto/messages.ts
 * SegmentAttribution): at a mark, the segment's diff grouped by call
 * (`attributeSegment`) from the live generation's record of which call
 * changed which inode (call-log.ts `CallLog`, fed by the FUSE adapter
 * through the daemon's ChangeAttribution), stored with the checkpoint
 * (CheckpointRecord.calls).
 *
 * What is recorded: per inode, the calls that changed it (created,
 * written, truncated, renamed, linked, unlinked, attributes or xattrs);
 * per (directory inode, name), the calls that removed or renamed away that
 * name (a deleted file that was still in the lower layer has no inode in
 * the parent checkpoint's table to key it by). At the mark every path of
 * the segment's diff is looked up: created, modified and type-changed
 * paths by the inode they name now, deleted ones by their name in the
 * directory that held them (the live inode of that directory) and by the
 * inode they named before. A path no call changed goes to the group of no
 * call (`call: null`). Directories whose entries changed are not listed
 * (their entries are), as in the recorder's segment metadata.
 *
 * Cost: nothing at a mark when no call was open in the segment (the common
 * case without `rewindfs exec` or the runner); otherwise one diff of the
 * segment (O(changed inodes), diff.ts) plus O(depth) lookups per changed
 * path. Memory: one entry per changed inode while calls are open.
 */
import type { CheckpointId } from '../../base/types.js'
import { type InodeRecord, isDir, typeName } from '../inode.js'
import { type TableNode, emptyTable } from '../itable.js'
import type { Workspace } from '../workspace.js'
import { TreeView } from '../tree.js'
import type { CallChanges, CallFile, SegmentAttribution } from '../../proto/messages.js'
import type { History } from './history.js'
import type { CallMeta, TakenCalls } from './call-log.js'
import { diffTables } from './diff.js'

/** Longest list of paths per kind (created, modified, deleted) per call; totals stay exact. */
export const MAX_CALL_FILES = 200

/**
 * The segment from the table of checkpoint `parent` (null: the first: an
 * empty table) to `tc` grouped by the calls of `taken`: one CallChanges
 * per call (in call order), then one for the paths no call changed, when
 * there are any. See the module comment for the cost.
 */
export async function attributeSegment (g: History, ws: Workspace, parent: CheckpointId | null, tc: TableNode, taken: TakenCalls): Promise<SegmentAttribution> {
  const tp = parent === null || !g.checkpoints.has(parent) ? emptyTable() : await g.tableOf(parent)
  const diff = await diffTables(g, ws, tp, tc, false)
  const before = new TreeView(g, ws, tp)
  const after = new TreeView(g, ws, tc)
  const groups = new Map<number | null, CallChanges>()
  for (const m of taken.calls) groups.set(m.call, group(m))
  const groupOf = (call: number | null): CallChanges => {
    let c = groups.get(call)
    if (c === undefined) { c = group(null); groups.set(call, c) }
    return c
  }
  for (const d of diff) {
    const path = d.path.replace(/^\/+/, '')
    if (path === '') continue // the root's own attributes: its entries are listed
    const was = d.change === 'added' ? undefined : await before.at(path).catch(() => undefined) ?? undefined
    const now = d.change === 'deleted' ? undefined : await after.at(path).catch(() => undefined) ?? undefined
    if (was !== undefined && now !== undefined && isDir(was) && isDir(now)) continue
    const calls = new Set<number>()
    if (now !== undefined) for (const c of taken.byIno.get(now.ino) ?? []) calls.add(c)
    if (was !== undefined && (now === undefined || d.change === 'type')) {
      for (const c of taken.byIno.get(was.ino) ?? []) calls.add(c)
      const cut = path.lastIndexOf('/')
      const dir = cut < 0 ? '' : path.slice(0, cut)
      const dirNow = dir === '' ? await after.root() : await after.at(dir).catch(() => undefined)
      if (dirNow !== undefined && dirNow !== null) for (const c of taken.byName.get(`${dirNow.ino}/${path.slice(cut + 1)}`) ?? []) calls.add(c)
    }
    const targets = calls.size === 0 ? [groupOf(null)] : [...calls].map(c => groupOf(c))
    for (const gr of targets) place(gr, d.change, path, was, now, ws)
  }
  const out: CallChanges[] = []
  for (const m of taken.calls) out.push(groups.get(m.call)!)
  for (const [k, v] of groups) if (k !== null && !taken.calls.some(m => m.call === k)) out.push(v)
  const none = groups.get(null)
  if (none !== undefined) out.push(none)
  return { calls: out }
}

function group (m: CallMeta | null): CallChanges {
  return {
    call: m?.call ?? null,
    tool: m?.tool ?? null,
    args: m?.args ?? null,
    exitStatus: m?.exitStatus ?? null,
    open: m !== null && m.ended === null,
    mechanism: m?.mechanism ?? null,
    created: [],
    modified: [],
    deleted: [],
    totals: { created: 0, modified: 0, deleted: 0, bytesCreated: 0, bytesModifiedDelta: 0, bytesDeleted: 0 }
  }
}

function sizeOf (r: InodeRecord, ws: Workspace): number {
  return isDir(r) ? 0 : ws.statOf(r).size
}

/** Adds one diff entry to a call's lists. */
function place (gr: CallChanges, change: string, path: string, was: InodeRecord | undefined, now: InodeRecord | undefined, ws: Workspace): void {
  const t = gr.totals
  if (now !== undefined && (was === undefined || change === 'added')) {
    const f: CallFile = { path, type: typeName(now.mode), bytes: sizeOf(now, ws) }
    t.created++; t.bytesCreated += f.bytes
    if (gr.created.length < MAX_CALL_FILES) gr.created.push(f)
  } else if (was !== undefined && now === undefined) {
    const f: CallFile = { path, type: typeName(was.mode), bytes: sizeOf(was, ws) }
    t.deleted++; t.bytesDeleted += f.bytes
    if (gr.deleted.length < MAX_CALL_FILES) gr.deleted.push(f)
  } else if (was !== undefined && now !== undefined) {
    const f: CallFile = { path, type: typeName(now.mode), bytes: sizeOf(now, ws), bytesBefore: sizeOf(was, ws), attrsOnly: change === 'meta' }
    t.modified++; t.bytesModifiedDelta += f.bytes - f.bytesBefore!
    if (gr.modified.length < MAX_CALL_FILES) gr.modified.push(f)
  }
}
