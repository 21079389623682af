/**
 * Whether this machine lets the daemon attribute by cgroup (daemon/calls.ts),
 * found the way the daemon does it: a leaf made under this process's own
 * cgroup v2, a process moved into it and back, the leaf removed.
 */
import fs from 'node:fs'
import path from 'node:path'
import { spawn } from 'node:child_process'
import { cgroup2Mount, cgroupPathOf } from '../../daemon/calls.js'

/** This process's cgroup v2 directory when a call's leaf can be made in it and a process moved there and back; else null. */
export async function writableCgroup (): Promise<string | null> {
  const cg = cgroup2Mount()
  if (cg === null) return null
  let dir: string
  try {
    const p = cgroupPathOf(process.pid)
    dir = path.join(cg.mountPoint, cg.root === '/' ? p : p.slice(cg.root.length))
  } catch { return null }
  const probe = path.join(dir, `rewindfs-test-probe-${process.pid}`)
  const child = spawn('sleep', ['30'], { stdio: 'ignore' })
  try {
    fs.mkdirSync(probe)
    fs.writeFileSync(path.join(probe, 'cgroup.procs'), String(child.pid))
    fs.writeFileSync(path.join(dir, 'cgroup.procs'), String(child.pid))
    return dir
  } catch { return null } finally {
    child.kill('SIGKILL')
    await new Promise(resolve => child.exitCode !== null || child.signalCode !== null ? resolve(null) : child.once('exit', resolve))
    try { fs.rmdirSync(probe) } catch {}
  }
}
