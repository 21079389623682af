/**
 * The ways of checkpointing a tree that bench/checkpoint.ts compares, each
 * behind one interface: set up a populated tree, take the base checkpoint,
 * then checkpoint (timed) and restore to the base (timed) repeatedly.
 *
 *   rewindfs   mark / restore over one websocket connection (the tree is
 *              populated in the lower directory before the mount)
 *   git        add -A + commit into a separate GIT_DIR; restore: reset --hard
 *              + clean -fdx (honours .gitignore, as git does)
 *   btrfs      read-only subvolume snapshot; restore: delete the subvolume,
 *              snapshot the base back (loop image, root)
 *   rsync      rsync -a --delete --link-dest=<previous> snapshots (unchanged
 *              files hard-linked to the previous snapshot); restore:
 *              rsync -a --delete <base>/ <tree>/
 *   overlay    an overlayfs mount per checkpoint: the upper layer becomes a
 *              read-only lower layer and a fresh upper goes on top; restore:
 *              remount on the base layer alone (root)
 *   hashcopy   what a recorder without a filesystem layer must do: walk the
 *              whole tree, hash every file (sha256), copy new contents into
 *              an object directory, keep a manifest; restore: walk and
 *              re-hash the tree, rewrite what differs, delete what is extra
 */
import fs from 'node:fs'
import path from 'node:path'
import crypto from 'node:crypto'
import { execFileSync, spawnSync } from 'node:child_process'
import { Cleanup, mountRewind } from '../lib.js'
import { tempRoot, isMounted } from '../helpers/mount.js'
import { residentBytes } from '../helpers/machine.js'
import { setupBtrfs, type Btrfs } from '../helpers/btrfs.js'
import { populate } from './tree.js'

/** A populated tree kept by one peer. */
export interface PeerTree {
  /** where changes are made and the restore is judged */
  dir: string
  /** the base checkpoint (untimed set-up) */
  base: () => Promise<void>
  checkpoint: () => Promise<void>
  /** back to the base checkpoint */
  restore: () => Promise<void>
  /** time inside the daemon of the last checkpoint / restore, ms (rewindfs) */
  inside?: () => { mark: number, restore: number }
  /** resident memory of the serving process, bytes (rewindfs) */
  rss?: () => number
  close: () => Promise<void>
}

/** A peer: prepare once (or say why not), then one tree per size. */
export interface Peer {
  name: string
  label: string
  /** null, or the reason this machine cannot run the peer */
  prepare: () => Promise<string | null>
  tree: (n: number) => Promise<PeerTree>
}

function run (cmd: string, args: string[], o: { cwd?: string, env?: NodeJS.ProcessEnv } = {}): string {
  return execFileSync(cmd, args, { ...o, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], maxBuffer: 256 * 1024 * 1024 })
}

const rmrf = (p: string): void => fs.rmSync(p, { recursive: true, force: true })

/** rewindfs, this checkout's build. */
export function rewindPeer (cleanup: Cleanup): Peer {
  return {
    name: 'rewindfs',
    label: 'rewindfs mark / restore (websocket round trip)',
    prepare: async () => fs.existsSync('/dev/fuse') ? null : 'no /dev/fuse',
    tree: async (n) => {
      const m = await mountRewind(cleanup, `ckpt${n}`, dir => populate(dir, n))
      let baseId = 0
      let last = { mark: NaN, restore: NaN }
      return {
        dir: m.dir,
        base: async () => {
          run('bash', ['-c', `find ${JSON.stringify(m.dir)} > /dev/null`])
          baseId = (await m.client.mark({ label: 'base' })).id
        },
        checkpoint: async () => { last.mark = (await m.client.mark({})).ms },
        restore: async () => { last.restore = (await m.client.restore({ id: baseId })).ms },
        inside: () => last,
        rss: () => residentBytes(m.daemon.pid ?? -1),
        close: async () => { last = { mark: NaN, restore: NaN }; await m.close() }
      }
    }
  }
}

/** git into a separate GIT_DIR. */
export function gitPeer (cleanup: Cleanup): Peer {
  return {
    name: 'git',
    label: 'git add -A + commit (separate GIT_DIR) / reset --hard + clean -fdx',
    prepare: async () => spawnSync('git', ['--version']).status === 0 ? null : 'git is not installed',
    tree: async (n) => {
      const root = tempRoot(`git${n}`)
      const done = cleanup.push(`git temp ${root}`, () => rmrf(root))
      const dir = path.join(root, 'tree')
      fs.mkdirSync(dir)
      populate(dir, n)
      const env = { ...process.env, GIT_DIR: path.join(root, 'git'), GIT_WORK_TREE: dir, GIT_CONFIG_NOSYSTEM: '1', GIT_AUTHOR_NAME: 'b', GIT_AUTHOR_EMAIL: 'b@localhost', GIT_COMMITTER_NAME: 'b', GIT_COMMITTER_EMAIL: 'b@localhost' }
      const sh = (c: string): void => { run('bash', ['-c', c], { env, cwd: dir }) }
      let base = ''
      return {
        dir,
        base: async () => {
          sh('git init -q && git config gc.auto 0 && (git add -A 2>/dev/null) && git commit -q -m base')
          base = run('git', ['rev-parse', 'HEAD'], { env, cwd: dir }).trim()
        },
        checkpoint: async () => sh('(git add -A 2>/dev/null) && git commit -q --allow-empty -m ckpt'),
        restore: async () => sh(`git reset -q --hard ${base} && git clean -fdxq`),
        close: async () => await done()
      }
    }
  }
}

/** btrfs snapshots on a loop image. */
export function btrfsPeer (cleanup: Cleanup): Peer {
  let fsys: Btrfs | null = null
  return {
    name: 'btrfs',
    label: 'btrfs read-only snapshot / delete + snapshot back (loop image)',
    prepare: async () => {
      const r = setupBtrfs(cleanup)
      if ('skipped' in r) return r.skipped
      fsys = r
      return null
    },
    tree: async (n) => {
      const top = path.join(fsys!.mnt, `n${n}`)
      fs.mkdirSync(top)
      const work = path.join(top, 'work')
      run('btrfs', ['-q', 'subvolume', 'create', work])
      populate(work, n)
      let k = 0
      return {
        dir: work,
        base: async () => { run('bash', ['-c', `sync -f ${work} && btrfs -q subvolume snapshot -r ${work} ${top}/base`]) },
        checkpoint: async () => { run('btrfs', ['-q', 'subvolume', 'snapshot', '-r', work, `${top}/s${k++}`]) },
        restore: async () => { run('bash', ['-c', `btrfs -q subvolume delete ${work} && btrfs -q subvolume snapshot ${top}/base ${work}`]) },
        close: async () => { spawnSync('bash', ['-c', `for s in ${top}/*; do btrfs -q subvolume delete "$s"; done; rm -rf ${top}`], { stdio: 'ignore' }) }
      }
    }
  }
}

/** rsync --link-dest hard-link snapshots. */
export function rsyncPeer (cleanup: Cleanup): Peer {
  return {
    name: 'rsync',
    label: 'rsync -a --delete --link-dest=<previous> snapshot / rsync -a --delete <base>/ back',
    prepare: async () => spawnSync('rsync', ['--version'], { stdio: 'ignore' }).status === 0 ? null : 'rsync is not installed',
    tree: async (n) => {
      const root = tempRoot(`rsync${n}`)
      const done = cleanup.push(`rsync temp ${root}`, () => rmrf(root))
      const dir = path.join(root, 'tree')
      fs.mkdirSync(dir)
      populate(dir, n)
      const snaps = path.join(root, 'snaps')
      fs.mkdirSync(snaps)
      let k = 0
      return {
        dir,
        base: async () => { run('rsync', ['-a', '--delete', `${dir}/`, `${snaps}/0/`]) },
        checkpoint: async () => { k++; run('rsync', ['-a', '--delete', `--link-dest=${snaps}/${k - 1}`, `${dir}/`, `${snaps}/${k}/`]) },
        restore: async () => { run('rsync', ['-a', '--delete', `${snaps}/0/`, `${dir}/`]) },
        close: async () => await done()
      }
    }
  }
}

/** overlayfs, a layer per checkpoint. */
export function overlayPeer (cleanup: Cleanup): Peer {
  return {
    name: 'overlay',
    label: 'overlayfs: upper layer frozen as a lower layer per checkpoint / remount on the base layer',
    prepare: async () => {
      if (process.getuid?.() !== 0) return 'needs root (mount -t overlay)'
      if (!fs.readFileSync('/proc/filesystems', 'utf8').includes('overlay')) {
        spawnSync('modprobe', ['overlay'], { stdio: 'ignore' })
        if (!fs.readFileSync('/proc/filesystems', 'utf8').includes('overlay')) return 'the kernel has no overlay filesystem'
      }
      return null
    },
    tree: async (n) => {
      const root = tempRoot(`overlay${n}`)
      const layers = path.join(root, 'layers'); const upper = path.join(root, 'upper'); const work = path.join(root, 'work'); const mnt = path.join(root, 'mnt')
      for (const d of [layers, upper, work, mnt]) fs.mkdirSync(d)
      const base = path.join(layers, '0')
      fs.mkdirSync(base)
      populate(base, n)
      let stack: string[] = [base]
      let k = 0
      const mount = (): void => { run('mount', ['-t', 'overlay', 'overlay', '-o', `lowerdir=${stack.join(':')},upperdir=${upper},workdir=${work}`, mnt]) }
      const umount = (): void => { if (isMounted(mnt)) run('umount', [mnt]) }
      const fresh = (): void => { rmrf(upper); rmrf(work); fs.mkdirSync(upper); fs.mkdirSync(work) }
      const done = cleanup.push(`overlay ${mnt}`, () => {
        if (isMounted(mnt) && spawnSync('umount', [mnt]).status !== 0) spawnSync('umount', ['-l', mnt])
        rmrf(root)
      })
      mount()
      return {
        dir: mnt,
        base: async () => {},
        checkpoint: async () => {
          umount()
          const layer = path.join(layers, String(++k))
          fs.renameSync(upper, layer)
          rmrf(work); fs.mkdirSync(upper); fs.mkdirSync(work)
          stack = [layer, ...stack]
          mount()
        },
        restore: async () => { umount(); fresh(); stack = [base]; mount() },
        close: async () => await done()
      }
    }
  }
}

interface Rec { type: 'f' | 'd' | 'l', mode: number, hash?: string, target?: string }

/** Walks `dir` (lstat, no symlink following): relative path -> kind and mode, hashing files if `hash`. */
function walk (dir: string, fn: (rel: string, abs: string, st: fs.Stats) => void): void {
  const visit = (relDir: string): void => {
    for (const e of fs.readdirSync(path.join(dir, relDir))) {
      const rel = relDir ? `${relDir}/${e}` : e
      const abs = path.join(dir, rel)
      const st = fs.lstatSync(abs)
      fn(rel, abs, st)
      if (st.isDirectory()) visit(rel)
    }
  }
  visit('')
}

const sha = (abs: string): string => crypto.createHash('sha256').update(fs.readFileSync(abs)).digest('hex')

/** The whole-tree hash-and-copy recorder. */
export function hashcopyPeer (cleanup: Cleanup): Peer {
  return {
    name: 'hashcopy',
    label: 'whole-tree recorder: walk + sha256 every file + copy new contents / walk + re-hash + rewrite differences',
    prepare: async () => null,
    tree: async (n) => {
      const root = tempRoot(`hashcopy${n}`)
      const done = cleanup.push(`hashcopy temp ${root}`, () => rmrf(root))
      const dir = path.join(root, 'tree'); const objects = path.join(root, 'objects')
      fs.mkdirSync(dir); fs.mkdirSync(objects)
      populate(dir, n)
      const manifests: Array<Map<string, Rec>> = []
      const record = (): void => {
        const m = new Map<string, Rec>()
        walk(dir, (rel, abs, st) => {
          const mode = st.mode & 0o7777
          if (st.isDirectory()) m.set(rel, { type: 'd', mode })
          else if (st.isSymbolicLink()) m.set(rel, { type: 'l', mode, target: fs.readlinkSync(abs) })
          else if (st.isFile()) {
            const hash = sha(abs)
            const obj = path.join(objects, hash)
            if (!fs.existsSync(obj)) fs.copyFileSync(abs, obj)
            m.set(rel, { type: 'f', mode, hash })
          }
        })
        manifests.push(m)
      }
      const restoreTo = (m: Map<string, Rec>): void => {
        const extra: string[] = []
        walk(dir, (rel) => { if (!m.has(rel)) extra.push(rel) })
        for (const rel of extra.reverse()) rmrf(path.join(dir, rel))
        for (const [rel, r] of [...m].sort((a, b) => a[0] < b[0] ? -1 : 1)) {
          const abs = path.join(dir, rel)
          let st: fs.Stats | null = null
          try { st = fs.lstatSync(abs) } catch {}
          if (r.type === 'd') {
            if (st && !st.isDirectory()) { rmrf(abs); st = null }
            if (!st) fs.mkdirSync(abs)
          } else if (r.type === 'l') {
            if (st && !(st.isSymbolicLink() && fs.readlinkSync(abs) === r.target)) { rmrf(abs); st = null }
            if (!st) fs.symlinkSync(r.target!, abs)
            continue
          } else {
            if (st && !(st.isFile() && sha(abs) === r.hash)) { rmrf(abs); st = null }
            if (!st) fs.copyFileSync(path.join(objects, r.hash!), abs)
          }
          if (!st || (st.mode & 0o7777) !== r.mode) fs.chmodSync(abs, r.mode)
        }
      }
      return {
        dir,
        base: async () => record(),
        checkpoint: async () => record(),
        restore: async () => restoreTo(manifests[0]),
        close: async () => await done()
      }
    }
  }
}

/** Every peer, in table order. */
export function allPeers (cleanup: Cleanup): Peer[] {
  return [rewindPeer(cleanup), gitPeer(cleanup), btrfsPeer(cleanup), rsyncPeer(cleanup), overlayPeer(cleanup), hashcopyPeer(cleanup)]
}
