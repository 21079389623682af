/**
 * Mount-point checks from /proc/self/mountinfo (proc(5)), so a stale mount
 * left by a killed daemon is detected and cleared instead of failing with
 * "Transport endpoint is not connected".
 */
import fs from 'node:fs'
import path from 'node:path'

/** Octal escapes of mountinfo fields (space is \040). */
function unescape (s: string): string {
  return s.replace(/\\([0-7]{3})/g, (_m, o: string) => String.fromCharCode(parseInt(o, 8)))
}

/** Mount points of FUSE filesystems, absolute; only rewindfs's own (fsname "rewindfs") with `ours`. */
export function fuseMounts (ours = false): string[] {
  let text = ''
  try { text = fs.readFileSync('/proc/self/mountinfo', 'utf8') } catch { return [] }
  const out: string[] = []
  for (const line of text.split('\n')) {
    const [left, right] = line.split(' - ')
    if (!left || !right) continue
    const mnt = unescape(left.split(' ')[4] ?? '')
    const [fstype = '', source = ''] = right.split(' ')
    if ((fstype === 'fuse' || fstype.startsWith('fuse.')) && (!ours || unescape(source) === 'rewindfs')) out.push(mnt)
  }
  return out
}

/**
 * 'none' when `dir` is not a FUSE mount point, 'mounted' when it is one
 * that answers (statfs), 'stale' when it is one whose daemon is gone
 * (ENOTCONN).
 * Never call this from the daemon on its own live mount.
 */
export function mountState (dir: string): 'none' | 'mounted' | 'stale' {
  const abs = path.resolve(dir)
  if (!fuseMounts().includes(abs)) return 'none'
  // statfs, not stat: the kernel answers stat of a mount point from its
  // attribute cache (60 s timeouts) even after the daemon died; statfs
  // always asks the daemon
  try { fs.statfsSync(abs); return 'mounted' } catch (e: any) {
    if (e.code === 'ENOTCONN' || e.code === 'ECONNABORTED' || e.code === 'ENXIO') return 'stale'
    return 'mounted'
  }
}

/**
 * The mount id (mountinfo's first field) of the topmost mount whose mount
 * point is `dir` (absolute), or null when nothing is mounted there. Reads
 * only /proc/self/mountinfo: never touches the mount.
 */
export function mountIdOf (dir: string): number | null {
  let text = ''
  try { text = fs.readFileSync('/proc/self/mountinfo', 'utf8') } catch { return null }
  let id: number | null = null
  for (const line of text.split('\n')) {
    const f = line.split(' ')
    if (f.length > 4 && unescape(f[4]) === dir) id = Number(f[0])
  }
  return id
}
