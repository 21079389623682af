/**
 * Starting the background daemon (`mount`) and reading what it said: the
 * CLI's own entry point to spawn, waiting for its connection file, and the
 * tail of its log in the store.
 */
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import type { spawn } from 'node:child_process'
import { fullDiskNote } from '../store/diskfull.js'
import { CONNECTION_FILE } from '../proto/messages.js'
import { CliError } from './errors.js'

/** dist/cli/main.js: what `mount` runs as `node CLI_MAIN daemon DIR ...`. */
export const CLI_MAIN = fileURLToPath(new URL('./main.js', import.meta.url))

/**
 * Waits (up to 60 s, polling every 50 ms) until the daemon `pid` has written
 * its connection file, or throws CliError with why it did not start: this
 * daemon's lines of its log, else what it said on its start channel
 * (`said`; its log file may be on a full disk), and whether the store's
 * filesystem is full.
 */
export async function waitReady (store: string, dir: string, pid: number, logFile: string, logStart: number, child: ReturnType<typeof spawn>, said: () => string): Promise<void> {
  let exited: number | null = null
  child.on('exit', (code, sig) => { exited = code ?? (sig ? 128 + (os.constants.signals[sig] ?? 0) : 1) })
  const deadline = Date.now() + 60000
  while (Date.now() < deadline) {
    try {
      const info = JSON.parse(fs.readFileSync(path.join(store, CONNECTION_FILE), 'utf8'))
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
export function logTail (logFile: string, start: number, n = 8): string {
  try { return fs.readFileSync(logFile).subarray(start).toString('utf8').trim().split('\n').slice(-n).join('\n') } catch { return '' }
}

/** Size of `file` in bytes, 0 when it cannot be read. */
export function sizeOf (file: string): number {
  try { return fs.statSync(file).size } catch { return 0 }
}
