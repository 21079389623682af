#!/usr/bin/env node
/**
 * The rewindfs command line (commander). Every command but `mount` and
 * `daemon` is a client of the daemon's websocket protocol; `gc`, `verify`,
 * `log` and `pin` open the store themselves when its daemon is not running.
 */
import fs from 'node:fs'
import path from 'node:path'
import os from 'node:os'
import { spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { Command, Option } from 'commander'
import { parseCount, parseDuration, parsePort, parseSize } from './parse.js'
import { gcStore, GcError, DEFAULT_GC_POLICY } from '../fs/maint/gc.js'
import type { GcReport } from '../daemon/api.js'
import { RewindClient, RewindError, ConnectionError, TimeoutError } from '../client/client.js'
import { defaultStore, findWorkspace, register, registered } from '../daemon/paths.js'
import { mountState, fuseMounts } from '../daemon/mounts.js'
import { startDaemon, checkFuseAvailable, UNMOUNT_FILE, type UnmountOutcome } from '../daemon/daemon.js'
import { verifyStore, VerifyError, lossSummary, type VerifyReport } from '../fs/maint/verify.js'
import { repairStore, RepairError } from '../fs/maint/repair.js'
import { fullDiskNote } from '../store/diskfull.js'
import { safeLog, guardStdio, startChannel } from '../daemon/log.js'
import { logStopped, pinStopped, OfflineError } from '../daemon/offline.js'
import { fmtMs, printCheckpoint, realCwd, warnCwdBelow, missingAt, printGcReport } from './output.js'


const here = path.dirname(fileURLToPath(import.meta.url))

/** An error the CLI reports as one line and exit status 1. */
class CliError extends Error {}

function parseId (s: string): number {
  const m = /^#?(\d+)$/.exec(s.trim())
  if (!m || !Number.isSafeInteger(Number(m[1])) || Number(m[1]) < 1) throw new CliError(`"${s}" is not a checkpoint id: ids are numbers from 1, as shown by rewindfs log`)
  return Number(m[1])
}

/** The reserve from $REWINDFS_RESERVE (a size), or undefined for the default. */
function envReserve (): number | undefined {
  const v = process.env.REWINDFS_RESERVE
  if (v === undefined || v === '') return undefined
  try { return parseSize(v) } catch (e) {
    throw new CliError(`REWINDFS_RESERVE="${v}" is not a size: ${(e as Error).message} (or unset it for the default 64MB)`)
  }
}

/** The workspace a command acts on: -w, else the registered workspace containing the cwd. */
function locate (opts: { workspace?: string }): { workspace: string, store: string } {
  if (opts.workspace) {
    const ws = path.resolve(opts.workspace)
    const store = registered(ws)
    if (!store) {
      let exists = true
      try { fs.statSync(ws) } catch (e: any) { exists = e.code !== 'ENOENT' }
      throw new CliError(exists ? `${ws} has never been mounted by rewindfs: run rewindfs mount ${ws}` : `${ws} does not exist`)
    }
    return { workspace: ws, store }
  }
  const found = findWorkspace(process.cwd())
  if (!found) throw new CliError('not inside a rewindfs workspace: cd into a mounted workspace or give -w DIR')
  return found
}

async function connect (opts: { workspace?: string }): Promise<RewindClient> {
  const { workspace, store } = locate(opts)
  if (!fs.existsSync(path.join(store, 'daemon.json'))) throw new CliError(`the daemon for ${workspace} is not running: run rewindfs mount ${workspace}`)
  try {
    return await RewindClient.connect({ storeDir: store, timeoutMs: 120000 })
  } catch (e: any) {
    throw new CliError(`cannot reach the daemon for ${workspace} (${e.message}): if it died, run rewindfs mount ${workspace} to resume from its last checkpoint`)
  }
}

/**
 * The store a command that also works on a stopped store acts on (--store,
 * else the workspace's), and the workspace of its running daemon (null
 * when none runs: the command then opens the store itself).
 */
function storeOf (o: { workspace?: string, store?: string }): { store: string, daemon: string | null } {
  const loc = o.store !== undefined ? null : locate(o)
  const store = loc ? loc.store : path.resolve(o.store!)
  const d = runningDaemon(store)
  if (!d) return { store, daemon: null }
  const ws = loc?.workspace ?? d.workspace
  if (ws === null) throw new CliError(`the daemon (pid ${d.pid}) holds the store ${store} but its daemon.json names no workspace: run the command with -w WORKSPACE`)
  return { store, daemon: ws }
}

/** Runs `fn` on a stopped store; its errors (no store, locked, unknown checkpoint) become one line. */
async function offline<T> (fn: () => Promise<T>): Promise<T> {
  try { return await fn() } catch (e) {
    if (e instanceof OfflineError) throw new CliError(e.message)
    throw e
  }
}

async function withClient<T> (opts: { workspace?: string }, fn: (c: RewindClient) => Promise<T>): Promise<T> {
  const c = await connect(opts)
  try { return await fn(c) } finally { await c.close().catch(() => {}) }
}

/** The running daemon that holds `store` (pid and workspace from its daemon.json), or null when none runs. */
function runningDaemon (store: string): { pid: number, workspace: string | null } | null {
  let info: { pid?: unknown, workspace?: unknown }
  try { info = JSON.parse(fs.readFileSync(path.join(store, 'daemon.json'), 'utf8')) } catch { return null }
  if (typeof info.pid !== 'number' || !alive(info.pid)) return null
  return { pid: info.pid, workspace: typeof info.workspace === 'string' ? info.workspace : null }
}

/** True while process `pid` runs (a zombie waiting for its parent to reap it has exited). */
function alive (pid: number): boolean {
  try { process.kill(pid, 0) } catch { return false }
  try { return fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.[0] !== 'Z' } catch { return false }
}

/**
 * Waits until the daemon `pid` has written daemon.json, or fails with why it
 * did not start: this daemon's lines of its log, else what it said on its
 * start channel (`said`, its log file may be on a full disk), and whether
 * the store's filesystem is full.
 */
async function waitReady (store: string, dir: string, pid: number, logFile: string, logStart: number, child: ReturnType<typeof spawn>, said: () => string): Promise<void> {
  let exited: number | null = null
  child.on('exit', (code, sig) => { exited = code ?? (sig ? 128 + (os.constants.signals[sig] ?? 0) : 1) })
  const deadline = Date.now() + 60000
  while (Date.now() < deadline) {
    try {
      const info = JSON.parse(fs.readFileSync(path.join(store, 'daemon.json'), 'utf8'))
      if (info.pid === pid) return
    } catch {}
    if (exited !== null) break
    await new Promise(resolve => setTimeout(resolve, 50))
  }
  if (exited !== null) await new Promise(resolve => setTimeout(resolve, 50)) // the last bytes of the start channel
  const tail = logTail(logFile, logStart) || said().trim().split('\n').slice(-8).join('\n')
  const full = fullDiskNote(store, `run rewindfs mount ${dir} again`, tail)
  const how = exited !== null ? ` (exit ${exited})` : ' within 60 s'
  if (full) throw new CliError(`the daemon did not start${how}: ${full}${tail ? `\nit said:\n${tail}` : ''}\n(log: ${logFile})`)
  // the daemon's own one-line reason (startDaemon's errors say what to do)
  const last = tail.split('\n').at(-1) ?? ''
  if (exited !== null && last.startsWith('rewindfs: ')) throw new CliError(`the daemon did not start: ${last.slice(10)} (log: ${logFile})`)
  throw new CliError(`the daemon did not start${how}:\n${tail || '(it said nothing: no log line, nothing on its stderr)'}\n(full log: ${logFile})`)
}

/** The last `n` lines the log got after byte `start` (this daemon's: the log keeps earlier sessions' lines); '' when there are none. */
function logTail (logFile: string, start: number, n = 8): string {
  try { return fs.readFileSync(logFile).subarray(start).toString('utf8').trim().split('\n').slice(-n).join('\n') } catch { return '' }
}

/** Size of `file` in bytes, 0 when it cannot be read. */
function sizeOf (file: string): number {
  try { return fs.statSync(file).size } catch { return 0 }
}

export function program (): Command {
  const p = new Command('rewindfs')
    .description('A versioned workspace with real undo: mount a directory, checkpoint it, restore it exactly.')
    .version('0.1.0')
    .showHelpAfterError('(rewindfs --help, or rewindfs COMMAND --help, lists the options)')
  const ws = new Option('-w, --workspace <dir>', 'the workspace (default: the mounted workspace containing the current directory)')

  p.command('mount').argument('<dir>', 'directory to version in place')
    .description('Mount DIR through rewindfs: you keep working in DIR; every write is versioned.')
    .option('--store <dir>', 'store directory (default: under $REWINDFS_HOME, /var/lib/rewindfs for root)')
    .option('--foreground', 'run the daemon in this process (logs to stderr) instead of in the background')
    .option('--port <n>', 'loopback TCP port for the protocol, 0..65535 (default 0: any free port)', parsePort)
    .option('--reserve <size>', 'space kept free on the store\'s filesystem for checkpoints; new data is refused with ENOSPC below it (e.g. 64MB, 1GB; default $REWINDFS_RESERVE or 64MB)', parseSize)
    .addHelpText('after', '\nExample:\n  rewindfs mount ~/project && cd ~/project && rewindfs checkpoint -m "before refactor"')
    .action(async (dir: string, o: { store?: string, foreground?: boolean, port?: number, reserve?: number }) => {
      let abs = path.resolve(dir)
      try {
        if (!fs.statSync(dir).isDirectory()) throw new CliError(`${dir} is not a directory: rewindfs mounts a directory (mkdir a new one, or give the folder that holds your files)`)
        abs = fs.realpathSync(dir)
      } catch (e: any) {
        if (e instanceof CliError) throw e
        if (e.code === 'ENOENT') throw new CliError(`${dir} does not exist: create it first (mkdir -p ${dir})`)
        if (e.code !== 'ENOTCONN' && e.code !== 'ECONNABORTED') throw e
        // a dead mount left by a killed daemon: the daemon clears it and resumes
      }
      checkFuseAvailable()
      const outer = fuseMounts(true).find(mp => abs.startsWith(mp + '/'))
      if (outer) throw new CliError(`${abs} is inside the rewindfs workspace ${outer}: nested workspaces are not supported (a restore of the outer one would drop the inner mount); mount a directory outside it`)
      const inner = fuseMounts(true).find(mp => mp.startsWith(abs + '/'))
      if (inner) throw new CliError(`${abs} contains the rewindfs workspace ${inner}: nested workspaces are not supported (the outer mount would hide the inner one); unmount it first (rewindfs unmount -w ${inner}) or mount a directory that does not contain it`)
      const st = mountState(abs)
      if (st === 'mounted') throw new CliError(`${abs} is already mounted (mount point busy): rewindfs unmount -w ${abs} first`)
      const store = path.resolve(o.store ?? registered(abs) ?? defaultStore(abs))
      if (store === abs || store.startsWith(abs + '/')) throw new CliError(`the store ${store} would be inside the workspace ${abs}: give --store a directory outside it (or set REWINDFS_HOME)`)
      register(abs, store)
      const cwdBefore = realCwd()
      if (o.foreground) {
        guardStdio()
        const d = await startDaemon({ dir: abs, store, port: o.port, reserve: o.reserve ?? envReserve(), log: safeLog(2) })
        console.error(`rewindfs: ${abs} mounted (store ${store}); Ctrl-C unmounts and writes the final state back`)
        armStop(d)
        warnCwdBelow(abs, cwdBefore)
        await d.closed
        return
      }
      fs.mkdirSync(store, { recursive: true, mode: 0o700 })
      const logFile = path.join(store, 'daemon.log')
      let out: number
      try { out = fs.openSync(logFile, 'a') } catch (e: any) {
        throw new CliError(`cannot open the daemon's log ${logFile} (${e.message}): ${fullDiskNote(store, `run rewindfs mount ${abs} again`, String(e.code)) ?? 'check that the store directory is writable'}`)
      }
      // fd 3: the start channel, a pipe on which the daemon also says what it logs until it is ready
      const args = [path.join(here, 'main.js'), 'daemon', abs, '--store', store, '--start-fd', '3']
      if (o.port !== undefined) args.push('--port', String(o.port))
      if (o.reserve !== undefined) args.push('--reserve', String(o.reserve))
      const logStart = fs.fstatSync(out).size
      const child = spawn(process.execPath, args, { detached: true, stdio: ['ignore', out, out, 'pipe'] })
      fs.closeSync(out)
      let said = ''
      const channel = child.stdio[3] as NodeJS.ReadableStream & { destroy: () => void }
      channel.on('data', (b: Buffer) => { if (said.length < 65536) said += b.toString('utf8') })
      channel.on('error', () => {})
      try {
        await waitReady(store, abs, child.pid!, logFile, logStart, child, () => said)
      } finally { channel.destroy() }
      child.unref()
      console.log(`mounted ${abs} (daemon pid ${child.pid}, store ${store})`)
      // say what the daemon said about this start (a resume after a crash, a cleared mount)
      const lines = (logTail(logFile, logStart, 1000) || said).split('\n').filter(l => l.startsWith('rewindfs: ')).map(l => l.slice(10))
      for (const l of lines) console.log(l)
      warnCwdBelow(abs, cwdBefore)
    })

  p.command('daemon', { hidden: true }).argument('<dir>').requiredOption('--store <dir>').option('--port <n>', '', parsePort)
    .option('--reserve <size>', '', parseSize)
    .option('--start-fd <n>', 'a pipe to the CLI that started it: what it logs until it is ready goes there too', v => Number(v))
    .action(async (dir: string, o: { store: string, port?: number, reserve?: number, startFd?: number }) => {
      // stderr is daemon.log in the store: a write that fails there (full disk) must not end the daemon
      guardStdio()
      const channel = startChannel(o.startFd)
      const log = safeLog(2, channel.log)
      let d
      try {
        register(path.resolve(dir), path.resolve(o.store))
        d = await startDaemon({ dir: path.resolve(dir), store: path.resolve(o.store), port: o.port, reserve: o.reserve ?? envReserve(), log })
      } catch (e: any) {
        // startDaemon unmounted what it mounted; exit now, whatever handles the binding still holds
        log(`rewindfs: ${e?.message ?? e}`)
        channel.close()
        process.exit(1)
      }
      channel.close()
      armStop(d)
      await d.closed
      // everything is closed and written; the binding's idle thread handles would keep the loop alive for a while
      process.exit(0)
    })

  p.command('unmount').addOption(ws)
    .description('Unmount the workspace. DIR keeps the final state (checkpointed first), or its original content with --discard.')
    .option('--discard', 'leave the directory as it was before mount; changes since the last checkpoint are dropped, every checkpoint is kept')
    .addHelpText('after', '\nExample:\n  rewindfs unmount -w ~/project')
    .action(async (o: { workspace?: string, discard?: boolean }) => {
      const { workspace, store } = locate(o)
      let info: { pid: number }
      try { info = JSON.parse(fs.readFileSync(path.join(store, 'daemon.json'), 'utf8')) } catch {
        if (mountState(workspace) === 'stale') {
          await new Promise(resolve => spawn('fusermount', ['-uz', workspace]).on('exit', resolve))
          console.log(`cleared the dead mount on ${workspace}; run rewindfs mount ${workspace} to resume from its last checkpoint`)
          return
        }
        throw new CliError(`${workspace} is not mounted`)
      }
      const outcomeFile = path.join(store, UNMOUNT_FILE)
      const logFile = path.join(store, 'daemon.log')
      const logStart = sizeOf(logFile)
      fs.rmSync(outcomeFile, { force: true })
      // E_NO_SPACE here: the final checkpoint could not be written, the workspace stays mounted
      await withClient(o, async c => await c.unmount({ discard: o.discard === true }, { timeoutMs: 3600000 }))
      const deadline = Date.now() + 600000
      let outcome: UnmountOutcome | null = null
      while (Date.now() < deadline && alive(info.pid)) {
        await new Promise(resolve => setTimeout(resolve, 20))
        try { outcome = JSON.parse(fs.readFileSync(outcomeFile, 'utf8')) } catch {}
        if (outcome?.mounted === true) break
      }
      try { outcome = JSON.parse(fs.readFileSync(outcomeFile, 'utf8')) } catch {}
      if (!outcome) {
        if (alive(info.pid)) throw new CliError(`the daemon (pid ${info.pid}) is still unmounting ${workspace} after 10 minutes (a large write-back?); it goes on in the background: check with rewindfs status, or its log ${logFile}`)
        const tail = logTail(logFile, logStart)
        const full = fullDiskNote(store, `run rewindfs mount ${workspace} (it resumes from the store) and rewindfs unmount -w ${workspace} again`, tail)
        const said = tail ? `\nits last log lines:\n${tail}` : `\n(nothing in its log ${logFile})`
        if (full) throw new CliError(`the daemon (pid ${info.pid}) exited before it finished unmounting ${workspace}: ${full}${said}`)
        throw new CliError(`the daemon (pid ${info.pid}) exited before it finished unmounting ${workspace} (was it killed?): the directory may not hold the final state yet. Nothing is lost: rewindfs mount ${workspace} resumes from the store (do that before using the directory: until then checkpoints of this session still read it), and rewindfs unmount then finishes the job${said}`)
      }
      if (outcome.mounted === true) {
        throw new CliError(`the unmount of ${workspace} failed, it stays mounted and the daemon (pid ${info.pid}) keeps serving it: ${outcome.errors.join('; ')}. Nothing is lost: fix that, then rewindfs unmount again`)
      }
      if (outcome && !outcome.ok) {
        throw new CliError(`unmounted ${workspace}, but writing the final state back failed for ${outcome.errors.length} paths:\n  ${outcome.errors.slice(0, 20).join('\n  ')}${outcome.errors.length > 20 ? `\n  ... and ${outcome.errors.length - 20} more` : ''}\nNothing is lost: the store keeps the final state as checkpoint #${outcome.checkpoint}, and rewindfs mount ${workspace} resumes from it.`)
      }
      for (const w of outcome?.warnings ?? []) console.error(`rewindfs: warning: ${w}`)
      console.log(`unmounted ${workspace}${o.discard ? ' (discarded: the directory holds its original content; changes since the last checkpoint were dropped, every checkpoint is kept)' : ''}`)
    })

  p.command('checkpoint').addOption(ws)
    .description('Seal the current state as a checkpoint.')
    .option('-m, --message <label>', 'label of the checkpoint')
    .option('--json', 'print the checkpoint as JSON')
    .addHelpText('after', '\nExample:\n  rewindfs checkpoint -m "tests pass"')
    .action(async (o: { workspace?: string, message?: string, json?: boolean }) => {
      const c = await withClient(o, async cl => await cl.mark({ label: o.message }))
      if (o.json) console.log(JSON.stringify(c))
      else console.log(`checkpoint #${c.id} (${c.inodes} inodes, ${c.dirtyBytes} bytes written since the last one, ${fmtMs(c.ms)})`)
    })

  p.command('log').addOption(ws)
    .description('List checkpoints, newest first.')
    .option('--branch <name>', 'only this branch')
    .option('-n, --limit <n>', 'at most n checkpoints', v => parseCount(v, 1), 100)
    .option('--json', 'print JSON')
    .addHelpText('after', '\nWorks on a stopped workspace too (it reads the store, as gc and verify do).\n\nExample:\n  rewindfs log -n 10')
    .option('--store <dir>', 'a store directory (default: the workspace\'s); read directly when its daemon is not running')
    .action(async (o: { workspace?: string, store?: string, branch?: string, limit: number, json?: boolean }) => {
      const { store, daemon } = storeOf(o)
      const [list, total] = daemon
        ? await withClient({ workspace: daemon }, async c => [await c.log({ branch: o.branch, limit: o.limit }), (await c.status()).checkpoints] as const)
        : await offline(async () => { const r = await logStopped(store, { branch: o.branch, limit: o.limit }); return [r.list, r.total] as const })
      if (o.json) console.log(JSON.stringify(list))
      else {
        const width = Math.max(0, ...list.map(c => String(c.id).length))
        for (const c of list) printCheckpoint(c, width)
        if (o.branch === undefined && list.length < total) console.log(`(showing ${list.length} of ${total} checkpoints; -n ${total} shows all)`)
      }
    })

  p.command('diff').addOption(ws).argument('<a>', 'checkpoint id').argument('[b]', 'checkpoint id (default: the live workspace)')
    .description('Paths that differ between two checkpoints, or a checkpoint and now.')
    .option('--json', 'print JSON')
    .addHelpText('after', '\nExample:\n  rewindfs diff 3        # what changed since checkpoint 3')
    .action(async (a: string, b: string | undefined, o: { workspace?: string, json?: boolean }) => {
      const d = await withClient(o, async c => await c.diff({ a: parseId(a), b: b === undefined ? undefined : parseId(b) }))
      if (o.json) console.log(JSON.stringify(d))
      else for (const e of d) console.log(`${{ added: 'A', deleted: 'D', modified: 'M', meta: 'm', type: 'T' }[e.change]} ${e.path}`)
    })

  p.command('restore').addOption(ws).argument('<id>', 'checkpoint id')
    .description('Make the workspace exactly checkpoint ID again (unsaved changes are checkpointed first).')
    .option('--json', 'print JSON')
    .addHelpText('after', '\nExample:\n  rewindfs restore 3')
    .action(async (id: string, o: { workspace?: string, json?: boolean }) => {
      const r = await withClient(o, async c => await c.restore({ id: parseId(id) }))
      if (o.json) console.log(JSON.stringify(r))
      else console.log(`restored checkpoint #${r.checkpoint} (${r.changed} paths changed, ${fmtMs(r.ms)}); now on branch ${r.branch}${r.saved !== null ? `; the unsaved changes it replaced are checkpoint #${r.saved}` : ''}`)
    })

  p.command('show').addOption(ws).argument('<ref>', 'ID:PATH, a file at a checkpoint')
    .description('Print a file (or list a directory) as it was at a checkpoint.')
    .addHelpText('after', '\nExample:\n  rewindfs show 3:src/index.js')
    .action(async (ref: string, o: { workspace?: string }) => {
      const i = ref.indexOf(':')
      if (i < 0) throw new CliError(`"${ref}" is not ID:PATH (for example 3:src/index.js)`)
      const id = parseId(ref.slice(0, i))
      const p0 = ref.slice(i + 1).replace(/^\/+/, '')
      await withClient(o, async c => {
        const st = await c.stat({ id, path: p0 })
        if (!st) throw new CliError(await missingAt(c, id, p0))
        if (st.type === 'dir') { for (const e of await c.readdir({ id, path: p0 })) console.log(`${e.type === 'dir' ? e.path.split('/').pop() + '/' : e.path.split('/').pop()}`); return }
        if (st.type === 'symlink') { console.log(`-> ${st.target}`); return }
        for (let off = 0; off < st.size;) {
          const b = await c.read({ id, path: p0, offset: off, length: 4 * 1024 * 1024 })
          if (b.length === 0) break
          process.stdout.write(b)
          off += b.length
        }
      })
    })

  p.command('export').addOption(ws).argument('<id>', 'checkpoint id').argument('<dir>', 'destination (new or empty, outside the workspace)')
    .description('Write a checkpoint as plain files into DIR.')
    .addHelpText('after', '\nExample:\n  rewindfs export 3 /tmp/at-3')
    .action(async (id: string, dir: string, o: { workspace?: string }) => {
      const r = await withClient(o, async c => await c.export({ id: parseId(id), dir: path.resolve(dir) }))
      console.log(`exported checkpoint #${id} to ${path.resolve(dir)} (${r.files} paths, ${r.bytes} bytes)`)
    })

  p.command('exec').addOption(ws).argument('<cmd...>', 'the command and its arguments (after --)')
    .description('Run a command (in the current directory), checkpointing the workspace first: wrap an agent\'s shell tool with it and every command gets a checkpoint before it runs.')
    .option('--checkpoint-each', 'mark a checkpoint before the command (the default; kept for scripts that say it)')
    .option('--no-checkpoint', 'run without marking')
    .addHelpText('after', '\nExample:\n  rewindfs exec --checkpoint-each -- npm test\n  (the checkpoint is labelled "before: npm test"; its segment metadata holds the command)')
    .action(async (cmd: string[], o: { workspace?: string, checkpoint?: boolean }) => {
      if (o.checkpoint !== false) {
        const label = `before: ${cmd.join(' ')}`.slice(0, 1000)
        const c = await withClient(o, async cl => await cl.mark({ label, meta: { exec: cmd, cwd: process.cwd() } }))
        process.stderr.write(`rewindfs: checkpoint #${c.id} before ${cmd[0]}\n`)
      }
      const child = spawn(cmd[0], cmd.slice(1), { stdio: 'inherit' })
      const code = await new Promise<number>((resolve) => {
        child.on('error', (e: any) => { console.error(`rewindfs: cannot run ${cmd[0]}: ${e.code === 'ENOENT' ? 'command not found' : e.message}`); resolve(127) })
        child.on('exit', (c, sig) => resolve(c ?? (sig ? 128 + (os.constants.signals[sig] ?? 0) : 1)))
      })
      process.exitCode = code
    })

  p.command('status').addOption(ws)
    .description('Show the workspace, branch, head checkpoint and unsaved bytes.')
    .option('--json', 'print JSON')
    .addHelpText('after', '\nExample:\n  rewindfs status')
    .action(async (o: { workspace?: string, json?: boolean }) => {
      // unsaved paths as `diff <head>` counts them, without the root line (record counts would include directories listed for the first time)
      const [s, changed] = await withClient(o, async c => {
        const st = await c.status()
        return [st, o.json || st.head === null ? null : (await c.diff({ a: st.head })).filter(e => e.path !== '/').length] as const
      })
      if (o.json) { console.log(JSON.stringify(s)); return }
      console.log(`workspace  ${s.workspace}\nstore      ${s.store}\nbranch     ${s.branch}\nhead       ${s.head === null ? '(none)' : '#' + s.head}\ninodes     ${s.inodes}\nunsaved    ${changed === null ? '-' : `${changed} paths changed`} since the head (${s.dirtyBytes} bytes written)\ndaemon     pid ${s.pid}, protocol ${s.protocol}`)
    })
  p.command('pin').addOption(ws).argument('<id>', 'checkpoint id')
    .description('Pin a checkpoint: garbage collection never removes it (--unpin undoes it).')
    .option('--unpin', 'remove the pin')
    .option('--store <dir>', 'a store directory (default: the workspace\'s); written directly when its daemon is not running')
    .addHelpText('after', '\nWorks on a stopped workspace too (it writes the pin into the store).\n\nExample:\n  rewindfs pin 12          # keep #12 whatever gc\'s policy says')
    .action(async (id: string, o: { workspace?: string, store?: string, unpin?: boolean }) => {
      const n = parseId(id)
      const { store, daemon } = storeOf(o)
      const c = daemon
        ? await withClient({ workspace: daemon }, async cl => await cl.pin({ id: n, pinned: o.unpin !== true }))
        : await offline(async () => await pinStopped(store, n, o.unpin !== true))
      console.log(`checkpoint #${c.id} ${c.pinned ? 'pinned' : 'unpinned'}`)
    })

  p.command('gc').addOption(ws)
    .description('Remove the checkpoints the retention policy does not keep, and everything only they used; compact packs; print what went and the space returned. Works while the workspace is mounted (asks the daemon) and on a stopped store.')
    .option('--keep-last <n>', 'keep the newest N checkpoints (default 50)', v => parseCount(v))
    .option('--abandoned-after <duration>', 'a branch with no checkpoint newer than this is abandoned and its checkpoints go (e.g. 7d, 12h, 0 = every branch but the current one; default 7d)', v => parseDuration(v))
    .option('--run-idle <duration>', 'a run that marked nothing for this long is over: its checkpoints are no longer kept for it (default 1d)', v => parseDuration(v))
    .option('--dry-run', 'say what would be removed, remove nothing')
    .option('--store <dir>', 'a stopped store directory (default: the workspace\'s)')
    .option('--json', 'print the report as JSON')
    .addHelpText('after', '\nAlways kept: the head, every ancestor of the current branch\'s head and of live branches\' heads, pinned checkpoints (rewindfs pin), and checkpoints of runs still going.\n\nExample:\n  rewindfs gc --keep-last 20 --abandoned-after 2d')
    .action(async (o: { workspace?: string, keepLast?: number, abandonedAfter?: number, runIdle?: number, dryRun?: boolean, store?: string, json?: boolean }) => {
      const policy = {
        keepLast: o.keepLast ?? DEFAULT_GC_POLICY.keepLast,
        abandonedAfterMs: o.abandonedAfter ?? DEFAULT_GC_POLICY.abandonedAfterMs,
        runIdleMs: o.runIdle ?? DEFAULT_GC_POLICY.runIdleMs,
        dryRun: o.dryRun === true
      }
      const loc = o.store !== undefined ? null : locate(o)
      const store = loc ? loc.store : path.resolve(o.store!)
      const d = runningDaemon(store)
      let r: GcReport
      if (d) {
        if (!loc) throw new CliError(`the daemon (pid ${d.pid}) holds the store ${store}: run rewindfs gc -w ${d.workspace ?? 'WORKSPACE'} to ask it`)
        r = await withClient(o, async c => await c.gc(policy, { timeoutMs: 3600000 }))
      } else {
        try { r = await gcStore(store, policy) } catch (e) {
          if (e instanceof GcError) throw new CliError(e.message)
          throw e
        }
      }
      if (o.json) { console.log(JSON.stringify(r)); return }
      printGcReport(r)
    })

  p.command('verify').addOption(ws)
    .description('Check the store of a stopped workspace: every checkpoint\'s records, references and blocks (re-hashed). Exit 0 when clean, 1 when problems were found.')
    .option('--store <dir>', 'verify this store directory (default: the workspace\'s)')
    .option('--repair', 'rebuild what can be rebuilt (a damaged metadata database with LevelDB\'s repair; the block index from the records in the packs), then verify again and say what could not be rebuilt')
    .option('--json', 'print the report as JSON')
    .addHelpText('after', '\nThe daemon must not be running (verify reads the store alone): unmount first.\n\nExample:\n  rewindfs unmount -w ~/project && rewindfs verify -w ~/project\n  rewindfs verify --store /var/lib/rewindfs/stores/x --repair')
    .action(async (o: { workspace?: string, store?: string, json?: boolean, repair?: boolean }) => {
      const loc = o.store !== undefined ? null : locate(o)
      const store = loc ? loc.store : path.resolve(o.store!)
      const d = runningDaemon(store)
      if (d) {
        const ws = loc?.workspace ?? d.workspace
        const unmount = ws !== null ? `rewindfs unmount -w ${ws}` : `rewindfs unmount (in the workspace whose store is ${store})`
        throw new CliError(`the daemon for this workspace is running (pid ${d.pid}) and holds the store; verify reads the store alone: ${unmount}, then rewindfs verify${o.store !== undefined ? ` --store ${store}` : ''}${o.repair ? ' --repair' : ''}`)
      }
      let r: VerifyReport
      if (o.repair) {
        let rep
        try { rep = await repairStore(store, { reserve: envReserve() }) } catch (e) {
          if (e instanceof RepairError) throw new CliError(e.message)
          throw e
        }
        if (o.json) { console.log(JSON.stringify(rep)); if (!rep.after.ok) process.exitCode = 1; return }
        if (rep.before) console.log(`before repair: ${rep.before.ok ? 'clean' : `${rep.before.problems.length} problem${rep.before.problems.length === 1 ? '' : 's'}`}`)
        for (const a of rep.actions.slice(0, 50)) console.log(`repaired: ${a}`)
        if (rep.actions.length > 50) console.log(`repaired: ... and ${rep.actions.length - 50} more (--json lists all)`)
        if (rep.actions.length === 0) console.log('nothing to repair')
        if (!rep.after.ok) console.log('could not be repaired (these need a backup of the store, or the checkpoints they name are lost):')
        r = rep.after
      } else {
        try { r = await verifyStore(store) } catch (e) {
          if (e instanceof VerifyError) throw new CliError(e.message)
          throw e
        }
      }
      if (o.json) console.log(JSON.stringify(r))
      else {
        for (const pr of r.problems) console.log(`${pr.code}: ${pr.message}`)
        const lost = lossSummary(r, o.repair === true)
        if (lost) console.log(`LOST: ${lost}`)
        const c = r.counts
        console.log(`${r.ok ? 'clean' : `${r.problems.length} problem${r.problems.length === 1 ? '' : 's'}`}: ${c.checkpoints} checkpoints, ${c.tables} inode tables, ${c.records} records, ${c.frozen} frozen lower paths, ${c.blocks} blocks (${c.bytes} bytes), ${c.ledgerEntries} effect ledger entries checked in ${r.store}`)
      }
      if (!r.ok) process.exitCode = 1
    })
  return p
}

/**
 * SIGINT and SIGTERM unmount `d`. When the unmount fails before anything
 * was torn down (the final checkpoint cannot be written: full disk), the
 * daemon has logged why and goes on serving; the signals are armed again so
 * that a later Ctrl-C unmounts. A second signal while an unmount runs ends
 * the process (the default action).
 */
function armStop (d: { shutdown: (discard: boolean) => Promise<void> }): void {
  const stop = (): void => {
    d.shutdown(false).then(() => {}, () => {
      process.removeListener('SIGINT', stop)
      process.removeListener('SIGTERM', stop)
      armStop(d)
    })
  }
  process.once('SIGINT', stop)
  process.once('SIGTERM', stop)
}

/** Runs the CLI; errors become one line on stderr and exit status 1. */
export async function main (argv: string[]): Promise<void> {
  try {
    await program().parseAsync(argv)
  } catch (e: any) {
    if (e instanceof RewindError) console.error(`rewindfs: ${e.message} [${e.code}]`)
    else if (e instanceof CliError || e instanceof ConnectionError || e instanceof TimeoutError) console.error(`rewindfs: ${e.message}`)
    else console.error(`rewindfs: ${e?.message ?? e}`)
    process.exitCode = 1
  }
}

if (process.argv[1] && fs.realpathSync(process.argv[1]) === fileURLToPath(import.meta.url)) await main(process.argv)
