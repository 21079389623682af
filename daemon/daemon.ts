/**
 * The daemon process: opens the store of a workspace directory, mounts the
 * workspace over it, serves the protocol, and on unmount writes the final
 * state back (or discards it).
 *
 * States: OPENING → MOUNTED → UNMOUNTING → CLOSED. A daemon that dies while
 * MOUNTED leaves `state.mounted` true in the store; the next mount resumes
 * from the last acknowledged checkpoint (the directory itself is untouched
 * until a clean unmount writes it back).
 */
import { Ledger } from '../effects/ledger.js'
import { writeDefaultPatterns } from '../effects/patterns.js'
import fs from 'node:fs'
import path from 'node:path'
import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import { StoreDb } from '../store/db.js'
import { BlockStore } from '../store/blocks.js'
import { DEFAULT_RESERVE } from '../store/space.js'
import { Generations } from '../fs/history/generations.js'
import { Workspace } from '../fs/workspace.js'
import { LowerLayer, changedOutside, rootOfLower, type FrozenPath } from '../fs/lower.js'
import { ROOT_INO } from '../fs/inode.js'
import { applyChanges, emptyTable, loadAll, allRecords } from '../fs/itable.js'
import { Service } from './service.js'
import { startServer, type RewindServer } from './server.js'
import { startHookSocket, hookHandlers, type HookSocket } from './hook-socket.js'
import { HOOK_SOCKET } from '../proto/hook.js'
import { loadOrCreateToken, tokenPath, writeConnectionFile, removeConnectionFile } from './token.js'
import { accessUser, clearStaleSocket, grantSocket, publishConnection, unpublishConnection, type Published } from './discovery.js'
import { PROTOCOL_VERSION } from '../proto/version.js'
import { fuseLayer, workspaceMount, checkFuseLayer } from '../fuse/layer.js'
import { xattrIo } from '../fuse/xattr.js'
import { announce } from './announce.js'
import { exportCheckpoint } from '../fs/export.js'
import { writeBack } from '../fs/writeback.js'
import { mountState } from './mounts.js'
import { collectGarbage } from '../fs/maint/gc.js'
import { ApiError } from '../proto/errors.js'
import { isNoSpace } from '../store/errors.js'
import { checkRoom, unmountRefused, writeOutcome, type UnmountOutcome } from './unmount.js'
import { watchMount, stillMounted } from './mount-watch.js'

const run = promisify(execFile)

/** The log line when unmount could not freeze the paths it did not change (WriteBackStats.unfrozen). */
function unfrozenWarning (dir: string, reason: string): string {
  return `rewindfs: warning: the store had no space to keep a copy of the files the unmount did not change (${reason}); checkpoints of this session read them from ${dir}, so change ${dir} only through a mount, or free space and run rewindfs mount then unmount again to freeze them`
}

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
  // a dead mount first: stat of its mount point fails with ENOTCONN until it is cleared
  const ms = mountState(o.dir)
  if (ms === 'mounted') throw new Error(`${o.dir} is already a mount point (mount point busy): unmount it first (rewindfs unmount ${o.dir}, or fusermount -u ${o.dir})`)
  if (ms === 'stale') {
    log(`rewindfs: clearing a stale mount left on ${o.dir} by a daemon that died`)
    await run('fusermount', ['-uz', o.dir]).catch(async () => await run('umount', ['-l', o.dir]))
  }
  const st = fs.statSync(o.dir, { throwIfNoEntry: false })
  if (!st) throw new Error(`${o.dir} does not exist: create it first (mkdir -p ${o.dir})`)
  if (!st.isDirectory()) throw new Error(`${o.dir} is not a directory: rewindfs mounts a directory`)
  if (path.resolve(o.store).startsWith(path.resolve(o.dir) + path.sep)) throw new Error(`the store ${o.store} must not be inside the workspace ${o.dir}`)
  fs.mkdirSync(o.store, { recursive: true, mode: 0o700 })

  const db = await StoreDb.open(o.store)
  let blocks: BlockStore
  try {
    blocks = await BlockStore.open(o.store, db, { reserve: o.reserve })
  } catch (e) {
    await db.close().catch(() => {})
    throw e
  }
  const above = blocks.spaceAboveReserve()
  if (above < 0) {
    const reserve = o.reserve ?? DEFAULT_RESERVE
    log(`rewindfs: warning: the store's filesystem (${o.store}) has ${Math.max(0, Math.floor((above + reserve) / 1048576))} MiB free, less than the ${Math.floor(reserve / 1048576)} MiB rewindfs keeps free for checkpoints: every write will fail with ENOSPC until space is freed there (or mount with a smaller --reserve, or put the store elsewhere with --store)`)
  }
  const gens = await Generations.open(db, blocks)
  const state = gens.state
  const ledger = await openLedger(o.store, gens, log)

  // the lower layer: DIR opened before the mount covers it
  const dirFd = fs.openSync(o.dir, fs.constants.O_RDONLY | fs.constants.O_DIRECTORY)
  const frozen = new Map<string, FrozenPath[]>()
  for await (const e of db.iterate<FrozenPath[]>('lower')) frozen.set(e.key, e.value)
  const lower = new LowerLayer(`/proc/self/fd/${dirFd}`, state.session, frozen, xattrIo.read)

  let ws: Workspace
  const resumed = state.mounted && state.head !== null
  if (resumed) {
    // the daemon died while mounted: DIR still holds the session's lower layer; resume the last checkpoint
    const completed = await gens.completeInterruptedRestore()
    if (completed) log(`rewindfs: the previous daemon died during a restore to checkpoint ${completed.to}; the restore was completed (it was journaled before anything changed)`)
    const t = await gens.resumeTable()
    await loadAll(gens, t, gens.nodes, gens.records)
    ws = new Workspace({ blocks, lower, base: t, nextIno: state.nextIno })
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
  // constructed here, mounted once the server listens (a bad or busy port must fail before anything is mounted)
  const fuse = workspaceMount(fuseLayer(), { mountpoint: o.dir, workspace: ws, statfsPath: o.store, log, durable: async () => await gens.sync(live) })
  // a full restore is announced to watchers by a helper process through the mount (daemon/announce.ts)
  gens.announce = async (a) => { await announce(a, o.dir, (x) => fuse.announceWith(x), log) }

  let server: RewindServer | null = null
  let hooks: HookSocket | null = null
  let phase: 'MOUNTED' | 'UNMOUNTING' | 'CLOSED' = 'MOUNTED'
  let resolveClosed!: () => void
  const closed = new Promise<void>(resolve => { resolveClosed = resolve })

  /** the garbage collection in progress (one at a time); unmount waits for it before closing the store */
  let gcRun: Promise<unknown> | null = null
  /** step 2 of the unmount in progress: resolves when closed, rejects when it was abandoned (still mounted) */
  let finishing: Promise<void> | null = null

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
    if (phase !== 'MOUNTED') return
    phase = 'UNMOUNTING'
    try {
      if (gcRun) await gcRun.catch(() => {})
      if (!discard && gens.isDirty(ws)) await gens.mark(ws, { label: 'unmount' })
      checkRoom(o.store)
    } catch (e) {
      phase = 'MOUNTED'
      throw unmountRefused(e, o.store, log)
    }
    finishing = new Promise<void>((resolve, reject) => setImmediate(() => { finish(discard).then(resolve, reject) }))
    finishing.catch(() => {})
  }

  /** stops the watch for an unmount from outside (daemon/mount-watch.ts) */
  let stopWatch: () => void = () => {}
  /** The mount ended from outside: seal, write back (or keep the store), close; the process then exits. */
  const unmountedOutside = (): void => {
    if (phase !== 'MOUNTED') return
    log(`rewindfs: ${o.dir} was unmounted from outside (fusermount -u, umount); sealing a final checkpoint and writing back`)
    shutdown(false).catch((e: any) => { log(`rewindfs: the unmount after an unmount from outside failed: ${e?.message ?? e}; the store keeps checkpoint ${state.head} and the next rewindfs mount ${o.dir} resumes from it`) })
  }

  /** Unmounts: resolves when closed; rejects (still mounted and serving) when the unmount could not be done. */
  const shutdown = async (discard: boolean): Promise<void> => {
    if (phase !== 'MOUNTED') { await (finishing ?? closed); return }
    await beginUnmount(discard)
    await finishing
  }

  /**
   * Unmount, step 2: unmount, write the final state back (or discard),
   * close. If write-back cannot write every path, the store stays marked as
   * mounted, so the next mount resumes from the "unmount" checkpoint instead
   * of trusting the half-written directory. If the kernel refuses the
   * unmount, nothing is closed: the workspace stays mounted and served. The
   * outcome goes to `<store>/unmount.json` for the CLI.
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
      phase = 'MOUNTED'
      log(`rewindfs: unmount failed: ${e.message}; ${o.dir} stays mounted and served: stop what uses it, then unmount again (nothing is lost)`)
      writeOutcome(o.store, { ...outcome, ok: false, mounted: true, errors: [e.message] }, log)
      throw e
    }
    try {
      if (!discard) {
        let r
        try {
          r = await writeBack({ ws, gens, db, blocks, dir: o.dir, dirFd, log, xattrs: xattrIo })
        } catch (e: any) {
          r = { written: 0, removed: 0, frozen: 0, errors: [`write-back stopped before changing the directory: ${e.message}`] }
        }
        outcome.errors = r.errors
        if (r.errors.length === 0) {
          log(`rewindfs: wrote the final state back into ${o.dir} (${r.written} paths written, ${r.removed} removed, ${r.frozen} frozen)`)
          if (r.unfrozen !== undefined) { log(unfrozenWarning(o.dir, r.unfrozen)); (outcome.warnings ??= []).push(unfrozenWarning(o.dir, r.unfrozen).replace(/^rewindfs: warning: /, '')) }
          state.session++
          state.mounted = false
        } else {
          outcome.ok = false
          log(`rewindfs: write-back into ${o.dir} failed for ${r.errors.length} paths; the store keeps the final state as checkpoint ${state.head} and the next mount resumes from it:\n  ${r.errors.slice(0, 20).join('\n  ')}`)
        }
      } else {
        // the directory keeps the session's lower content: frozen too, for the checkpoints made meanwhile
        try {
          const r = await writeBack({ ws, gens, db, blocks, dir: o.dir, dirFd, log, xattrs: xattrIo, apply: false })
          log(`rewindfs: discarded; ${o.dir} holds its original content (${r.frozen} paths frozen)`)
          if (r.unfrozen !== undefined) { log(unfrozenWarning(o.dir, r.unfrozen)); (outcome.warnings ??= []).push(unfrozenWarning(o.dir, r.unfrozen).replace(/^rewindfs: warning: /, '')) }
          state.session++
        } catch (e: any) {
          // the next mount goes on in this session, reading the directory (as before freezing existed)
          log(`rewindfs: discarded; ${o.dir} holds its original content, but freezing it failed (${e.message}): the checkpoints of this session read it from the directory, so edit it only through a mount`)
        }
        state.mounted = false
      }
      await gens.saveState(ws)
    } catch (e: any) {
      outcome.ok = false
      outcome.errors.push(e.message)
      if (isNoSpace(e)) log(`rewindfs: unmount failed: the store's filesystem is full, the end of the unmount could not be recorded (${e.message}); nothing is lost: free space there, then rewindfs mount ${o.dir} (it resumes from checkpoint ${state.head}) and unmount again`)
      else log(`rewindfs: unmount failed: ${e.stack ?? e.message}`)
    } finally {
      phase = 'CLOSED'
      writeOutcome(o.store, outcome, log)
      ws.close()
      try { fs.closeSync(dirFd) } catch {}
      await server?.close().catch(() => {})
      await hooks?.close().catch(() => {})
      await removeConnectionFile(o.store).catch(() => {})
      if (published !== null) await unpublishConnection(published).catch(() => {})
      await ledger.close()
      blocks.close()
      await db.close().catch(() => {})
      resolveClosed()
    }
  }

  const service = new Service({
    workspace: ws,
    generations: gens,
    workspacePath: o.dir,
    storePath: o.store,
    protocol: PROTOCOL_VERSION,
    invalidate: async (plan) => { await fuse.invalidate(plan) },
    requests: () => fuse.requestCounts(),
    exportTo: async (id, dir) => await exportCheckpoint({ gens, ws, id, dir, workspaceDir: o.dir, xattrs: xattrIo }),
    unmount: beginUnmount,
    ledger,
    gc: async (policy) => {
      if (phase !== 'MOUNTED') throw new ApiError('E_NOT_MOUNTED', 'the workspace is unmounting; run rewindfs gc after the unmount (it opens the store itself)')
      if (gcRun) throw new ApiError('E_BUSY', 'a garbage collection is already running; wait for it to finish')
      const run = collectGarbage({ db, blocks, gens, ws: live, storeDir: o.store, log }, policy)
      gcRun = run
      try { return await run } finally { gcRun = null }
    }
  })
  /** closes what startDaemon opened, when it fails before it is running */
  const abandon = async (mounted: boolean): Promise<void> => {
    phase = 'CLOSED'
    if (mounted) await fuse.unmount().catch(async () => await run('fusermount', ['-uz', o.dir]).catch(() => {}))
    if (published !== null) await unpublishConnection(published).catch(() => {})
    await server?.close().catch(() => {})
    await hooks?.close().catch(() => {})
    ws.close()
    try { fs.closeSync(dirFd) } catch {}
    await ledger.close()
    blocks.close()
    await db.close().catch(() => {})
    resolveClosed()
  }
  let ready = false
  let token = ''
  const access = accessUser()
  try {
    token = await loadOrCreateToken(o.store)
    if (o.socket !== undefined) await clearStaleSocket(o.socket)
    const api = untilReady(service, () => ready)
    server = await startServer({ api, token, port, ...(o.socket !== undefined ? { socketPath: o.socket } : {}) })
    if (o.socket !== undefined) await grantSocket(o.socket, access)
    // the harness hooks' socket (proto/PROTOCOL.md §7); without it the websocket still serves
    try {
      hooks = await startHookSocket(path.join(o.store, HOOK_SOCKET), token, hookHandlers(async (label, meta) => {
        const cp = await api.mark({ label, meta })
        server?.broadcast({ event: 'checkpoint', checkpoint: cp })
        return cp
      }, () => gens.checkpoints.values()), tokenPath(o.store))
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
    // served from here on: a client that finds the files below (or polls for daemon.json) can use it at once
    ready = true
    const info = { port: server.port, socket: server.socketPath, pid: process.pid, workspace: o.dir }
    // discovery's files first: the CLI's mount returns once daemon.json exists, and clients may look them up at once
    try {
      published = await publishConnection({ info, store: o.store, token, access })
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
 * The store's effect ledger for a daemon: occurrences left intent or pending
 * by the previous daemon become unknown (fail closed), the actor of a begin
 * is the current head, generation and branch; the external-command pattern
 * file is written with the defaults when absent. A damaged ledger is
 * logged: every begin is then refused until it is fixed.
 */
async function openLedger (store: string, gens: Generations, log: (line: string) => void): Promise<Ledger> {
  const ledger = await Ledger.open(store, { recoverOpen: true, actor: () => ({ checkpoint: gens.state.head, generation: gens.state.generation, branch: gens.state.branch }) })
  if (ledger.damaged.length > 0) log(`rewindfs: warning: ${ledger.damaged[0].message}; every external effect will be refused (E_LEDGER_CORRUPT) until the ledger is fixed: rewindfs verify lists the problems`)
  try { writeDefaultPatterns(store) } catch (e: any) { log(`rewindfs: warning: could not write the external-command patterns (${e.message}); the defaults apply`) }
  return ledger
}

/**
 * `api` answering E_NOT_MOUNTED until `ready()` (the server listens before
 * the workspace is mounted, so that a bad port fails before the mount).
 */
function untilReady (api: Service, ready: () => boolean): Service {
  return new Proxy(api, {
    get (target, key, receiver) {
      const v = Reflect.get(target, key, receiver)
      if (typeof v !== 'function') return v
      return (...args: unknown[]) => {
        if (!ready()) throw new ApiError('E_NOT_MOUNTED', 'the daemon is still mounting the workspace; try again in a moment')
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
