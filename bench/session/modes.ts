/**
 * How the workspace of a replayed session is kept (bench/session.ts): one
 * Mode per way, each giving for one round a fresh workspace directory, a
 * checkpoint to take after every step, and a teardown that leaves no mount,
 * loop device or image behind.
 *
 *   native      plain directory in the temp dir, no checkpoints
 *   rewindfs    a rewindfs mount, a mark after every step over one connection
 *   rewindfs-b  the same served by a second build (--rewindfs-b PATH)
 *   rewindfs-hl the same, this checkout on the libfuse 2.9 layer (REWINDFS_FUSE=hl)
 *   rewindfs-ll the same on the libfuse 3 low-level layer (REWINDFS_FUSE=ll,
 *               the default since it was faster on every step; not in the default set)
 *   git         git add -A + commit into a separate GIT_DIR after every step
 *               (work tree repo/: honours .gitignore; a path named .git is
 *               never captured, so the repository's own .git is not)
 *   git -f      the same with add -A -f (ignored files too: node_modules, dist)
 *   btrfs       a btrfs subvolume on a loop image, a read-only snapshot after
 *               every step (the kernel copy-on-write reference)
 *   c-ll        bench/cpt/passthrough-ll.c, a C passthrough on libfuse 3's
 *               low-level API with the product's mount options, no
 *               checkpoints (the FUSE transport's ceiling)
 */
import fs from 'node:fs'
import path from 'node:path'
import { spawn, spawnSync, execFileSync, type ChildProcess } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { cliOf, mountRewind, tempRoot, isMounted, forceUnmount, alive, type RewindMount } from '../helpers/mount.js'
import { residentBytes, processCpuMs } from '../helpers/machine.js'
import { setupBtrfs, type Btrfs, type CleanupStack } from '../helpers/btrfs.js'

/** One round's workspace of a mode. */
export interface ModeRun {
  /** the workspace root; step 1 clones into `<dir>/repo` */
  dir: string
  /** takes the checkpoint after step `step` (0-based); undefined when the mode takes none */
  checkpoint?: (step: number) => Promise<void>
  /** FUSE requests served so far by opcode (monotonic); undefined when not reported */
  requests?: () => Promise<Record<string, number> | undefined>
  /** resident memory of the daemon, bytes (rewindfs modes) */
  rss?: () => number
  /** CPU time the daemon has used so far, user + system, ms (rewindfs modes; processCpuMs) */
  cpuMs?: () => number
  /** removes the workspace and everything it needed */
  close: () => Promise<void>
}

/** A way of keeping the workspace. */
export interface Mode {
  /** short name: table column, JSON key, chart series */
  name: string
  /** one-line description for the report */
  label: string
  /**
   * Prepares what every round needs (a build, a loop image); returns the
   * reason when this machine cannot run the mode (then it is skipped).
   */
  prepare: () => Promise<string | null>
  /** a fresh workspace for one round */
  start: () => Promise<ModeRun>
}

const here = path.dirname(fileURLToPath(import.meta.url))
/** bench/cpt/passthrough-ll.c in the source tree (this module runs from dist/bench/session/) */
export const PASSTHROUGH_LL_SRC = path.resolve(here, '../../../bench/cpt/passthrough-ll.c')

function rmrf (p: string): void { fs.rmSync(p, { recursive: true, force: true }) }

function git (args: string[], env: NodeJS.ProcessEnv, cwd: string): void {
  execFileSync('git', args, { env, cwd, stdio: ['ignore', 'ignore', 'pipe'], maxBuffer: 64 * 1024 * 1024 })
}

/** The plain-directory mode. */
export function nativeMode (): Mode {
  return {
    name: 'native',
    label: 'native directory (temp dir), no checkpoints',
    prepare: async () => null,
    start: async () => {
      const dir = tempRoot('native')
      return { dir, close: async () => rmrf(dir) }
    }
  }
}

/** Git snapshots into a separate GIT_DIR after each step; `force` adds ignored files too. */
export function gitMode (force: boolean): Mode {
  return {
    name: force ? 'git -f' : 'git',
    label: force
      ? 'native + git add -A -f && commit into a separate GIT_DIR after every step (everything but .git)'
      : 'native + git add -A && commit into a separate GIT_DIR after every step (honours .gitignore)',
    prepare: async () => spawnSync('git', ['--version'], { stdio: 'ignore' }).status === 0 ? null : 'git is not installed',
    start: async () => {
      const dir = tempRoot(force ? 'gitf' : 'git')
      const ws = path.join(dir, 'ws')
      fs.mkdirSync(ws)
      const env: NodeJS.ProcessEnv = {
        ...process.env, GIT_DIR: path.join(dir, 'snap.git'), GIT_WORK_TREE: path.join(ws, 'repo'), GIT_CONFIG_NOSYSTEM: '1',
        GIT_AUTHOR_NAME: 'snap', GIT_AUTHOR_EMAIL: 'snap@localhost', GIT_COMMITTER_NAME: 'snap', GIT_COMMITTER_EMAIL: 'snap@localhost'
      }
      git(['init', '-q'], env, dir)
      git(['config', 'gc.auto', '0'], env, dir)
      return {
        dir: ws,
        checkpoint: async (step) => {
          const work = path.join(ws, 'repo')
          if (!fs.existsSync(work)) return
          git(['add', '-A', ...(force ? ['-f'] : [])], env, work)
          git(['commit', '-q', '--allow-empty', '--no-verify', '-m', `step ${step + 1}`], env, work)
        },
        close: async () => rmrf(dir)
      }
    }
  }
}

/** A rewindfs mount (build at `cli`, default this checkout's) with a mark after every step. */
export function rewindMode (name: string, cli: string | undefined, label: string, env?: NodeJS.ProcessEnv): Mode {
  return {
    name,
    label,
    prepare: async () => (cli && !fs.existsSync(cli)) ? `no build at ${cli} (run npm run setup in that checkout)` : null,
    start: async () => {
      const m: RewindMount = await mountRewind(name.replace(/[^a-z0-9]/gi, ''), { cli, env })
      return {
        dir: m.dir,
        checkpoint: async (step) => { await m.client.mark({ label: `step ${step + 1}` }) },
        requests: async () => (await m.client.status()).requests,
        rss: () => residentBytes(m.daemon.pid ?? -1),
        cpuMs: () => processCpuMs(m.daemon.pid ?? -1),
        close: async () => await m.close()
      }
    }
  }
}

/** A btrfs subvolume per round, a read-only snapshot after every step. */
export function btrfsMode (cleanup: CleanupStack): Mode {
  let fsys: Btrfs | null = null
  let round = 0
  return {
    name: 'btrfs',
    label: 'btrfs subvolume on a loop image, read-only snapshot after every step',
    prepare: async () => {
      const r = setupBtrfs(cleanup)
      if ('skipped' in r) return r.skipped
      fsys = r
      return null
    },
    start: async () => {
      if (!fsys) throw new Error('btrfs mode not prepared')
      const top = path.join(fsys.mnt, `r${round++}`)
      fs.mkdirSync(top)
      const ws = path.join(top, 'ws')
      execFileSync('btrfs', ['-q', 'subvolume', 'create', ws])
      const snaps: string[] = []
      return {
        dir: ws,
        checkpoint: async (step) => {
          const s = path.join(top, `snap${step + 1}`)
          execFileSync('btrfs', ['-q', 'subvolume', 'snapshot', '-r', ws, s])
          snaps.push(s)
        },
        close: async () => {
          for (const s of [...snaps, ws]) spawnSync('btrfs', ['-q', 'subvolume', 'delete', s], { stdio: 'ignore' })
          rmrf(top)
        }
      }
    }
  }
}

/** Compiles bench/cpt/passthrough-ll.c into `outDir`; returns the binary or throws with the compiler's output. */
export function buildPassthroughLL (outDir: string): string {
  const bin = path.join(outDir, 'passthrough-ll')
  const flags = execFileSync('pkg-config', ['--cflags', '--libs', 'fuse3'], { encoding: 'utf8' }).trim().split(/\s+/)
  execFileSync('cc', ['-O2', '-Wall', '-o', bin, PASSTHROUGH_LL_SRC, ...flags], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] })
  return bin
}

/** Starts passthrough-ll on `src` at `mnt`; resolves once it printed "ready". */
export async function startPassthroughLL (bin: string, src: string, mnt: string): Promise<ChildProcess> {
  const child = spawn(bin, [src, mnt], { stdio: ['ignore', 'pipe', 'pipe'] })
  let err = ''
  child.stderr!.on('data', (d: Buffer) => { err += d.toString() })
  await new Promise<void>((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`passthrough-ll did not mount within 20 s: ${err}`)), 20000)
    child.stdout!.on('data', (d: Buffer) => { if (d.toString().includes('ready')) { clearTimeout(t); resolve() } })
    child.once('exit', (code) => { clearTimeout(t); reject(new Error(`passthrough-ll exited (${String(code)}): ${err}`)) })
  })
  return child
}

/** Stops a passthrough-ll started by startPassthroughLL and clears its mount. */
export async function stopPassthroughLL (child: ChildProcess, mnt: string): Promise<void> {
  if (alive(child)) {
    child.kill('SIGTERM')
    const deadline = Date.now() + 10000
    while (alive(child) && Date.now() < deadline) await new Promise(resolve => setTimeout(resolve, 20))
    if (alive(child)) child.kill('SIGKILL')
  }
  if (isMounted(mnt)) forceUnmount(mnt)
}

/** The C low-level passthrough over a fresh backing directory per round. */
export function cllMode (cleanup: CleanupStack): Mode {
  let bin = ''
  return {
    name: 'c-ll',
    label: 'C passthrough on libfuse 3 low-level API (bench/cpt/passthrough-ll.c), product mount options, no checkpoints',
    prepare: async () => {
      if (spawnSync('pkg-config', ['--exists', 'fuse3']).status !== 0) return 'libfuse3-dev is not installed (pkg-config fuse3 fails)'
      if (!fs.existsSync('/dev/fuse')) return 'no /dev/fuse'
      const out = tempRoot('cll-build')
      cleanup.push(`passthrough-ll build ${out}`, () => rmrf(out))
      try { bin = buildPassthroughLL(out) } catch (e) { return `passthrough-ll does not build: ${String((e as { stderr?: unknown }).stderr ?? e).slice(0, 300)}` }
      return null
    },
    start: async () => {
      const dir = tempRoot('cll')
      const src = path.join(dir, 'backing'); const mnt = path.join(dir, 'mnt')
      fs.mkdirSync(src); fs.mkdirSync(mnt)
      let child: ChildProcess | null = null
      const close = async (): Promise<void> => {
        if (child) await stopPassthroughLL(child, mnt)
        else if (isMounted(mnt)) forceUnmount(mnt)
        rmrf(dir)
      }
      try { child = await startPassthroughLL(bin, src, mnt) } catch (e) { await close(); throw e }
      return { dir: mnt, close }
    }
  }
}

/** The git commit of the checkout at `dir` (short), or '?' */
export function commitOf (dir: string): string {
  try { return execFileSync('git', ['-C', dir, 'rev-parse', '--short', 'HEAD'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim() } catch { return '?' }
}

/** Names of every mode, in the default order. */
export const MODE_NAMES = ['native', 'rewindfs', 'rewindfs-b', 'rewindfs-hl', 'git', 'git -f', 'btrfs', 'c-ll'] as const

/**
 * The modes named in `names` (default all; rewindfs-b only when `rewindfsB`,
 * a second checkout's root, is given). Throws for an unknown name.
 */
export function selectModes (cleanup: CleanupStack, o: { names?: string[], rewindfsB?: string, repo: string }): Mode[] {
  const names = o.names ?? MODE_NAMES.filter(n => n !== 'rewindfs-b' || o.rewindfsB)
  return names.map(n => {
    switch (n) {
      case 'native': return nativeMode()
      case 'rewindfs': return rewindMode('rewindfs', undefined, `rewindfs (this checkout, ${commitOf(o.repo)}, default FUSE layer: libfuse 3 low-level), a mark after every step over one connection`)
      case 'rewindfs-hl': return rewindMode('rewindfs-hl', undefined, `rewindfs (this checkout, ${commitOf(o.repo)}) on the libfuse 2.9 layer (REWINDFS_FUSE=hl), a mark after every step over one connection`, { REWINDFS_FUSE: 'hl' })
      case 'rewindfs-b': {
        if (!o.rewindfsB) throw new Error('mode rewindfs-b needs --rewindfs-b PATH (a second checkout or worktree, built)')
        const b = path.resolve(o.rewindfsB)
        return rewindMode('rewindfs-b', cliOf(b), `rewindfs (build B: ${b}, ${commitOf(b)}), a mark after every step over one connection`)
      }
      case 'rewindfs-ll': return rewindMode('rewindfs-ll', undefined, `rewindfs (this checkout, ${commitOf(o.repo)}) on the libfuse 3 low-level layer (REWINDFS_FUSE=ll), a mark after every step over one connection`, { REWINDFS_FUSE: 'll' })
      case 'git': return gitMode(false)
      case 'git -f': return gitMode(true)
      case 'btrfs': return btrfsMode(cleanup)
      case 'c-ll': return cllMode(cleanup)
      default: throw new Error(`unknown mode "${n}": choose from ${MODE_NAMES.join(', ')}, rewindfs-ll`)
    }
  })
}
