/**
 * Which FUSE layer serves the mount, chosen by the environment variable
 * REWINDFS_FUSE: `ll` (default) rewindfs's own binding on libfuse 3's
 * low-level API, by inode number (fuse/ll-adapter.ts); `hl` the patched
 * fuse-native on libfuse 2.9's high-level, path-based API
 * (fuse/adapter.ts), kept selectable. README "Running" and DECISIONS.md
 * say when each is the right one.
 */
import fs from 'node:fs'
import { FuseMount } from './adapter.js'
import { LowLevelMount, type KernelNodes } from './ll-adapter.js'
import { requestCounts } from './binding.js'
import type { ChangeAttribution, FsOps, InodeOps, InvalidationOutcome, InvalidationPlan, RestoreAnnouncer } from '../fs/api.js'

/** The two layers: 'hl' libfuse 2.9 high-level (fuse-native), 'll' libfuse 3 low-level (fuse/ll). */
export type FuseLayer = 'hl' | 'll'

/** The layer REWINDFS_FUSE names (default 'll'); throws an Error saying what to set for any other value. */
export function fuseLayer (env: NodeJS.ProcessEnv = process.env): FuseLayer {
  const v = (env.REWINDFS_FUSE ?? '').trim().toLowerCase()
  if (v === '' || v === 'll') return 'll'
  if (v === 'hl') return 'hl'
  throw new Error(`REWINDFS_FUSE=${env.REWINDFS_FUSE} is not a FUSE layer: set it to ll (libfuse 3 low-level) or hl (libfuse 2.9 high-level), or leave it unset (ll)`)
}

/** What the daemon needs of a mounted workspace, whichever the layer. */
export interface WorkspaceMount {
  mount(): Promise<void>
  unmount(): Promise<void>
  /**
   * drops the kernel caches a restore made stale (call it in the tick of the swap; never from inside a FUSE
   * handler); ll resolves with how many files and open handles stayed on old incarnations (issue 13), hl with nothing
   */
  invalidate(plan: InvalidationPlan): Promise<InvalidationOutcome | undefined>
  /** FUSE requests received so far, by operation name */
  requestCounts(): Record<string, number>
  /** the kernel's node ids as the low-level layer counts them (absent on hl: libfuse 2.9 keeps its own node table) */
  kernelNodes?(): KernelNodes
  /**
   * Routes the requests of a restore announcement's helper process (a.pid, set once it is started)
   * to `a` while it runs; null stops (fs/api.ts RestoreAnnouncer). Resolves once the kernel holds no
   * cached "no such name" for a name the helper must remove (ll; hl caches no negatives).
   */
  announceWith(a: RestoreAnnouncer | null): Promise<void> | void
}

export interface MountOptions {
  mountpoint: string
  workspace: FsOps & InodeOps
  /** directory whose filesystem statfs reports (the store) */
  statfsPath: string
  durable?: (ino: number) => Promise<void>
  log?: (msg: string) => void
  /** attribution of changes to tool calls (daemon/calls.ts); both layers report changes (fuse/handle-calls.ts) */
  attribution?: ChangeAttribution
}

/** A mount of the workspace on `layer` (not mounted yet: call mount()). */
export function workspaceMount (layer: FuseLayer, o: MountOptions): WorkspaceMount {
  if (layer === 'll') {
    const m = new LowLevelMount(o)
    return {
      mount: async () => await m.mount(),
      unmount: async () => await m.unmount(),
      invalidate: async (plan) => await m.invalidate(plan),
      requestCounts: () => m.requestCounts(),
      kernelNodes: () => m.nodes(),
      announceWith: async (a) => await m.announceWith(a)
    }
  }
  const m = new FuseMount(o)
  return {
    mount: async () => await m.mount(),
    unmount: async () => await m.unmount(),
    invalidate: async (plan) => { await m.invalidate(plan); return undefined },
    requestCounts,
    announceWith: (a) => m.announceWith(a)
  }
}

/** Checks the machine can mount with `layer`; throws an Error that says what to install. */
export function checkFuseLayer (layer: FuseLayer): void {
  if (!fs.existsSync('/dev/fuse')) throw new Error('/dev/fuse is missing: load the fuse kernel module (modprobe fuse) or run where FUSE is available')
  const lib = layer === 'll' ? 'libfuse3.so.3' : 'libfuse.so.2'
  const dirs = ['/usr/lib/x86_64-linux-gnu', '/lib/x86_64-linux-gnu', '/usr/lib/aarch64-linux-gnu', '/usr/lib']
  if (!dirs.some(d => fs.existsSync(`${d}/${lib}`))) {
    throw new Error(layer === 'll' ? 'libfuse 3 is missing: apt-get install -y libfuse3-3 fuse3' : 'libfuse2 is missing: apt-get install -y libfuse2 fuse3')
  }
}
