/**
 * The tree of the checkpoint benchmark and the changes made to it between
 * checkpoints. Beside `n` small files (100 per directory) it holds what a
 * careless recorder loses, so every peer's restore can be judged: an
 * executable and a private file (modes), empty directories, files the tree's
 * .gitignore names (ignored files), a nested git repository (the nested
 * .git) and a symlink. Every repetition changes `changed` of the small files
 * and also the extras (a mode, an empty directory removed, ignored and
 * nested-.git files rewritten, a new file), so a restore must bring all of
 * them back.
 */
import fs from 'node:fs'
import path from 'node:path'
import { execFileSync } from 'node:child_process'

/** Small files per directory. */
export const PER_DIR = 100

/** The tree's .gitignore lines. */
export const GITIGNORE = ['ignored/', '*.log']

/** relative path of small file i */
export function rel (i: number): string {
  return path.join(`d${String(Math.floor(i / PER_DIR)).padStart(4, '0')}`, `f${String(i % PER_DIR).padStart(2, '0')}.txt`)
}

/** content of small file i as populated */
export function original (i: number): string { return `file ${i}\n${'x'.repeat(64 + (i % 64))}\n` }

/**
 * Fills `dir` with the `n` small files and the extras (see the module doc).
 * The nested repository is made with git (one commit), as an agent's
 * vendored checkout would be.
 */
export function populate (dir: string, n: number): void {
  for (let d = 0; d * PER_DIR < n; d++) fs.mkdirSync(path.join(dir, `d${String(d).padStart(4, '0')}`), { recursive: true })
  for (let i = 0; i < n; i++) fs.writeFileSync(path.join(dir, rel(i)), original(i))
  fs.writeFileSync(path.join(dir, '.gitignore'), GITIGNORE.join('\n') + '\n')
  fs.mkdirSync(path.join(dir, 'bin'))
  fs.writeFileSync(path.join(dir, 'bin/run.sh'), '#!/bin/sh\necho run\n', { mode: 0o755 })
  fs.chmodSync(path.join(dir, 'bin/run.sh'), 0o755)
  fs.writeFileSync(path.join(dir, 'secret.txt'), 'private\n')
  fs.chmodSync(path.join(dir, 'secret.txt'), 0o600)
  fs.mkdirSync(path.join(dir, 'empty/sub'), { recursive: true })
  fs.mkdirSync(path.join(dir, 'ignored'))
  fs.writeFileSync(path.join(dir, 'ignored/cache.bin'), 'cache 0\n')
  fs.writeFileSync(path.join(dir, 'build.log'), 'log 0\n')
  fs.symlinkSync('d0000/f00.txt', path.join(dir, 'first-file'))
  const lib = path.join(dir, 'vendor/lib')
  fs.mkdirSync(lib, { recursive: true })
  fs.writeFileSync(path.join(lib, 'lib.c'), 'int lib(void) { return 1; }\n')
  const env = { ...process.env, GIT_AUTHOR_NAME: 'v', GIT_AUTHOR_EMAIL: 'v@localhost', GIT_COMMITTER_NAME: 'v', GIT_COMMITTER_EMAIL: 'v@localhost', GIT_CONFIG_NOSYSTEM: '1' }
  execFileSync('bash', ['-c', 'git init -q && git add -A && git commit -q -m vendored'], { cwd: lib, env, stdio: 'ignore' })
}

/** The `changed` small files changed in repetition r, spread over the tree. */
export function changedSet (n: number, changed: number, r: number): number[] {
  const c = Math.min(changed, n)
  const out = new Set<number>()
  for (let k = 0; k < c; k++) out.add((Math.floor(k * n / c) + r * 7 + 3) % n)
  return [...out]
}

/** Makes repetition r's changes in `dir`; returns the small files it changed. */
export function change (dir: string, n: number, changed: number, r: number): number[] {
  const set = changedSet(n, changed, r)
  for (const i of set) fs.writeFileSync(path.join(dir, rel(i)), `changed in repetition ${r}\n${original(i)}`)
  fs.chmodSync(path.join(dir, 'bin/run.sh'), 0o644)
  fs.rmSync(path.join(dir, 'empty/sub'), { recursive: true, force: true })
  // a peer's earlier restore may have lost these directories: make them again
  fs.mkdirSync(path.join(dir, 'ignored'), { recursive: true })
  fs.writeFileSync(path.join(dir, 'ignored/cache.bin'), `cache ${r + 1}\n`)
  fs.appendFileSync(path.join(dir, 'build.log'), `log ${r + 1}\n`)
  fs.mkdirSync(path.join(dir, 'vendor/lib/.git'), { recursive: true })
  fs.writeFileSync(path.join(dir, 'vendor/lib/.git/description'), `changed in repetition ${r}\n`)
  fs.writeFileSync(path.join(dir, `new-${r}.txt`), 'new\n')
  return set
}

/** The first small file of `set` that is not back to its original content, or null. */
export function notRestored (dir: string, set: number[]): string | null {
  for (const i of set) {
    let got = ''
    try { got = fs.readFileSync(path.join(dir, rel(i)), 'utf8') } catch {}
    if (got !== original(i)) return rel(i)
  }
  return null
}
