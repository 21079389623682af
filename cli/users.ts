/**
 * Processes that use a mounted workspace (issue 11, item 3), found as
 * fuser(1) and lsof do: through /proc/PID's links (cwd, root, exe and every
 * fd). Nothing here stats inside the mount (a dead or wedged mount cannot
 * hang it): each link is read with readlink (the kernel names the target
 * without asking the filesystem), and a target whose path lies under the
 * workspace is confirmed to be on the mount itself, not on the directory
 * underneath it, by its mount id (mnt_id of /proc/PID/fdinfo/N for an fd;
 * for cwd, root and exe, of an O_PATH descriptor opened on the link, which
 * neither looks the path up nor opens the file). `rewindfs unmount`
 * refuses while any is found, as umount(8) does ("target is busy").
 */
import fs from 'node:fs'

/** One process using the mount: pid, command (/proc/PID/comm), and what it holds there, e.g. "working directory /w/sub". */
export interface MountUser { pid: number, command: string, uses: string }

/** The links of /proc/PID other than fds, with what they mean. */
const LINKS: Array<[string, string]> = [['cwd', 'working directory'], ['root', 'root directory'], ['exe', 'program']]

/** open(2)'s O_PATH on Linux (Node does not export it): a descriptor that only names a path. */
const O_PATH = 0o10000000

/** mnt_id from an fdinfo file's text, or null. */
function mntIdIn (fdinfo: string): number | null {
  const m = /^mnt_id:\s*(\d+)$/m.exec(fdinfo)
  return m ? Number(m[1]) : null
}

/** Mount id of what /proc link `link` points at (O_PATH descriptor, then our own fdinfo), or null when it cannot be told. */
function mntIdOfLink (link: string): number | null {
  let fd: number
  try { fd = fs.openSync(link, O_PATH) } catch { return null }
  try { return mntIdIn(fs.readFileSync(`/proc/self/fdinfo/${fd}`, 'utf8')) } catch { return null } finally { fs.closeSync(fd) }
}

/** Pids of `roots` and all their descendants (from /proc/PID/stat's ppid). */
export function withDescendants (roots: Iterable<number>, pids: number[]): Set<number> {
  const parent = new Map<number, number>()
  for (const pid of pids) {
    try {
      const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8')
      parent.set(pid, Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]))
    } catch {}
  }
  const out = new Set(roots)
  let grew = true
  while (grew) {
    grew = false
    for (const [pid, pp] of parent) if (!out.has(pid) && out.has(pp)) { out.add(pid); grew = true }
  }
  return out
}

/**
 * Every process but `exclude` (and their descendants) with its working
 * directory, root, program or an open file on the mount at `dir`
 * (absolute) whose mount id is `mntId` (null: judge by path alone): its
 * first such use each, in pid order. Processes that vanish, or whose links
 * cannot be read (another user's, without root), are skipped.
 * O(processes × open fds).
 */
export function mountUsers (dir: string, mntId: number | null, exclude: Iterable<number>): MountUser[] {
  const inside = (p: string): boolean => p === dir || p.startsWith(dir + '/')
  const onMount = (id: number | null): boolean => mntId === null || id === null || id === mntId
  let pids: number[]
  try { pids = fs.readdirSync('/proc').filter(n => /^\d+$/.test(n)).map(Number).sort((a, b) => a - b) } catch { return [] }
  const skip = withDescendants(exclude, pids)
  const out: MountUser[] = []
  for (const pid of pids) {
    if (skip.has(pid)) continue
    let uses: string | undefined
    for (const [link, what] of LINKS) {
      try {
        const p = `/proc/${pid}/${link}`
        const t = fs.readlinkSync(p)
        if (inside(t) && onMount(mntIdOfLink(p))) { uses = `${what} ${t}`; break }
      } catch {}
    }
    if (uses === undefined) {
      let fds: string[] = []
      try { fds = fs.readdirSync(`/proc/${pid}/fd`) } catch {}
      for (const fd of fds) {
        try {
          const t = fs.readlinkSync(`/proc/${pid}/fd/${fd}`)
          if (!inside(t)) continue
          let id: number | null = null
          try { id = mntIdIn(fs.readFileSync(`/proc/${pid}/fdinfo/${fd}`, 'utf8')) } catch {}
          if (onMount(id)) { uses = `open file ${t}`; break }
        } catch {}
      }
    }
    if (uses === undefined) continue
    let command = '?'
    try { command = fs.readFileSync(`/proc/${pid}/comm`, 'utf8').trim() } catch {}
    out.push({ pid, command, uses })
  }
  return out
}

/** One line per process (at most 10, then how many more). */
function userLines (users: MountUser[]): string {
  const shown = users.slice(0, 10).map(u => `  pid ${u.pid} (${u.command}): ${u.uses}`)
  if (users.length > 10) shown.push(`  ... and ${users.length - 10} more`)
  return shown.join('\n')
}

/** What `unmount --lazy` says after detaching while `users` were inside: who they are and what they now get. */
export function leftInsideMessage (dir: string, users: MountUser[]): string {
  return `detached ${dir} while ${users.length} process${users.length === 1 ? '' : 'es'} still used it; ${users.length === 1 ? 'it gets' : 'they get'} "Transport endpoint is not connected" there from now on (cd out, or restart ${users.length === 1 ? 'it' : 'them'}):\n${userLines(users)}`
}

/** The refusal message: one line per process (at most 10), then what to do. */
export function busyMessage (dir: string, users: MountUser[]): string {
  return `${dir} is in use by ${users.length} process${users.length === 1 ? '' : 'es'}, so it stays mounted:\n${userLines(users)}\n` +
    'stop them or cd out of it, then unmount again; or rewindfs unmount --lazy detaches now (those processes then get "Transport endpoint is not connected")'
}
