/**
 * The FUSE adapters' side of attribution (fuse/ll-adapter.ts and, by path,
 * fuse/adapter.ts; fs/api.ts
 * ChangeAttribution; DECISIONS.md "Attribution of changes to tool
 * calls"): which tool call a request belongs to, and which inodes each call
 * changed. A request's call is asked of the daemon (from the requester's
 * pid) only at the requests that carry a live requester (create, mknod,
 * mkdir, symlink, link, unlink, rmdir, rename, setattr, open for writing or
 * with O_TRUNC, xattr changes) and only while a call is active, so it costs
 * nothing otherwise. An open handle keeps its opener's call: a write
 * through it is that call's, whoever sends it (kernel writeback included).
 * Removed names are also reported by (directory inode, name): a deleted
 * file still in the lower layer has no inode in the parent checkpoint's
 * table to be found by.
 */
import fs from 'node:fs'
import type { ChangeAttribution } from '../fs/api.js'

const O_ACCMODE = 3
const O_TRUNC = fs.constants.O_TRUNC

/** Per-mount attribution state of an adapter (see the module comment). */
export class HandleCalls {
  /** the tool call each open file handle was opened by */
  private readonly byFh = new Map<number, number>()

  /** `at`: the daemon's attribution (absent: nothing is attributed); `inoAt(parent, name)`: the inode a name holds (throws when none) */
  constructor (private readonly at: ChangeAttribution | undefined, private readonly inoAt: (parent: number, name: string) => number) {}

  /** True while a call is active (asking for a request's call can answer one). */
  get active (): boolean { return this.at !== undefined && this.at.active }

  /** True while a write through a handle can be a call's (a call is active, or a handle keeps one). */
  get tracking (): boolean { return this.at !== undefined && (this.byFh.size !== 0 || this.at.active) }

  /** The call of the process `pid` (0: none, or no call is active). */
  of (pid: number): number {
    return this.at !== undefined && this.at.active ? this.at.callOf(pid) : 0
  }

  /** The call of a request through handle `fh` (its opener's), else of its requester `pid`. */
  via (pid: number, fh: number | null): number {
    return (fh !== null ? this.byFh.get(fh) : undefined) ?? this.of(pid)
  }

  /** Inodes `inos` were changed by call `call` (0: nothing recorded). */
  changed (call: number, ...inos: number[]): void {
    if (call !== 0) for (const i of inos) this.at!.changed(i, call)
  }

  /** Before name `name` of `parent` goes away (unlink, rmdir, rename's source or target): the name and its inode are `call`'s. */
  private removing (call: number, parent: number, name: string): void {
    if (call === 0) return
    this.at!.removedName(parent, name, call)
    try { this.at!.changed(this.inoAt(parent, name), call) } catch {}
  }

  /** Process `pid` removes name `name` of `parent` by `rm()` (unlink, rmdir). */
  remove (pid: number, parent: number, name: string, rm: () => void): void {
    const call = this.of(pid)
    this.removing(call, parent, name)
    rm()
    this.changed(call, parent)
  }

  /** Process `pid` renames `parent`/`name` to `np`/`nn` by `mv()`; a target replaced (or exchanged) is the call's too. */
  renaming (pid: number, parent: number, name: string, np: number, nn: string, mv: () => void): void {
    const call = this.of(pid)
    this.removing(call, parent, name)
    this.removing(call, np, nn)
    mv()
    this.changed(call, parent, np)
  }

  /** Process `pid` made `st` in `parent` (mknod, mkdir, symlink, link); answers `st`. */
  made<T extends { ino: number }> (pid: number, parent: number, st: T): T {
    this.created(pid, parent, st.ino)
    return st
  }

  /** Process `pid` made inode `ino` in `parent` (mknod, mkdir, symlink, link, create with handle `fh`). */
  created (pid: number, parent: number, ino: number, fh?: number): void {
    const call = this.of(pid)
    if (call === 0) return
    if (fh !== undefined) this.byFh.set(fh, call)
    this.changed(call, ino, parent)
  }

  /** Process `pid` opened inode `ino` as handle `fh` with open(2) `flags`: a handle that can change the file keeps the call. */
  opened (pid: number, ino: number, fh: number, flags: number): void {
    if ((flags & O_ACCMODE) === 0 && (flags & O_TRUNC) === 0) return
    const call = this.of(pid)
    if (call === 0) return
    this.byFh.set(fh, call)
    if ((flags & O_TRUNC) !== 0) this.changed(call, ino)
  }

  /** A write through handle `fh` to inode `ino`, sent by `pid`. */
  wrote (pid: number, fh: number, ino: number): void {
    if (this.tracking) this.changed(this.via(pid, fh), ino)
  }

  /** Handle `fh` was closed. */
  released (fh: number): void { this.byFh.delete(fh) }
}
