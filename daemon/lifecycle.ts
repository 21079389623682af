/**
 * The daemon's lifecycle as an explicit state machine (daemon.ts drives it):
 *
 *   OPENING ──mounted──▶ MOUNTED ──unmount──▶ UNMOUNTING ──closed──▶ CLOSED
 *      │                    ▲                     │
 *      │                    └──refused (full disk, kernel busy)
 *      └──failed before serving (bad port, mount refused)──────────▶ CLOSED
 *
 * OPENING: the store is open and the workspace built (fresh, or resumed
 * after a crash: resume.ts) but not served. MOUNTED: mounted and served;
 * gc and unmount are allowed. UNMOUNTING: step 1 (seal, check room) or step
 * 2 (kernel unmount, write-back, close) is running; a refused unmount goes
 * back to MOUNTED with nothing lost. CLOSED: everything is closed and
 * `closed` has resolved. Any other move is a bug and throws.
 */

/** A state of the daemon. */
export type DaemonState = 'OPENING' | 'MOUNTED' | 'UNMOUNTING' | 'CLOSED'

/** The moves allowed from each state. */
const NEXT: Record<DaemonState, readonly DaemonState[]> = {
  OPENING: ['MOUNTED', 'CLOSED'],
  MOUNTED: ['UNMOUNTING'],
  UNMOUNTING: ['MOUNTED', 'CLOSED'],
  CLOSED: []
}

/** The state of one daemon, with the promise that resolves when it is CLOSED. */
export class Lifecycle {
  private current: DaemonState = 'OPENING'
  private resolveClosed!: () => void
  /** resolves once the state is CLOSED (never rejects) */
  readonly closed: Promise<void> = new Promise<void>(resolve => { this.resolveClosed = resolve })

  /** The current state. */
  get state (): DaemonState { return this.current }

  /** True in state `s`. */
  is (s: DaemonState): boolean { return this.current === s }

  /**
   * Moves to `next`. Throws an Error naming both states when the move is
   * not one the diagram above allows (a bug in the daemon, never user input).
   */
  to (next: DaemonState): void {
    if (!NEXT[this.current].includes(next)) throw new Error(`rewindfs daemon: no move from ${this.current} to ${next} (a bug: please report it)`)
    this.current = next
    if (next === 'CLOSED') this.resolveClosed()
  }
}
