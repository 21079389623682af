/**
 * SIGINT and SIGTERM unmount `d`. When the unmount fails before anything
 * was torn down (the final checkpoint cannot be written: full disk), the
 * daemon has logged why and goes on serving; the signals are armed again so
 * that a later Ctrl-C unmounts. A second signal while an unmount runs ends
 * the process (the default action).
 */
export function armStop (d: { shutdown: (discard: boolean) => Promise<void> }): void {
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
