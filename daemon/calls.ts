/**
 * Tool calls and the processes that belong to them (DECISIONS.md
 * "Attribution of changes to tool calls"; protocol ops call_begin and
 * call_end): whoever runs a tool (`rewindfs exec`, the runner's tool
 * wrapper) begins a call with the pid of the process that will start the
 * tool, runs it, and ends the call. The FUSE adapter asks `callOf(pid)` at
 * the requests that carry a live requester and reports what each call
 * changed (fs/api.ts ChangeAttribution); the live generation's CallLog
 * (fs/history/attribution.ts) keeps it for the next mark.
 *
 * Two mechanisms, chosen per call:
 *
 * - cgroup (when a cgroup v2 hierarchy is mounted and writable, i.e. the
 *   daemon runs as root): a leaf cgroup `rewindfs-call-<daemon pid>-<call>`
 *   is made as a child of the process's own cgroup (so its resource limits
 *   still apply; DECISIONS.md says why not a subtree of our own) and the
 *   process is moved into it before it starts the tool; every process it
 *   starts inherits it, daemonised ones and short-lived ones included. A
 *   request's cgroup is read from /proc/<pid>/cgroup (a read of procfs,
 *   never of the mount). At call_end the process is moved back to the
 *   cgroup it came from (the runner goes on in it), and the leaf is removed
 *   once empty; processes the tool left running keep their changes
 *   attributed to it until they exit.
 * - pid (the fallback: no cgroup v2, REWINDFS_ATTRIBUTION=pid, or the leaf
 *   could not be made: the reason is in call_begin's answer and in the
 *   metadata as `mechanism`): a request belongs to the call whose process is
 *   its ancestor (/proc/<pid>/status PPid, up to 64 levels) while the call
 *   is open. A process that was reparented (daemonised: its parent exited)
 *   is missed, and so are changes after call_end.
 *
 * Both FUSE layers report changes (fuse/handle-calls.ts; the high-level
 * one by path, resolved to inodes only while a call is active).
 *
 * Leaves left behind: a daemon killed while a call was open, or whose
 * call's processes outlived it and its unmount, leaves a
 * `rewindfs-call-<pid>-<n>` leaf. `cleanStale` (run at each daemon start)
 * walks the cgroup v2 hierarchy and removes every such leaf whose daemon
 * is not running (no process <pid>, or <pid> is this daemon: a restarted
 * daemon in a pid namespace can have its predecessor's pid) and that no
 * process holds; a leaf still holding processes is kept (rmdir refuses it)
 * and removed by a later start once they exit.
 *
 * Cost: nothing per request while no call is open (and no ended call's
 * cgroup still holds processes); otherwise one procfs read per process the
 * first time it makes such a request (cached per pid until the next
 * call_begin or call_end). cleanStale: one readdir per cgroup of the
 * hierarchy (at most STALE_WALK_MAX).
 */
import fs from 'node:fs'
import path from 'node:path'
import type { Ino } from '../base/types.js'
import type { ChangeAttribution } from '../fs/api.js'
import { type CallLog, type CallMeta, callArgs } from '../fs/history/call-log.js'
import type { CallInfo } from '../proto/messages.js'
import { ApiError } from '../proto/errors.js'

/** Deepest process ancestry walked by the pid mechanism. */
const MAX_ANCESTRY = 64
/** Most pids whose call is cached (the cache is dropped past it). */
const CACHE_MAX = 65536
/** Most cgroup directories cleanStale reads (a systemd host has hundreds), and how deep it goes. */
const STALE_WALK_MAX = 20000
const STALE_DEPTH_MAX = 32
/** A call's leaf: rewindfs-call-<daemon pid>-<call id>. */
const LEAF_NAME = /^rewindfs-call-(\d+)-(\d+)$/

interface Call {
  meta: CallMeta
  pid: number
  /** cgroup mechanism: the leaf (absolute directory) and where the process came from (absolute directory) */
  dir: string | null
  home: string | null
  reason?: string
}

/** Where cgroup v2 is mounted: its mount point and the cgroup path of that point (usually '/'). */
export interface CgroupMount { mountPoint: string, root: string }

/** The cgroup v2 mount of this process's view (/proc/self/mountinfo), or null. */
export function cgroup2Mount (mountinfo = readOr('/proc/self/mountinfo')): CgroupMount | null {
  for (const line of mountinfo.split('\n')) {
    const dash = line.indexOf(' - ')
    if (dash < 0) continue
    const pre = line.slice(0, dash).split(' ')
    const post = line.slice(dash + 3).split(' ')
    if (post[0] !== 'cgroup2') continue
    return { mountPoint: unescapeMount(pre[4]), root: unescapeMount(pre[3]) }
  }
  return null
}

/** The daemon's tool calls (see the module comment). */
export class ToolCalls implements ChangeAttribution {
  private next = 1
  private readonly open = new Map<number, Call>()
  /** ended calls whose cgroup still holds processes: their changes are still theirs */
  private readonly lingering = new Map<number, Call>()
  /** pid mechanism: the process of each open call → its call */
  private readonly roots = new Map<number, number>()
  private cache = new Map<number, number>()
  private readonly marker = `rewindfs-call-${process.pid}-`
  private readonly cgroup: CgroupMount | null
  /** the cgroup v2 mount, whatever the mechanism (cleanStale: a pid-mode daemon removes earlier daemons' leaves too) */
  private readonly hierarchy: CgroupMount | null
  /** why calls use the pid mechanism when cgroups are not used at all, else null */
  readonly noCgroup: string | null

  /**
   * `opts.mode`: 'cgroup', 'pid' or '' (default: REWINDFS_ATTRIBUTION; ''
   * = cgroup where possible); `opts.cgroup`: the cgroup v2 mount (default:
   * this process's view; null: none). Throws an Error naming the variable
   * for a mode that is not one of these.
   */
  constructor (private readonly log: CallLog, opts: { mode?: string, cgroup?: CgroupMount | null } = {}) {
    const mode = (opts.mode ?? process.env.REWINDFS_ATTRIBUTION ?? '').trim()
    if (mode !== '' && mode !== 'cgroup' && mode !== 'pid') throw new Error(`REWINDFS_ATTRIBUTION=${mode} is not a mechanism: set it to cgroup or pid, or leave it unset (cgroup where possible)`)
    this.hierarchy = opts.cgroup !== undefined ? opts.cgroup : cgroup2Mount()
    const cg = mode === 'pid' ? null : this.hierarchy
    this.cgroup = cg
    this.noCgroup = mode === 'pid' ? 'REWINDFS_ATTRIBUTION=pid' : cg === null ? 'no cgroup v2 hierarchy is mounted' : null
  }

  /**
   * Removes the call leaves of daemons that no longer run (see the module
   * comment); call it before the first call_begin. Answers how many were
   * removed and how many are kept because processes still hold them.
   * Never throws (an unreadable directory is skipped).
   */
  cleanStale (): { removed: number, busy: number } {
    const out = { removed: 0, busy: 0 }
    if (this.hierarchy === null) return out
    const stack: Array<[string, number]> = [[this.hierarchy.mountPoint, 0]]
    let seen = 0
    while (stack.length > 0 && seen < STALE_WALK_MAX) {
      const [dir, depth] = stack.pop()!
      seen++
      let entries: fs.Dirent[]
      try { entries = fs.readdirSync(dir, { withFileTypes: true }) } catch { continue }
      for (const e of entries) {
        if (!e.isDirectory()) continue
        const m = LEAF_NAME.exec(e.name)
        if (m === null) { if (depth < STALE_DEPTH_MAX) stack.push([path.join(dir, e.name), depth + 1]); continue }
        const owner = Number(m[1])
        if (owner !== process.pid && fs.existsSync(`/proc/${owner}`)) continue // another daemon's live call
        if (removeCgroup(path.join(dir, e.name))) out.removed++
        else out.busy++
      }
    }
    return out
  }

  get active (): boolean { return this.open.size > 0 || this.lingering.size > 0 }

  /**
   * Begins a call of `tool` whose processes are `pid` and its descendants.
   * Throws ApiError E_BAD_REQUEST when no process `pid` exists.
   */
  begin (req: { tool: string, args?: unknown, pid: number }): CallInfo {
    if (req.pid === 1 || req.pid === process.pid) throw new ApiError('E_BAD_REQUEST', `pid: ${req.pid} is ${req.pid === 1 ? 'init' : 'the daemon itself'}; give the pid of the process that will start the tool (e.g. your own)`, { field: 'pid' })
    if (!fs.existsSync(`/proc/${req.pid}`)) throw new ApiError('E_BAD_REQUEST', `pid: no process ${req.pid} (give the pid of the process that will start the tool, e.g. your own)`, { field: 'pid' })
    this.sweep()
    const id = this.next++
    const c: Call = { meta: { call: id, tool: req.tool, args: callArgs(req.args), mechanism: 'pid', started: Date.now(), ended: null, exitStatus: null }, pid: req.pid, dir: null, home: null }
    if (this.cgroup !== null) {
      try {
        const home = this.dirOf(cgroupPathOf(req.pid))
        const dir = path.join(home, this.marker + id)
        fs.mkdirSync(dir)
        try { fs.writeFileSync(path.join(dir, 'cgroup.procs'), String(req.pid)) } catch (e) { try { fs.rmdirSync(dir) } catch {} throw e }
        c.dir = dir; c.home = home; c.meta.mechanism = 'cgroup'
      } catch (e) { c.reason = `no cgroup for the call: ${(e as Error).message}` }
    } else c.reason = this.noCgroup ?? undefined
    if (c.dir === null) this.roots.set(req.pid, id)
    this.open.set(id, c)
    this.cache = new Map()
    this.log.include(c.meta)
    return this.info(c)
  }

  /**
   * Ends call `call` with `exitStatus` (null: not known). Throws ApiError
   * E_BAD_REQUEST for a call that is not open.
   */
  end (req: { call: number, exitStatus?: number }): CallInfo {
    const c = this.open.get(req.call)
    if (c === undefined) throw new ApiError('E_BAD_REQUEST', `call: ${req.call} is not an open call (${this.lingering.has(req.call) ? 'it has ended' : 'call_begin answers the id'})`, { field: 'call' })
    c.meta.ended = Date.now()
    c.meta.exitStatus = req.exitStatus ?? null
    this.open.delete(req.call)
    this.roots.delete(c.pid)
    if (c.dir !== null) {
      // the process that began the call goes back where it came from (the runner lives on)
      try { if (this.dirOf(cgroupPathOf(c.pid)) === c.dir) fs.writeFileSync(path.join(c.home!, 'cgroup.procs'), String(c.pid)) } catch {}
      if (!removeCgroup(c.dir)) this.lingering.set(req.call, c)
    }
    this.cache = new Map()
    this.sweep()
    return { ...this.info(c), exitStatus: c.meta.exitStatus }
  }

  callOf (pid: number): number {
    if (pid <= 0) return 0
    const hit = this.cache.get(pid)
    if (hit !== undefined) return hit
    let call = 0
    try {
      if (this.cgroup !== null) call = this.fromCgroup(pid)
      if (call === 0 && this.roots.size > 0) call = this.fromAncestry(pid)
    } catch { call = 0 } // the process is gone: its request is answered, attributed to no call
    if (this.cache.size >= CACHE_MAX) this.cache = new Map()
    this.cache.set(pid, call)
    return call
  }

  changed (ino: Ino, call: number): void {
    const m = this.metaOf(call)
    if (m !== undefined) this.log.changed(ino, m)
  }

  removedName (dir: Ino, name: string, call: number): void {
    const m = this.metaOf(call)
    if (m !== undefined) this.log.removedName(dir, name, m)
  }

  /** Ends every open call (exit status unknown) and removes the empty leaves: at the daemon's close. */
  close (): void {
    for (const id of [...this.open.keys()]) this.end({ call: id })
    this.sweep()
  }

  private metaOf (call: number): CallMeta | undefined {
    return (this.open.get(call) ?? this.lingering.get(call))?.meta
  }

  private info (c: Call): CallInfo {
    const out: CallInfo = { call: c.meta.call, tool: c.meta.tool, mechanism: c.meta.mechanism, cgroup: c.dir === null ? null : this.cgroupPath(c.dir) }
    if (c.reason !== undefined && c.dir === null) out.reason = c.reason
    return out
  }

  /** Removes the leaves of ended calls that no process holds any more. */
  private sweep (): void {
    for (const [id, c] of this.lingering) if (removeCgroup(c.dir!)) this.lingering.delete(id)
  }

  private fromCgroup (pid: number): number {
    const p = cgroupPathOf(pid)
    const i = p.lastIndexOf('/' + this.marker)
    if (i < 0) return 0
    const rest = p.slice(i + 1 + this.marker.length)
    const id = Number(rest.split('/')[0])
    return Number.isSafeInteger(id) && (this.open.has(id) || this.lingering.has(id)) ? id : 0
  }

  private fromAncestry (pid: number): number {
    let p = pid
    for (let depth = 0; depth < MAX_ANCESTRY && p > 1; depth++) {
      const hit = this.roots.get(p)
      if (hit !== undefined) return hit
      const status = fs.readFileSync(`/proc/${p}/status`, 'latin1')
      const tgid = Number(/^Tgid:\s*(\d+)/m.exec(status)?.[1] ?? 0)
      const viaGroup = this.roots.get(tgid)
      if (viaGroup !== undefined) return viaGroup
      p = Number(/^PPid:\s*(\d+)/m.exec(status)?.[1] ?? 0)
    }
    return 0
  }

  /** The directory of cgroup path `p` ('/a/b') under the mount. */
  private dirOf (p: string): string {
    const { mountPoint, root } = this.cgroup!
    const rel = root === '/' ? p : p.startsWith(root) ? p.slice(root.length) : null
    if (rel === null) throw new Error(`the process's cgroup ${p} is outside the cgroup v2 mount (${root} at ${mountPoint})`)
    return path.join(mountPoint, rel)
  }

  private cgroupPath (dir: string): string {
    const { mountPoint, root } = this.cgroup!
    return path.posix.join(root, path.relative(mountPoint, dir))
  }
}

/** The cgroup v2 path of process `pid` ('0::' line of /proc/<pid>/cgroup). Throws when the process is gone or has none. */
export function cgroupPathOf (pid: number): string {
  const text = fs.readFileSync(`/proc/${pid}/cgroup`, 'latin1')
  for (const line of text.split('\n')) if (line.startsWith('0::')) return line.slice(3)
  throw new Error(`process ${pid} is in no cgroup v2 (its /proc/${pid}/cgroup has no 0:: line)`)
}

/** rmdir of a call's leaf: true when it is gone, false while processes hold it (EBUSY). */
function removeCgroup (dir: string): boolean {
  try { fs.rmdirSync(dir); return true } catch (e) { return (e as NodeJS.ErrnoException).code === 'ENOENT' }
}

function readOr (file: string): string {
  try { return fs.readFileSync(file, 'utf8') } catch { return '' }
}

/** mountinfo escapes space, tab, newline and backslash as octal (\040). */
function unescapeMount (s: string | undefined): string {
  return (s ?? '').replace(/\\([0-7]{3})/g, (_m, o: string) => String.fromCharCode(parseInt(o, 8)))
}
