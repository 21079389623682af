/**
 * The daemon's log when it runs in the background: its stderr is a file in
 * the store directory (daemon.log), which is on the disk that may fill up.
 * A failed write to it (ENOSPC, EDQUOT, EIO, EPIPE) must never end the
 * daemon: the line is dropped, counted, and the count is said in the next
 * line that can be written.
 */
import fs from 'node:fs'

/** A log function: one line (without its newline). */
export type LogFn = (line: string) => void

/**
 * A log that writes each line to `fd` with one write(2), never throws and
 * drops the lines that cannot be written (counted; the next line that can
 * be written is preceded by how many were dropped and why).
 * `tee`, when given, also gets every line (the start channel, see cli.ts);
 * it must not throw either.
 */
export function safeLog (fd = 2, tee?: LogFn): LogFn {
  let dropped = 0
  let why = ''
  return (line: string) => {
    tee?.(line)
    try {
      if (dropped > 0) {
        fs.writeSync(fd, `rewindfs: ${dropped} log line${dropped === 1 ? ' was' : 's were'} dropped: the log could not be written (${why})\n`)
        dropped = 0
      }
      fs.writeSync(fd, line + '\n')
    } catch (e: any) {
      dropped++
      why = String(e?.code ?? e?.message ?? e)
    }
  }
}

/**
 * Makes process.stdout and process.stderr swallow write errors: without a
 * listener, an 'error' event of either (ENOSPC on a log file on a full disk,
 * EPIPE on a closed pipe) is an uncaught exception that ends the process,
 * silently, since its message cannot be written either.
 */
export function guardStdio (): void {
  for (const s of [process.stdout, process.stderr]) {
    if (s.listenerCount('error') === 0) s.on('error', () => {})
  }
}

/**
 * A log function that writes to the start channel fd (a pipe to the CLI
 * that spawned the daemon) while the daemon starts, so the CLI can say why
 * it did not start even when the log file cannot be written. `close()` ends
 * the channel (once the daemon is ready). Never throws.
 */
export function startChannel (fd: number | undefined): { log: LogFn, close: () => void } {
  let open = fd !== undefined
  return {
    log: (line: string) => {
      if (!open) return
      try { fs.writeSync(fd!, line + '\n') } catch { open = false }
    },
    close: () => {
      if (!open) return
      open = false
      try { fs.closeSync(fd!) } catch {}
    }
  }
}
