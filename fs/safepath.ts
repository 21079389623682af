/**
 * Resolving a path the daemon was given (an export destination) without
 * ever touching its own mount: a stat of a path inside the mount would wait
 * for the daemon's own JavaScript thread and deadlock it (DESIGN.md
 * "Workspace and mount"). Symlinks are followed by hand, and every prefix is
 * compared with the forbidden roots BEFORE it is looked at.
 */
import fs from 'node:fs'
import path from 'node:path'

/** Thrown when the path leads into a forbidden root (the mount). */
export class InsideMountError extends Error {}

/** Mount points showing the same filesystem as `mountpoint` (itself and its bind mounts), from mountinfo. */
export function sameMounts (mountpoint: string): string[] {
  const out = [path.resolve(mountpoint)]
  let text = ''
  try { text = fs.readFileSync('/proc/self/mountinfo', 'utf8') } catch { return out }
  const lines = text.split('\n').map(l => l.split(' '))
  const dev = lines.find(f => unescape(f[4] ?? '') === out[0])?.[2]
  if (dev) for (const f of lines) if (f[2] === dev && !out.includes(unescape(f[4]))) out.push(unescape(f[4]))
  return out
}

function unescape (s: string): string {
  return s.replace(/\\([0-7]{3})/g, (_m, o: string) => String.fromCharCode(parseInt(o, 8)))
}

/**
 * The real absolute path of `p` (which need not exist; missing components
 * are kept as given), following symlinks by hand. Throws InsideMountError
 * when any step lands at or below one of `forbidden`, without having looked
 * at that step.
 */
export function resolveOutside (p: string, forbidden: string[]): string {
  const inside = (q: string): boolean => forbidden.some(f => q === f || q.startsWith(f.endsWith('/') ? f : f + '/'))
  let todo = path.resolve(p).split('/').filter(Boolean)
  let cur = '/'
  let links = 0
  if (inside(cur)) throw new InsideMountError(`${p} is inside the workspace mount`)
  while (todo.length > 0) {
    const comp = todo.shift()!
    if (comp === '.') continue
    if (comp === '..') { cur = path.dirname(cur); continue }
    const next = cur === '/' ? `/${comp}` : `${cur}/${comp}`
    if (inside(next)) throw new InsideMountError(`${p} leads into the workspace mount (${next})`)
    let st: fs.Stats | undefined
    try { st = fs.lstatSync(next) } catch { st = undefined }
    if (st?.isSymbolicLink()) {
      if (++links > 40) throw new Error(`${p}: too many levels of symbolic links`)
      const target = fs.readlinkSync(next)
      todo = [...target.split('/').filter(Boolean), ...todo]
      if (target.startsWith('/')) cur = '/'
      continue
    }
    cur = next
    if (!st) { // the rest does not exist: no more links to follow
      for (const c of todo) {
        if (c === '..') cur = path.dirname(cur)
        else if (c !== '.') cur = `${cur}/${c}`
        if (inside(cur)) throw new InsideMountError(`${p} leads into the workspace mount`)
      }
      return cur
    }
  }
  return cur
}
