/** The `mount DIR` command: version a directory in place (starts the daemon in the background, or in this process with --foreground). */
import fs from 'node:fs'
import path from 'node:path'
import { spawn } from 'node:child_process'
import { parsePort, parseSize, envReserve } from '../parse.js'
import { defaultStore, register, registered } from '../../daemon/paths.js'
import { mountState, fuseMounts } from '../../daemon/mounts.js'
import { startDaemon, checkFuseAvailable } from '../../daemon/daemon.js'
import { fullDiskNote } from '../../store/diskfull.js'
import { safeLog, guardStdio } from '../../daemon/log.js'
import { realCwd, warnCwdBelow } from '../output.js'
import { CliError } from '../errors.js'
import { logTail, CLI_MAIN, waitReady } from '../daemon-start.js'
import { armStop } from '../stop.js'
import type { Command } from 'commander'

/** Adds `mount` to the program `p`. */
export function registerMount (p: Command): void {
  p.command('mount').argument('<dir>', 'directory to version in place')
    .description('Mount DIR through rewindfs: you keep working in DIR; every write is versioned.')
    .option('--store <dir>', 'store directory (default: under $REWINDFS_HOME, /var/lib/rewindfs for root)')
    .option('--foreground', 'run the daemon in this process (logs to stderr) instead of in the background')
    .option('--port <n>', 'loopback TCP port for the protocol, 0..65535 (default 0: any free port)', parsePort)
    .option('--socket <path>', 'serve the protocol on this unix socket instead of TCP (mode 0600; under sudo owned by the user who ran sudo)', (v: string) => path.resolve(v))
    .option('--reserve <size>', 'space kept free on the store\'s filesystem for checkpoints; new data is refused with ENOSPC below it (e.g. 64MB, 1GB; default $REWINDFS_RESERVE or 64MB)', parseSize)
    .addHelpText('after', '\nExample:\n  rewindfs mount ~/project && cd ~/project && rewindfs checkpoint -m "before refactor"')
    .action(async (dir: string, o: { store?: string, foreground?: boolean, port?: number, socket?: string, reserve?: number }) => {
      if (dir.trim() === '') throw new CliError('rewindfs mount needs a directory, and was given an empty name (an unset shell variable?): rewindfs mount DIR, e.g. rewindfs mount ~/project, or rewindfs mount . for the current directory')
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
        const d = await startDaemon({ dir: abs, store, port: o.port, socket: o.socket, reserve: o.reserve ?? envReserve(), log: safeLog(2) })
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
      const args = [CLI_MAIN, 'daemon', abs, '--store', store, '--start-fd', '3']
      if (o.port !== undefined) args.push('--port', String(o.port))
      if (o.socket !== undefined) args.push('--socket', o.socket)
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
}
