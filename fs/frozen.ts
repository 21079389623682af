/**
 * A non-directory inode as it was just before a restore replaced or removed
 * it (fs/api.ts FrozenInode; issue 13): what the low-level FUSE adapter's
 * old incarnation of the file answers from until the kernel forgets its old
 * node id (fuse/incarnations.ts). The record is sealed state (a restore
 * seals the live state before it swaps, so no unsealed buffer is involved),
 * read through the workspace's block store or lower layer as a checkpoint's
 * record is (Workspace.readRecord with live = false). While held, the
 * workspace counts the record as retained, so gc keeps its blocks
 * (fs/maint/gc.ts unsavedBlocks).
 */
import type { FrozenInode } from './api.js'
import { type InodeRecord, isDir } from './inode.js'
import type { Workspace } from './workspace.js'

/**
 * The frozen view of `r`, a record of the live state just before a swap
 * (the caller captured it then: after the swap the live state no longer
 * has it). Throws Error for a directory (directories keep their identity
 * across a restore and are never frozen). O(xattrs).
 */
export function frozenInode (ws: Workspace, r: InodeRecord): FrozenInode {
  if (isDir(r)) throw new Error(`inode ${r.ino} is a directory: directories keep their identity across a restore`)
  const release = ws.retain(r)
  return {
    stat: ws.statOf(r, false),
    links: r.links.map(([parent, name]) => [parent, name] as const),
    target: r.target,
    xattrs: { ...(r.xattrs ?? {}) },
    read: (buf, len, pos) => ws.readRecord(r, buf, len, pos, false),
    dataRanges: () => ws.dataRanges(r),
    release
  }
}
