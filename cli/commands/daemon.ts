/** The `daemon DIR (hidden)` command: the daemon process `mount` starts. */
import path from 'node:path'
import { parsePort, parseSize, envReserve } from '../parse.js'
import { register } from '../../daemon/paths.js'
import { startDaemon } from '../../daemon/daemon.js'
import { safeLog, guardStdio, startChannel } from '../../daemon/log.js'
import { alive } from '../locate.js'
import { armStop } from '../stop.js'
import type { Command } from 'commander'

/** Adds `daemon` to the program `p`. */
export function registerDaemon (p: Command): void {
  p.command('daemon', { hidden: true }).argument('<dir>').requiredOption('--store <dir>').option('--port <n>', '', parsePort)
    .option('--socket <path>', '', (v: string) => path.resolve(v))
    .option('--reserve <size>', '', parseSize)
    .option('--start-fd <n>', 'a pipe to the CLI that started it: what it logs until it is ready goes there too', v => Number(v))
    .action(async (dir: string, o: { store: string, port?: number, socket?: string, reserve?: number, startFd?: number }) => {
      // stderr is daemon.log in the store: a write that fails there (full disk) must not end the daemon
      guardStdio()
      const channel = startChannel(o.startFd)
      const log = safeLog(2, channel.log)
      let d
      try {
        register(path.resolve(dir), path.resolve(o.store))
        d = await startDaemon({ dir: path.resolve(dir), store: path.resolve(o.store), port: o.port, socket: o.socket, reserve: o.reserve ?? envReserve(), log })
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
}
