/**
 * The daemon process: opens the store of a workspace directory, mounts the
 * workspace over it, serves the protocol, and on unmount writes the final
 * state back (or discards it).
 *
 * Its lifecycle is the state machine of lifecycle.ts: OPENING (open.ts:
 * checks and the store; the workspace fresh, or resumed after a crash:
 * resume.ts) → MOUNTED (served) → UNMOUNTING (unmount.ts) → CLOSED. A
 * daemon that dies while MOUNTED leaves `state.mounted` true in the store;
 * the next mount resumes (resume.ts).
 */
import fs from 'node:fs'
import path from 'node:path'
import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import { Workspace } from '../fs/workspace.js'
import { LowerLayer, rootOfLower, decodeFrozen, relOfFrozenKey, type FrozenPath } from '../fs/lower.js'
import { ROOT_INO } from '../fs/inode.js'
import { applyChanges, emptyTable } from '../fs/itable.js'
import { Service } from './service.js'
import { startServer, type RewindServer } from './server.js'
import { startHookSocket, hookHandlers, type HookSocket } from './hook-socket.js'
import { HOOK_SOCKET } from '../proto/hook.js'
import { loadOrCreateToken, tokenPath, writeConnectionFile, removeConnectionFile } from './token.js'
import { accessUser, clearStaleSocket, externalCommandsOf, grantSocket, publishConnection, unpublishConnection, type Published } from './discovery.js'
import { PROTOCOL_VERSION } from '../proto/version.js'
import { fuseLayer, workspaceMount, checkFuseLayer } from '../fuse/layer.js'
import { xattrIo } from '../fuse/xattr.js'
import { announce, AnnounceHelper } from './announce.js'
import { exportCheckpoint } from '../fs/export.js'
import { collectGarbage } from '../fs/maint/gc.js'
import { ApiError } from '../proto/errors.js'
import { isNoSpace } from '../store/errors.js'
import { checkRoom, unmountRefused, writeOutcome, writeFinalState, type UnmountOutcome } from './unmount.js'
import { watchMount, stillMounted } from './mount-watch.js'
import { Lifecycle } from './lifecycle.js'
import { checkMountPoint, openStore } from './open.js'
import { resumeWorkspace } from './resume.js'
import { ToolCalls } from './calls.js'

const run = promisify(execFile)

export interface DaemonOptions {
  /** the workspace directory (absolute) */
  dir: string
  /** the store directory (absolute) */
  store: string
  /** TCP port for the protocol (0 = any free port) */
  port?: number
  /** listen on this unix socket (absolute path) instead of TCP; given to the user who mounted (daemon/discovery.ts) */
  socket?: string
  /** bytes kept free on the store's filesystem; new data is refused with ENOSPC below it (default 64 MiB, store/space.ts) */
  reserve?: number
  log?: (msg: string) => void
}

export { UNMOUNT_FILE, type UnmountOutcome } from './unmount.js'
export type { DaemonState } from './lifecycle.js'

/** A running daemon. */
export interface Daemon {
  /** resolves when the daemon has unmounted and closed */
  closed: Promise<void>
  /**
   * Unmount, write back (or discard), close. Rejects, with the workspace
   * still mounted and served, when the unmount could not start (full disk:
   * E_NO_SPACE) or the kernel refused it; a later call can succeed.
   */
  shutdown(discard: boolean): Promise<void>
}

/** Checks the machine can mount with the FUSE layer REWINDFS_FUSE picks (fuse/layer.ts); throws an Error that says what to install or set. */
export function checkFuseAvailable (): void {
  checkFuseLayer(fuseLayer())
}

/** Starts a daemon for `dir`: returns once the workspace is mounted and the server listens. */
export async function startDaemon (o: DaemonOptions): Promise<Daemon> {
  const log = o.log ?? ((m: string) => process.stderr.write(m + '\n'))
  const port = o.port ?? 0
  let published: Published | null = null
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new Error(`--port ${o.port} is not a port: give a whole number from 0 to 65535 (0 = any free port)`)
  checkFuseAvailable()

  // ---- OPENING: the store, the lower layer, the workspace (fresh or resumed)
  await checkMountPoint(o.dir, o.store, log)
  const { db, blocks, gens, ledger } = await openStore(o.store, o.reserve, log)
  const state = gens.state
  const life = new Lifecycle()
  const closed = life.closed

  // the lower layer: DIR opened before the mount covers it
  const dirFd = fs.openSync(o.dir, fs.constants.O_RDONLY | fs.constants.O_DIRECTORY)
  const frozen = new Map<string, FrozenPath[]>()
  for await (const e of db.iterate<FrozenPath[]>('lower')) frozen.set(relOfFrozenKey(e.key), decodeFrozen(e.value))
  const lower = new LowerLayer(`/proc/self/fd/${dirFd}`, state.session, frozen, xattrIo.read)

  let ws: Workspace
  const resumed = state.mounted && state.head !== null
  if (resumed) {
    // the daemon died while mounted: DIR still holds the session's lower layer
    ws = await resumeWorkspace({ gens, blocks, lower, dir: o.dir, store: o.store, log })
  } else {
    // the workspace is DIR as it is now: one root record whose listing is lower (O(1))
    state.sessionStarted = Date.now()
    const base = applyChanges(emptyTable(), new Map([[ROOT_INO, rootOfLower(lower)]]))
    ws = new Workspace({ blocks, lower, base, nextIno: state.nextIno })
    gens.inodes = 1
    // a remount after a clean unmount continues the current branch: its
    // "mount" checkpoint follows the last one of the previous session (the
    // state the write-back left), holding whatever was edited in the
    // directory in between (nothing, when it is unchanged), so history,
    // candidates and gc's lineage go on across sessions. Only a restore
    // starts a branch (DECISIONS.md "A remount continues the branch").
  }

  const live = ws
  // tool calls: every change a call's processes make is attributed to it (daemon/calls.ts)
  const calls = new ToolCalls(gens.calls)
  if (calls.noCgroup !== null) log(`rewindfs: tool calls are attributed by process ancestry, not by cgroup (${calls.noCgroup})`)
  // the leaves of calls of daemons killed mid-call (or whose tools outlived them)
  const stale = calls.cleanStale()
  if (stale.removed + stale.busy > 0) log(`rewindfs: removed ${stale.removed} cgroup leaves of earlier daemons' tool calls${stale.busy > 0 ? `; ${stale.busy} still hold processes (removed at a later start)` : ''}`)
  // constructed here, mounted once the server listens (a bad or busy port must fail before anything is mounted)
  const fuse = workspaceMount(fuseLayer(), { mountpoint: o.dir, workspace: ws, statfsPath: o.store, log, durable: async () => await gens.sync(live), attribution: calls })
  // a full restore is announced to watchers by a helper process through the mount (daemon/announce.ts)
  // (one long-lived process, started at the first restore, ended at close)
  const announcer = new AnnounceHelper(o.dir)
  gens.announce = async (a) => { await announce(a, announcer, (x) => fuse.announceWith(x), log) }

  let server: RewindServer | null = null
  let hooks: HookSocket | null = null

  /** the garbage collection in progress (one at a time); unmount waits for it before closing the store */
  let gcRun: Promise<unknown> | null = null
  /** step 2 of the unmount in progress: resolves when closed, rejects when it was abandoned (still mounted) */
  let finishing: Promise<void> | null = null

  /** Closes what OPENING opened, in reverse order (the store last). */
  const closeAll = async (): Promise<void> => {
    announcer.close()
    calls.close()
    ws.close()
    try { fs.closeSync(dirFd) } catch {}
    await server?.close().catch(() => {})
    await hooks?.close().catch(() => {})
    await removeConnectionFile(o.store).catch(() => {})
    if (published !== null) await unpublishConnection(published).catch(() => {})
    await ledger.close()
    blocks.close()
    await db.close().catch(() => {})
  }

  // ---- MOUNTED → UNMOUNTING → CLOSED (or back to MOUNTED when refused)

  /**
   * Unmount, step 1, while nothing is torn down: wait for a gc, seal
   * unsaved work as checkpoint "unmount" (unless discarding), check the
   * store's filesystem has room for step 2's records. If that fails (a full
   * disk: E_NO_SPACE) the workspace stays mounted and served, one line
   * says why, the error is thrown, and a later unmount can succeed.
   * Then step 2 (`finish`) starts on the next turn of the event loop, after
   * the caller had its reply; `finishing` follows it.
   */
  const beginUnmount = async (discard: boolean): Promise<void> => {
    if (!life.is('MOUNTED')) return
    life.to('UNMOUNTING')
    try {
      if (gcRun) await gcRun.catch(() => {})
      if (!discard && gens.isDirty(ws)) await gens.mark(ws, { label: 'unmount' })
      checkRoom(o.store)
    } catch (e) {
      life.to('MOUNTED')
      throw unmountRefused(e, o.store, log)
    }
    finishing = new Promise<void>((resolve, reject) => setImmediate(() => { finish(discard).then(resolve, reject) }))
    finishing.catch(() => {})
  }

  /** stops the watch for an unmount from outside (daemon/mount-watch.ts) */
  let stopWatch: () => void = () => {}
  /** The mount ended from outside: seal, write back (or keep the store), close; the process then exits. */
  const unmountedOutside = (): void => {
    if (!life.is('MOUNTED')) return
    log(`rewindfs: ${o.dir} was unmounted from outside (fusermount -u, umount); sealing a final checkpoint and writing back`)
    shutdown(false).catch((e: any) => { log(`rewindfs: the unmount after an unmount from outside failed: ${e?.message ?? e}; the store keeps checkpoint ${state.head} and the next rewindfs mount ${o.dir} resumes from it`) })
  }

  /** Unmounts: resolves when closed; rejects (still mounted and serving) when the unmount could not be done. */
  const shutdown = async (discard: boolean): Promise<void> => {
    if (!life.is('MOUNTED')) { await (finishing ?? closed); return }
    await beginUnmount(discard)
    await finishing
  }

  /**
   * Unmount, step 2: unmount, write the final state back or discard
   * (unmount.ts writeFinalState), close. If the kernel refuses the unmount,
   * nothing is closed: back to MOUNTED, still served. The outcome goes to
   * `<store>/unmount.json` for the CLI.
   */
  const finish = async (discard: boolean): Promise<void> => {
    const outcome: UnmountOutcome = { ok: true, discarded: discard, checkpoint: state.head, errors: [], time: Date.now() }
    stopWatch()
    let refused: Error | undefined
    try {
      await fuse.unmount()
    } catch (e: any) {
      // also when it was unmounted from outside already (fusermount -u, umount): then nothing is left to detach
      refused = e
    }
    if (stillMounted(o.dir)) {
      const e = refused ?? new Error(`${o.dir} is still mounted after the unmount`)
      stopWatch = watchMount(o.dir, unmountedOutside)
      life.to('MOUNTED')
      log(`rewindfs: unmount failed: ${e.message}; ${o.dir} stays mounted and served: stop what uses it, then unmount again (nothing is lost)`)
      writeOutcome(o.store, { ...outcome, ok: false, mounted: true, errors: [e.message] }, log)
      throw e
    }
    try {
      await writeFinalState({ ws, gens, db, blocks, dir: o.dir, dirFd, log }, discard, outcome)
    } catch (e: any) {
      outcome.ok = false
      outcome.errors.push(e.message)
      if (isNoSpace(e)) log(`rewindfs: unmount failed: the store's filesystem is full, the end of the unmount could not be recorded (${e.message}); nothing is lost: free space there, then rewindfs mount ${o.dir} (it resumes from checkpoint ${state.head}) and unmount again`)
      else log(`rewindfs: unmount failed: ${e.stack ?? e.message}`)
    } finally {
      writeOutcome(o.store, outcome, log)
      await closeAll()
      life.to('CLOSED')
    }
  }

  const service = new Service({
    workspace: ws,
    generations: gens,
    workspacePath: o.dir,
    storePath: o.store,
    protocol: PROTOCOL_VERSION,
    invalidate: async (plan) => await fuse.invalidate(plan),
    requests: () => fuse.requestCounts(),
    ...(fuse.kernelNodes ? { kernelNodes: () => fuse.kernelNodes!() } : {}),
    exportTo: async (id, dir) => await exportCheckpoint({ gens, ws, id, dir, workspaceDir: o.dir, xattrs: xattrIo }),
    unmount: beginUnmount,
    ledger,
    calls,
    gc: async (policy) => {
      if (!life.is('MOUNTED')) throw new ApiError('E_NOT_MOUNTED', 'the workspace is unmounting; run rewindfs gc after the unmount (it opens the store itself)')
      if (gcRun) throw new ApiError('E_BUSY', 'a garbage collection is already running; wait for it to finish')
      const run = collectGarbage({ db, blocks, gens, ws: live, storeDir: o.store, log }, policy)
      gcRun = run
      try { return await run } finally { gcRun = null }
    }
  })
  /** OPENING failed before serving: closes what startDaemon opened (unmounts first when it got that far). */
  const abandon = async (mounted: boolean): Promise<void> => {
    if (life.is('MOUNTED')) life.to('UNMOUNTING') // published or the connection file failed after MOUNTED
    if (mounted) await fuse.unmount().catch(async () => await run('fusermount', ['-uz', o.dir]).catch(() => {}))
    await closeAll()
    life.to('CLOSED')
  }
  let token = ''
  const access = accessUser()
  const api = untilMounted(service, life)
  const hookH = hookHandlers(async (label, meta) => {
    const cp = await api.mark({ label, meta })
    server?.broadcast({ event: 'checkpoint', checkpoint: cp })
    return cp
  }, () => gens.checkpoints.values())
  try {
    token = await loadOrCreateToken(o.store)
    if (o.socket !== undefined) await clearStaleSocket(o.socket)
    server = await startServer({ api, token, port, ...(o.socket !== undefined ? { socketPath: o.socket } : {}) })
    if (o.socket !== undefined) await grantSocket(o.socket, access)
    // the harness hooks' socket (proto/PROTOCOL.md §7); without it the websocket still serves
    try {
      hooks = await startHookSocket(path.join(o.store, HOOK_SOCKET), token, hookH, tokenPath(o.store))
    } catch (e: any) { log(`rewindfs: warning: no hook socket, so the harness hooks cannot mark checkpoints: ${e.message}`) }
  } catch (e) {
    await abandon(false)
    throw listenError(e, port, o.socket)
  }
  let mounted = false
  try {
    await fuse.mount()
    mounted = true
    state.mounted = true
    if (!resumed) await gens.mark(ws, { label: 'mount' })
    else await gens.saveState(ws)
    // ---- MOUNTED: served from here on: a client that finds the files below (or polls for daemon.json) can use it at once
    life.to('MOUNTED')
    const info = { port: server.port, socket: server.socketPath, pid: process.pid, workspace: o.dir }
    // discovery's files first: the CLI's mount returns once daemon.json exists, and clients may look them up at once
    try {
      // with the hook socket R/<key>.hook for the user who mounted (the store's own is root's under sudo)
      published = await publishConnection({ info, store: o.store, token, access, hook: async file => await startHookSocket(file, token, hookH, access), externalCommands: externalCommandsOf(o.store) })
    } catch (e) {
      log(`rewindfs: warning: clients cannot find this daemon from the workspace path (${(e as Error).message}); they can still connect with the store directory ${o.store}`)
    }
    await writeConnectionFile(o.store, info)
  } catch (e) {
    // nothing was written back and DIR is as it was: unmount, so no mount is left without its daemon
    await abandon(mounted)
    throw e
  }
  stopWatch = watchMount(o.dir, unmountedOutside)
  return { closed, shutdown }
}

/**
 * `api` answering E_NOT_MOUNTED while the daemon is OPENING (the server
 * listens before the workspace is mounted, so that a bad port fails before
 * the mount).
 */
function untilMounted (api: Service, life: Lifecycle): Service {
  return new Proxy(api, {
    get (target, key, receiver) {
      const v = Reflect.get(target, key, receiver)
      if (typeof v !== 'function') return v
      return (...args: unknown[]) => {
        if (life.is('OPENING')) throw new ApiError('E_NOT_MOUNTED', 'the daemon is still mounting the workspace; try again in a moment')
        return v.apply(target, args)
      }
    }
  })
}

/** The error of a failed listen on `port`, in one line that says what to do (EADDRINUSE, EACCES), else `e`. */
export function listenError (e: unknown, port: number, socket?: string): Error {
  const code = (e as { code?: string })?.code
  if (socket !== undefined && (code === 'EADDRINUSE' || code === 'EACCES' || code === 'ENOENT')) {
    return new Error(`cannot listen on the unix socket ${socket} (${code}): ${code === 'EADDRINUSE' ? 'another daemon listens there; give another --socket' : code === 'ENOENT' ? 'its directory does not exist; create it or give another --socket' : 'this user may not create it there; give another --socket'}`)
  }
  if (code === 'EADDRINUSE') return new Error(`port ${port} is in use by another process: pick another with --port, or 0 for any free port`)
  if (code === 'EACCES') return new Error(`port ${port} may not be used by this user (ports below 1024 need root): pick another with --port, or 0 for any free port`)
  return e instanceof Error ? e : new Error(String(e))
}
