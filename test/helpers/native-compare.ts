/**
 * Helpers for conformance tests that run the same operation on a rewindfs
 * mount and on a native directory and compare the outcomes. All calls are
 * synchronous: they run in the TEST process, which is not the daemon (the
 * daemon is a child process, see test/helpers/mount.ts), so blocking on the
 * mount is safe here.
 */
import fs from 'node:fs'
import path from 'node:path'
import { spawnSync } from 'node:child_process'

/** What an operation did: its (normalised) value, or the errno code it failed with. */
export type Outcome<T> = { ok: T } | { err: string }

/** Runs fn and captures its value or its error code ('EEXIST', ...). */
export function outcome<T> (fn: () => T): Outcome<T> {
  try {
    return { ok: fn() }
  } catch (e: any) {
    return { err: typeof e?.code === 'string' ? e.code : String(e?.message ?? e) }
  }
}

/** Resolves paths of one test case inside one of the two trees. */
export type P = (rel?: string) => string

/** The two trees of a comparison: `nat` (plain directory) and `mnt` (rewindfs mount). */
export interface Trees { nat: string, mnt: string }

/** Path resolvers of case directory `c` in both trees (created empty on both). */
export function caseDirs (trees: Trees, c: string): { nat: P, mnt: P } {
  const mk = (root: string): P => {
    const base = path.join(root, c)
    return (rel = '') => rel === '' ? base : path.join(base, rel)
  }
  fs.mkdirSync(path.join(trees.nat, c))
  fs.mkdirSync(path.join(trees.mnt, c))
  return { nat: mk(trees.nat), mnt: mk(trees.mnt) }
}

/** The stat fields a conformance test compares. */
export interface StatFields {
  type: string
  mode: string
  nlink: number
  uid: number
  gid: number
  /** omitted for directories (sizes of directories are filesystem-specific) */
  size?: number
  mtimeNs?: string
  atimeNs?: string
}

export function typeOf (mode: number): string {
  switch (mode & 0o170000) {
    case 0o100000: return 'file'
    case 0o040000: return 'dir'
    case 0o120000: return 'symlink'
    case 0o010000: return 'fifo'
    case 0o140000: return 'socket'
    case 0o020000: return 'chardev'
    case 0o060000: return 'blockdev'
    default: return 'unknown'
  }
}

/** lstat of p reduced to the compared fields; times only when asked (they are compared only where set explicitly). */
export function statFields (p: string, o: { mtime?: boolean, atime?: boolean, follow?: boolean } = {}): StatFields {
  const s = o.follow ? fs.statSync(p, { bigint: true }) : fs.lstatSync(p, { bigint: true })
  const mode = Number(s.mode)
  const f: StatFields = { type: typeOf(mode), mode: (mode & 0o7777).toString(8), nlink: Number(s.nlink), uid: Number(s.uid), gid: Number(s.gid) }
  if (f.type !== 'dir') f.size = Number(s.size)
  if (o.mtime) f.mtimeNs = s.mtimeNs.toString()
  if (o.atime) f.atimeNs = s.atimeNs.toString()
  return f
}

/** Result of a child process: exit code, stdout, stderr. */
export interface Ran { code: number, stdout: string, stderr: string }

/** Runs a command synchronously (bounded by timeoutMs; a timeout shows as code -1). */
export function runSync (cmd: string, args: string[], o: { timeoutMs?: number, input?: string } = {}): Ran {
  const r = spawnSync(cmd, args, { encoding: 'utf8', timeout: o.timeoutMs ?? 30000, input: o.input, maxBuffer: 16 * 1024 * 1024 })
  return { code: r.status ?? -1, stdout: r.stdout ?? '', stderr: (r.stderr ?? '') + (r.error ? String(r.error) : '') }
}

/**
 * The python3 interpreter for scripts that may run as the unprivileged user:
 * Debian's /usr/bin/python3 (a pyenv shim under /root is out of that user's
 * reach), else the one on PATH.
 */
export const PYTHON = fs.existsSync('/usr/bin/python3') ? '/usr/bin/python3' : 'python3'

/** The unprivileged user (and group) of permission cases: nobody/nogroup. */
export const NOBODY = 65534

/** Runs a python3 script with arguments; returns stdout parsed as JSON, or throws with stderr. */
export function pyJson (script: string, ...args: string[]): any {
  const r = runSync('python3', ['-c', script, ...args])
  if (r.code !== 0) throw new Error(`python3 failed (${r.code}): ${r.stderr}`)
  return JSON.parse(r.stdout)
}

/** Python prelude: r(label, fn) records ['ok', value] or [errno name]; out is printed as JSON by done(). */
export const PY_PRELUDE = `
import os, sys, json, errno
out = []
def norm(v):
    if isinstance(v, bytes): return v.hex()
    if isinstance(v, (list, tuple)): return [norm(x) for x in v]
    return v
def r(label, f):
    try:
        out.append([label, 'ok', norm(f())])
    except OSError as e:
        out.append([label, errno.errorcode.get(e.errno, str(e.errno))])
def done():
    print(json.dumps(out))
`

/**
 * libc calls python's os module lacks, through ctypes (append to PY_PRELUDE):
 * utimensat(p, a, m, nofollow) with a and m each ns since the epoch, 'NOW'
 * (UTIME_NOW), 'OMIT' (UTIME_OMIT) or a raw (tv_sec, tv_nsec) tuple, or
 * a = None for a NULL times pointer; linkat_follow(src, dst) (linkat with
 * AT_SYMLINK_FOLLOW: python's os.link calls link(2), which does not follow);
 * getxattr_n(p, name, size) and listxattr_n(p, size) with an explicit buffer
 * size (0 asks for the needed size, as getxattr(2) and listxattr(2) do).
 * Errors raise OSError with the C errno, so r() records its name.
 */
export const PY_LIBC = `
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
class timespec(ctypes.Structure):
    _fields_ = [('tv_sec', ctypes.c_long), ('tv_nsec', ctypes.c_long)]
libc.utimensat.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.POINTER(timespec), ctypes.c_int]
libc.linkat.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_int]
libc.getxattr.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_void_p, ctypes.c_size_t]
libc.getxattr.restype = ctypes.c_ssize_t
libc.listxattr.argtypes = [ctypes.c_char_p, ctypes.c_void_p, ctypes.c_size_t]
libc.listxattr.restype = ctypes.c_ssize_t
def _chk(rc):
    if rc < 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))
    return rc
def _ts(x):
    if isinstance(x, tuple): return timespec(*x)
    if x == 'NOW': return timespec(0, (1 << 30) - 1)
    if x == 'OMIT': return timespec(0, (1 << 30) - 2)
    return timespec(x // 10**9, x % 10**9)
def utimensat(p, a, m=None, nofollow=False):
    t = None if a is None else (timespec * 2)(_ts(a), _ts(m))
    return _chk(libc.utimensat(-100, p.encode(), t, 0x100 if nofollow else 0))
def linkat_follow(src, dst):
    return _chk(libc.linkat(-100, src.encode(), -100, dst.encode(), 0x400))
def getxattr_n(p, name, size):
    buf = ctypes.create_string_buffer(max(size, 1))
    n = _chk(libc.getxattr(p.encode(), name.encode(), buf if size else None, size))
    return n if size == 0 else buf.raw[:n]
def listxattr_n(p, size):
    buf = ctypes.create_string_buffer(max(size, 1))
    n = _chk(libc.listxattr(p.encode(), buf if size else None, size))
    return n if size == 0 else sorted(x for x in buf.raw[:n].decode().split('\\0') if x)
`

/** One labelled outcome of a python sequence: [label, 'ok', value] or [label, errno name] (see PY_PRELUDE's r()). */
export type PyEntry = [string, ...unknown[]]

/**
 * Runs PY_PRELUDE + PY_LIBC + script with args, as root or, given `uid`, as
 * that user with the same gid and no supplementary groups (setpriv). The
 * script calls r(label, fn) for each operation and done() at its end.
 * Returns the entries; throws with stderr when python fails.
 */
export function pySeq (script: string, args: string[], o: { uid?: number } = {}): PyEntry[] {
  const py = [PYTHON, '-c', PY_PRELUDE + PY_LIBC + script, ...args]
  const r = o.uid === undefined
    ? runSync(py[0]!, py.slice(1))
    : runSync('setpriv', [`--reuid=${o.uid}`, `--regid=${o.uid}`, '--clear-groups', ...py])
  if (r.code !== 0) throw new Error(`python3 failed (${r.code}): ${r.stderr}`)
  return JSON.parse(r.stdout)
}

/** Equality of two buffers reported without dumping megabytes into the test output. */
export function bufDiff (a: Buffer, b: Buffer): string | null {
  if (a.length !== b.length) return `length ${a.length} vs ${b.length}`
  if (a.equals(b)) return null
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return `first difference at byte ${i}: ${a[i]} vs ${b[i]}`
  return null
}

/** Reads `len` bytes at `pos` of a file (short at end of file). */
export function preadFile (p: string, pos: number, len: number): Buffer {
  const fd = fs.openSync(p, 'r')
  try {
    const b = Buffer.alloc(len)
    let done = 0
    while (done < len) {
      const n = fs.readSync(fd, b, done, len - done, pos + done)
      if (n === 0) break
      done += n
    }
    return b.subarray(0, done)
  } finally { fs.closeSync(fd) }
}

/** Deterministic pseudo-random bytes (so failures reproduce). */
export function pattern (len: number, seed: number): Buffer {
  const b = Buffer.alloc(len)
  let x = seed >>> 0 || 1
  for (let i = 0; i < len; i++) {
    x ^= x << 13; x >>>= 0
    x ^= x >>> 17
    x ^= x << 5; x >>>= 0
    b[i] = x & 255
  }
  return b
}
