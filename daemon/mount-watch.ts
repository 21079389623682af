/**
 * Noticing that the workspace's mount ended from outside (issue 11, item
 * 2): `fusermount -u DIR`, `umount DIR` or `umount -l DIR` remove the mount
 * without asking the daemon. The daemon then looks for its mount point in
 * /proc/self/mountinfo once a second (it must never touch the mount itself);
 * when it is gone, the daemon seals a final checkpoint, writes back (or keeps
 * the store for the next mount when write-back is impossible) and exits.
 * Not covered: a connection aborted through /sys/fs/fuse/connections/N/abort
 * leaves the mount point listed (dead, ENOTCONN) until it is unmounted; the
 * daemon notices once it is.
 */
import { fuseMounts } from './mounts.js'

/** How often the mount table is read, ms. One read of /proc/self/mountinfo is ~0.1 ms. */
export const WATCH_INTERVAL_MS = 1000

/** True while `dir` (absolute) is a FUSE mount point in this process's mount namespace. */
export function stillMounted (dir: string): boolean {
  return fuseMounts().includes(dir)
}

/**
 * Calls `onGone` once, the first time `dir` is no longer a FUSE mount point
 * (checked every `intervalMs`). Returns a function that stops watching.
 * The timer does not keep the process alive.
 */
export function watchMount (dir: string, onGone: () => void, intervalMs = WATCH_INTERVAL_MS): () => void {
  const timer = setInterval(() => {
    if (stillMounted(dir)) return
    clearInterval(timer)
    onGone()
  }, intervalMs)
  timer.unref()
  return () => clearInterval(timer)
}
