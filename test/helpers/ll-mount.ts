/**
 * Helpers for tests of the libfuse 3 low-level binding (fuse/ll): mount an
 * in-memory filesystem in a temporary directory with teardown, and run
 * Python in a CHILD process against the mount (the test process serves the
 * mount, so it must never touch it itself, not even with async fs calls).
 */
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { execFile } from 'node:child_process'
import { LowLevelSession, type LowLevelOps, type MountOptions } from '../../fuse/ll/session.js'
import { MemFs, type MemFsOptions } from './memfs-ll.js'
import type { Teardownable } from './mount.js'

export const PY = fs.existsSync('/usr/bin/python3') ? '/usr/bin/python3' : 'python3'

/** Python prelude: renameat2 through ctypes, err(f) -> 0 or the errno name, b(s) -> bytes. */
const PRELUDE = `
import os, sys, json, ctypes, fcntl, errno, time, struct
libc = ctypes.CDLL(None, use_errno=True)
def renameat2(a, b, flags):
    if libc.renameat2(-100, os.fsencode(a), -100, os.fsencode(b), flags) != 0:
        e = ctypes.get_errno(); raise OSError(e, os.strerror(e))
def err(f):
    try:
        f(); return 0
    except OSError as e:
        return errno.errorcode.get(e.errno, str(e.errno))
def out(v): print(json.dumps(v))
`

/**
 * Runs Python `code` in a child process whose working directory is `dir`;
 * resolves with the JSON its last output line holds. The child changes into
 * `dir` itself (os.chdir): spawning with `cwd` on the mount would make
 * libuv's child chdir before exec while this process (which serves the
 * mount) waits for it, and the lookup would never be answered.
 */
export function py (dir: string, code: string, o: { asUser?: number, timeoutMs?: number } = {}): Promise<any> {
  const cmd = o.asUser === undefined ? PY : 'setpriv'
  const prog = PRELUDE + `os.chdir(${JSON.stringify(dir)})\n` + code
  const args = o.asUser === undefined ? ['-c', prog] : [`--reuid=${o.asUser}`, `--regid=${o.asUser}`, '--clear-groups', PY, '-c', prog]
  return new Promise((resolve, reject) => {
    execFile(cmd, args, { cwd: '/', timeout: o.timeoutMs ?? 120000, maxBuffer: 64 << 20 }, (e, stdout, stderr) => {
      if (e) { reject(new Error(`python failed: ${e.message}\n${stderr}`)); return }
      const lines = stdout.trim().split('\n')
      try { resolve(JSON.parse(lines[lines.length - 1])) } catch { reject(new Error(`python printed no JSON: ${stdout}\n${stderr}`)) }
    })
  })
}

/** Runs a shell command in a child process (after `cd cwd`, in the child: see py); resolves with its exit code and output. */
export function sh (cmd: string, cwd = '/'): Promise<{ code: number, stdout: string, stderr: string }> {
  return new Promise((resolve) => {
    execFile('bash', ['-c', `cd ${JSON.stringify(cwd)} && { ${cmd}\n}`], { cwd: '/', timeout: 120000 }, (e, stdout, stderr) => {
      resolve({ code: e ? ((e as any).code ?? 1) : 0, stdout, stderr })
    })
  })
}

/** A fresh temporary directory (removed in teardown). */
export function tempDir (t: Teardownable, prefix = 'rewindfs-ll-'): string {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), prefix))
  fs.chmodSync(d, 0o755)
  t.teardown(() => fs.rmSync(d, { recursive: true, force: true }))
  return d
}

/** Unmounts `mnt` if anything is still mounted there (fusermount3 -u, then -uz). */
export async function clearMount (mnt: string): Promise<void> {
  const mounted = (): boolean => fs.readFileSync('/proc/mounts', 'utf8').split('\n').some((l) => l.split(' ')[1] === mnt)
  if (!mounted()) return
  await sh(`fusermount3 -u '${mnt}' 2>/dev/null || fusermount3 -uz '${mnt}'`)
}

export interface MemMount { fs: MemFs, s: LowLevelSession, mnt: string, logs: string[] }

/**
 * Mounts a MemFs (or `wrap(memfs.ops)`) in a temporary directory; teardown
 * unmounts (session first, fusermount3 as the fallback) even on failure.
 * `logs` collects the binding's log lines.
 */
export async function mountMem (t: Teardownable, o: { fs?: MemFsOptions, mount?: MountOptions, wrap?: (ops: LowLevelOps, m: MemFs) => LowLevelOps } = {}): Promise<MemMount> {
  // not tempDir(): the directory must be removed only after the unmount, in the same teardown
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rewindfs-ll-'))
  fs.chmodSync(dir, 0o755)
  const mnt = path.join(dir, 'mnt')
  fs.mkdirSync(mnt)
  const m = new MemFs(o.fs)
  const logs: string[] = []
  const ops = o.wrap ? o.wrap(m.ops, m) : m.ops
  const s = await LowLevelSession.mount(mnt, ops, { log: (l) => logs.push(l), ...o.mount })
  t.teardown(async () => {
    await Promise.race([s.unmount(), new Promise((resolve) => setTimeout(resolve, 10000))])
    await clearMount(mnt)
    fs.rmSync(dir, { recursive: true, force: true })
  })
  return { fs: m, s, mnt, logs }
}

/**
 * Python (for `py`) run in a directory holding an empty file `lk`: takes a
 * flock and a POSIX range lock on it, then asks a forked process for the
 * same flock, the same range and another range (non-blocking), releases
 * both and asks again. Prints {held: [flock, range, other range], free:
 * [flock, range]}, each 0 or the errno's name.
 */
export const LOCK_PROBE = `a = open('lk', 'r+')
fcntl.flock(a, fcntl.LOCK_EX)
fcntl.lockf(a, fcntl.LOCK_EX, 10, 0)
rd, wr = os.pipe()
pid = os.fork()
if pid == 0:
    b = open('lk', 'r+')
    r1 = err(lambda: fcntl.flock(b, fcntl.LOCK_EX | fcntl.LOCK_NB))
    r2 = err(lambda: fcntl.lockf(b, fcntl.LOCK_EX | fcntl.LOCK_NB, 10, 0))
    r3 = err(lambda: fcntl.lockf(b, fcntl.LOCK_EX | fcntl.LOCK_NB, 10, 20))
    os.write(wr, json.dumps([r1, r2, r3]).encode()); os._exit(0)
os.waitpid(pid, 0)
held = json.loads(os.read(rd, 1000))
fcntl.flock(a, fcntl.LOCK_UN); fcntl.lockf(a, fcntl.LOCK_UN, 10, 0)
pid = os.fork()
if pid == 0:
    b = open('lk', 'r+')
    r1 = err(lambda: fcntl.flock(b, fcntl.LOCK_EX | fcntl.LOCK_NB))
    r2 = err(lambda: fcntl.lockf(b, fcntl.LOCK_EX | fcntl.LOCK_NB, 10, 0))
    os.write(wr, json.dumps([r1, r2]).encode()); os._exit(0)
os.waitpid(pid, 0)
out({'held': held, 'free': json.loads(os.read(rd, 1000))})
`
