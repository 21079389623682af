/**
 * RewindApi over one mounted workspace: the operations the websocket server
 * dispatches, each mapped to the workspace, the generations or the tree
 * writer. Paths arrive validated by proto/ (workspace-relative, no '..').
 * Arguments are ApiArgs<op> (proto/api-args.ts), derived from the wire's
 * OpArgs, never restated here.
 */
import type { CheckpointId } from '../base/types.js'
import type { CandidateInfo, CheckpointInfo, DiffEntry, GcPolicy, GcReport, MemoryEntry, PathHistoryEntry, RestoreInfo, RewindApi, RunEndInfo, StatInfo, StatusInfo, UndoInfo } from './api.js'
import { type InodeRecord, isDir, isFile, typeName } from '../fs/inode.js'
import type { Workspace } from '../fs/workspace.js'
import type { CheckpointRecord, Generations } from '../fs/history/generations.js'
import type { Invalidate } from '../fs/api.js'
import { TreeView } from '../fs/tree.js'
import { ApiError } from '../proto/errors.js'
import { FsError } from '../base/errno.js'
import { Memory } from './memory.js'
import type { ApiArgs } from '../proto/api-args.js'
import { MAX_CANDIDATES, MAX_READ_LENGTH } from '../proto/validate.js'
import type { Ledger } from '../effects/ledger.js'
import { abandonedGenerations, recoveryOf } from '../effects/recovery.js'
import type { ToolCalls } from './calls.js'

export interface ServiceDeps {
  workspace: Workspace
  generations: Generations
  workspacePath: string
  storePath: string
  protocol: number
  /** FUSE requests served so far, by operation name (status.requests); absent: not reported */
  requests?: () => Record<string, number>
  /** the kernel's node ids as the FUSE layer counts them (status.kernelNodes); absent: not reported (hl) */
  kernelNodes?: () => NonNullable<StatusInfo['kernelNodes']>
  /** drops kernel caches (the FUSE mount) */
  invalidate: Invalidate
  /** writes a checkpoint's tree to a directory */
  exportTo: (id: CheckpointId, dir: string) => Promise<{ files: number, bytes: number }>
  /**
   * starts unmounting: resolves once the final checkpoint is sealed (the
   * rest, which ends the daemon, follows after the reply); rejects, still
   * mounted, when it cannot start (E_NO_SPACE on a full disk)
   */
  unmount: (discard: boolean) => Promise<void>
  /** garbage collection of this store while mounted (fs/maint/gc.ts) */
  gc: (policy: Partial<GcPolicy>) => Promise<GcReport>
  /** rewind memory; default: kept in the generations' store database */
  memory?: Memory
  /** the store's effect ledger (effects/ledger.ts); without it restores list no effects and effect ops fail */
  ledger?: Ledger
  /** the tool calls changes are attributed to (daemon/calls.ts); without it call_begin and call_end fail */
  calls?: ToolCalls
}

/** The daemon's RewindApi. */
export class Service implements RewindApi {
  private readonly memory: Memory

  /** the effect ledger's operations (server dispatch of effect_*) */
  readonly effects?: Ledger
  /** the tool calls (server dispatch of call_begin, call_end) */
  readonly toolCalls?: ToolCalls

  constructor (private readonly d: ServiceDeps) {
    this.memory = d.memory ?? new Memory(d.generations.db)
    this.effects = d.ledger
    this.toolCalls = d.calls
  }

  async status (): Promise<StatusInfo> {
    const g = this.d.generations
    return {
      workspace: this.d.workspacePath,
      store: this.d.storePath,
      branch: g.state.branch,
      head: g.state.head,
      generation: g.state.generation,
      checkpoints: g.checkpoints.size,
      inodes: g.liveInodes(this.d.workspace),
      dirtyBytes: this.d.workspace.dirtyBytes,
      dirtyInodes: this.d.generations.dirtyInodes(this.d.workspace),
      pid: process.pid,
      protocol: this.d.protocol,
      ...(this.d.requests ? { requests: this.d.requests() } : {}),
      ...(this.d.kernelNodes ? { kernelNodes: this.d.kernelNodes() } : {})
    }
  }

  async mark (req: ApiArgs<'mark'>): Promise<CheckpointInfo> {
    const c = await this.d.generations.mark(this.d.workspace, req)
    this.d.ledger?.noteCheckpoint({ checkpoint: c.id, generation: c.generation, branch: c.branch, parent: c.parent })
    return c
  }

  /**
   * Restore. With `paths` or `dryRun`: main's selective restore or preview
   * (no branch is abandoned, so no `recovery`). A full restore is recorded in
   * the effect ledger with the effects of the abandoned suffix
   * (effects/recovery.ts), which `recovery` lists. A full restore of the
   * head checkpoint with nothing unsaved and no effect begun since is a
   * no-op: the workspace already is that checkpoint, so nothing changes,
   * no branch starts and nothing is recorded (as a selective restore with
   * nothing to change); the reply names the current branch, `changed` 0.
   */
  async restore (req: ApiArgs<'restore'>): Promise<RestoreInfo> {
    const g = this.d.generations
    if (req.paths !== undefined) return await g.restorePaths(this.d.workspace, req.id, req.paths.map(path => ({ path })), this.d.invalidate, { dryRun: req.dryRun === true })
    if (req.dryRun === true) return await g.restorePreview(this.d.workspace, req.id)
    const t0 = performance.now()
    // one at a time with marks and restores: the check is a moment at which the live state is the head
    const same = await g.exclusive(async () => req.id === g.state.head && !g.unsaved(this.d.workspace) &&
      (this.d.ledger?.inGenerations(new Set([g.state.generation])).length ?? 0) === 0)
    if (same) {
      const hasContext = (g.checkpoints.get(req.id)?.context ?? null) !== null
      return { checkpoint: req.id, branch: g.state.branch, changed: 0, ms: performance.now() - t0, saved: null, savedAll: [], changes: [], recovery: recoveryOf(hasContext, []) }
    }
    const fromHead = g.state.head
    const fromGeneration = g.state.generation
    const r = await g.restore(this.d.workspace, req.id, this.d.invalidate)
    const ledger = this.d.ledger
    const lookup = (id: number): { generation: number, parent: number | null } | null => {
      const c = g.checkpoints.get(id)
      return ledger?.checkpointOf(id) ?? (c === undefined ? null : { generation: c.generation, parent: c.parent })
    }
    if (r.saved !== null) {
      const s = g.checkpoints.get(r.saved)
      if (s !== undefined) ledger?.noteCheckpoint({ checkpoint: s.id, generation: s.generation, branch: s.branch, parent: s.parent })
    }
    const abandoned = ledger === undefined ? [] : await ledger.noteRestore({ checkpoint: r.checkpoint, from: fromHead, branch: r.branch, saved: r.saved, abandoned: abandonedGenerations(fromHead, fromGeneration, r.checkpoint, lookup) })
    return { ...r, recovery: recoveryOf((g.checkpoints.get(r.checkpoint)?.context ?? null) !== null, abandoned) }
  }

  async log (req: ApiArgs<'log'>): Promise<CheckpointInfo[]> {
    return this.d.generations.log(req)
  }

  async diff (req: ApiArgs<'diff'>): Promise<DiffEntry[]> {
    return await this.d.generations.diff(this.d.workspace, req.a, req.b)
  }

  /** Record at `path` in checkpoint `id` (live when absent), and the view it came from. */
  private async at (id: CheckpointId | undefined, path: string): Promise<[InodeRecord | null, TreeView | null]> {
    if (id === undefined) {
      try { return [this.d.workspace.get(this.d.workspace.resolve('/' + path))!, null] } catch (e) {
        if (e instanceof FsError) return [null, null]
        throw e
      }
    }
    const view = new TreeView(this.d.generations, this.d.workspace, await this.d.generations.tableOf(id))
    return [await view.at(path), view]
  }

  private statInfo (path: string, r: InodeRecord): StatInfo {
    const s = this.d.workspace.statOf(r)
    const out: StatInfo = {
      path, type: typeName(r.mode), mode: r.mode, uid: r.uid, gid: r.gid, size: s.size, nlink: s.nlink, ino: r.ino,
      mtimeNs: r.mtime.toString(), atimeNs: r.atime.toString(), ctimeNs: r.ctime.toString()
    }
    if (r.target !== undefined) out.target = r.target
    return out
  }

  async stat (req: ApiArgs<'stat'>): Promise<StatInfo | null> {
    const [r] = await this.at(req.id, req.path)
    return r ? this.statInfo(req.path, r) : null
  }

  async readdir (req: ApiArgs<'readdir'>): Promise<StatInfo[]> {
    const [r, t] = await this.at(req.id, req.path)
    if (!r) throw new ApiError('E_NOT_FOUND', `${req.path}: no such directory at ${req.id === undefined ? 'the live workspace' : `checkpoint ${req.id}`}`)
    if (!isDir(r)) throw new ApiError('E_BAD_REQUEST', `path: ${req.path === '' ? '/' : req.path} is not a directory`, { field: 'path' })
    const out: StatInfo[] = []
    const base = req.path.replace(/\/$/, '')
    if (t) {
      for (const [name, c] of await t.children(r)) out.push(this.statInfo(`${base}/${name}`, c))
    } else {
      for (const [name, ino] of this.d.workspace.entriesOf(r)) {
        const c = this.d.workspace.get(ino)
        if (c) out.push(this.statInfo(`${base}/${name}`, c))
      }
    }
    return out
  }

  async read (req: ApiArgs<'read'>): Promise<Uint8Array> {
    const [r] = await this.at(req.id, req.path)
    if (!r) throw new ApiError('E_NOT_FOUND', `${req.path}: no such file`)
    if (!isFile(r)) throw new ApiError('E_BAD_REQUEST', `path: ${req.path === '' ? '/' : req.path} is not a regular file`, { field: 'path' })
    const offset = req.offset ?? 0
    const length = Math.min(req.length ?? MAX_READ_LENGTH, MAX_READ_LENGTH, Math.max(0, r.size - offset))
    const buf = Buffer.alloc(length)
    const n = this.d.workspace.readRecord(r, buf, length, offset, req.id === undefined)
    return buf.subarray(0, n)
  }

  async context (req: ApiArgs<'context'>): Promise<unknown> {
    return await this.d.generations.context(req.id)
  }

  async candidates (req: ApiArgs<'candidates'>): Promise<CandidateInfo[]> {
    const g = this.d.generations
    const lineage: CheckpointRecord[] = []
    const seen = new Set<CheckpointId>()
    for (let id = g.state.head; id !== null && !seen.has(id);) {
      const cp = g.checkpoints.get(id)
      if (!cp) break
      seen.add(id)
      lineage.push(cp)
      id = cp.parent
    }
    return lineage.slice(0, req.limit ?? MAX_CANDIDATES).map((c, i) => ({
      id: c.id, step: lineage.length - 1 - i, label: c.label, time: c.time, branch: c.branch, meta: c.meta ?? null, ...(c.calls !== undefined ? { calls: c.calls } : {})
    }))
  }

  async memoryAdd (req: ApiArgs<'memory_add'>): Promise<{ count: number }> {
    return { count: await this.memory.add(req.run, req.entry) }
  }

  async memoryGet (req: ApiArgs<'memory_get'>): Promise<{ entries: MemoryEntry[] }> {
    return { entries: await this.memory.get(req.run) }
  }

  async export (req: ApiArgs<'export'>): Promise<{ files: number, bytes: number }> {
    this.d.generations.checkpoint(req.id)
    return await this.d.exportTo(req.id, req.dir)
  }

  async pin (req: ApiArgs<'pin'> & { pinned: boolean }): Promise<CheckpointInfo> {
    return await this.d.generations.pin(req.id, req.pinned)
  }

  async runEnd (req: ApiArgs<'run_end'>): Promise<RunEndInfo> {
    const ended = Date.now()
    await this.d.generations.db.batch().put('run', req.run, { ended }).write({ sync: true })
    return { run: req.run, ended }
  }

  async undo (req: ApiArgs<'undo'>): Promise<UndoInfo> {
    return await this.d.generations.undo(this.d.workspace, req.id, this.d.invalidate, req.dryRun === true)
  }

  async history (req: ApiArgs<'history'>): Promise<PathHistoryEntry[]> {
    return await this.d.generations.history(this.d.workspace, req.path, { all: req.all, limit: req.limit ?? 100, meta: req.meta })
  }

  async gc (req: ApiArgs<'gc'>): Promise<GcReport> {
    return await this.d.gc(req)
  }

  async unmount (req: ApiArgs<'unmount'>): Promise<{ discarded: boolean }> {
    // the final checkpoint before the reply (a full disk is the caller's error, still mounted);
    // the rest after it: the caller's connection closes with the daemon
    await this.d.unmount(req.discard === true)
    return { discarded: req.discard === true }
  }
}

