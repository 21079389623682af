/**
 * Real tools at scale through the mount: git (issue 4, item 3).
 *
 * What is real: the repository is this project's own, cloned with full
 * history (`git clone --no-local` of the checkout this test runs from, so
 * objects travel through pack-objects/index-pack into the mount). To give git
 * more to chew on, history is then built on top of it from real content: one
 * commit per top-level package directory of the project's node_modules
 * (≤ 2 MiB each, in name order) copied into vendor/, with every 4th commit
 * also moving an earlier package (git mv, rename detection), every 7th
 * removing one (git rm -r) and every 5th editing README.md. The package
 * files are real; the commits, their order and messages are made up here.
 *
 * Then: a commit editing real sources; a topic branch of 4 commits
 * (one of them a --fixup) rebased with `rebase -i --autosquash` onto the
 * moved branch and merged with --no-ff; `git gc --aggressive --prune=now`;
 * `git fsck --full --strict`. Checks that can fail: fsck clean, exact commit
 * counts, the rebased subjects and changed paths, one pack and no loose
 * objects after gc, `git status` clean.
 *
 * Rewind: checkpoint + manifest (scripts/manifest.sh), damage (the pack
 * removed, vendor/ removed, README overwritten, a branch deleted, the index
 * removed: fsck must fail), restore, identical manifest, fsck and refs again;
 * then a restore across the gc (back to the loose objects, and forward
 * again). Finally unmount (write-back): the directory on disk must equal the
 * last manifest, and fsck must pass there too.
 *
 * Sizes: CI form 60 package commits (about 8 s of git history through the
 * mount); REWINDFS_TOOLS_SCALE=large: every package ≤ 2 MiB (about 200
 * commits) and a topic branch of 20 commits. If the checkout is a shallow
 * clone the test is skipped and says so (full history is the point).
 */
import t, { type Test } from 'tap'
import fs from 'node:fs'
import path from 'node:path'
import { mountWorkspace } from '../helpers/mount.js'
import { PROJECT, scale, run, ok, Timings, markWithManifest, restoreAndCompare, rewindCycle, unmountAndCompare } from '../helpers/tools.js'

const PACKAGE_COMMITS = scale(60, 1000)
const TOPIC_COMMITS = scale(3, 20)
const MAX_PACKAGE_KIB = 2048

/** The checkout's top level, or why it cannot be used. */
async function sourceRepo (): Promise<{ dir: string } | { skip: string }> {
  const top = await run('git rev-parse --show-toplevel', { cwd: PROJECT })
  if (top.code !== 0) return { skip: `${PROJECT} is not a git checkout (${top.stderr.trim()}): the git test clones the repository it runs from` }
  const dir = top.stdout.trim()
  const shallow = await run('git rev-parse --is-shallow-repository', { cwd: dir })
  if (shallow.stdout.trim() === 'true') return { skip: `${dir} is a shallow clone: the git test needs the full history (git fetch --unshallow)` }
  return { dir }
}

/** Top-level package directories of the project's node_modules (≤ MAX_PACKAGE_KIB), in name order. */
function packageDirs (): string[] {
  const nm = path.join(PROJECT, 'node_modules')
  const size = (p: string): number => {
    const st = fs.lstatSync(p)
    if (!st.isDirectory()) return st.size
    let n = 0
    for (const e of fs.readdirSync(p)) n += size(path.join(p, e))
    return n
  }
  return fs.readdirSync(nm).filter(n => !n.startsWith('.')).sort()
    .map(n => path.join(nm, n)).filter(p => fs.lstatSync(p).isDirectory() && size(p) <= MAX_PACKAGE_KIB * 1024)
}

/** One commit per package directory (arguments), with moves, removals and README edits (see the header). */
const HISTORY_SH = `
set -euo pipefail
i=0; prev=()
mkdir -p vendor
for src in "$@"; do
  i=$((i+1)); name=$(basename "$src"); msg="vendor: snapshot of $name"
  cp -a "$src" "vendor/$name"
  git add -f "vendor/$name"   # -f: the project's .gitignore (dist/, *.log) must not drop package files
  if (( i % 4 == 0 && \${#prev[@]} >= 3 )); then
    old=\${prev[\${#prev[@]}-3]}
    if [ -e "vendor/$old" ]; then mkdir -p vendor/old; git mv "vendor/$old" "vendor/old/$old"; msg="$msg; move $old to vendor/old"; fi
  fi
  if (( i % 7 == 0 )) && [ -d vendor/old ] && [ -n "$(ls vendor/old)" ]; then
    victim=$(ls vendor/old | head -n 1); git rm -r -q "vendor/old/$victim"; msg="$msg; drop $victim"
  fi
  if (( i % 5 == 0 )); then printf '\\n<!-- history step %d: %s -->\\n' "$i" "$name" >> README.md; msg="$msg; note in README"; fi
  git add -A
  git commit -q -m "$msg"
  prev+=("$name")
done
`

/** What the git check compares: refs, commit count of HEAD and of everything. */
interface GitState { refs: string, head: string, commits: number, all: number }

async function gitState (repo: string): Promise<GitState> {
  const refs = (await run('git for-each-ref --format="%(refname) %(objectname)"', { cwd: repo })).stdout
  const head = (await run('git rev-parse HEAD', { cwd: repo })).stdout.trim()
  const commits = Number((await run('git rev-list --count HEAD', { cwd: repo })).stdout.trim())
  const all = Number((await run('git rev-list --all --count', { cwd: repo })).stdout.trim())
  return { refs, head, commits, all }
}

/** git's own check: fsck --full --strict clean, the same refs and counts, a clean work tree. */
async function gitCheck (t: Test, repo: string, want: GitState, when: string): Promise<void> {
  const fsck = await run('git fsck --full --strict --no-progress --no-dangling 2>&1', { cwd: repo })
  t.equal(fsck.code, 0, `git fsck --full --strict is clean ${when}`, fsck.code === 0 ? {} : { output: fsck.stdout.slice(0, 2000) })
  t.equal(fsck.stdout.trim(), '', `git fsck prints nothing ${when}`)
  t.same(await gitState(repo), want, `refs, HEAD and commit counts are as recorded ${when}`)
  // --no-optional-locks: status must not rewrite the index (it would change the tree being compared)
  const st = await run('git --no-optional-locks status --porcelain', { cwd: repo })
  t.equal(st.code, 0, `git status runs ${when}`)
  t.equal(st.stdout, '', `git status is clean ${when}`)
}

const src = await sourceRepo()

t.test('git at scale through the mount: clone with full history, commits, rebase, gc --aggressive, fsck, rewind', { timeout: scale(240000, 1800000), skip: 'skip' in src ? src.skip : false }, async t => {
  if ('skip' in src) return
  const times = new Timings()
  const m = await mountWorkspace(t)
  const repo = path.join(m.dir, 'repo')
  const env = { ...process.env, GIT_AUTHOR_NAME: 'Rewind Tools', GIT_AUTHOR_EMAIL: 'tools@rewindfs.invalid', GIT_COMMITTER_NAME: 'Rewind Tools', GIT_COMMITTER_EMAIL: 'tools@rewindfs.invalid' }
  const g = async (cmd: string, msg?: string, timeoutMs?: number): Promise<string> => (await ok(t, cmd, { cwd: repo, env, msg, timeoutMs })).stdout

  // --- clone with full history
  const srcHead = (await run('git rev-parse HEAD', { cwd: src.dir })).stdout.trim()
  const srcCount = Number((await run('git rev-list --count HEAD', { cwd: src.dir })).stdout.trim())
  await times.time('git clone --no-local', async () => await ok(t, `git clone -q --no-local ${JSON.stringify(src.dir)} repo`, { cwd: m.dir, env }), () => `${srcCount} commits`)
  t.equal((await g('git rev-parse HEAD')).trim(), srcHead, 'the clone is at the source HEAD')
  t.equal(Number((await g('git rev-list --count HEAD')).trim()), srcCount, `the clone has the full history (${srcCount} commits)`)
  await g('git switch -q -c work', 'a work branch')

  // --- history from real package trees
  const pkgs = packageDirs().slice(0, PACKAGE_COMMITS)
  t.ok(pkgs.length >= 20, `${pkgs.length} package directories to commit (need node_modules: npm run setup)`)
  fs.writeFileSync(path.join(m.root, 'history.sh'), HISTORY_SH)
  await times.time(`git history: ${pkgs.length} commits of package trees`, async () =>
    await ok(t, `bash ${JSON.stringify(path.join(m.root, 'history.sh'))} ${pkgs.map(p => JSON.stringify(p)).join(' ')}`, { cwd: repo, env, timeoutMs: scale(300000, 1800000) }))
  const files = Number((await g('git ls-files | wc -l')).trim())
  t.comment(`history: ${pkgs.length} commits, ${files} tracked files`)

  // --- a commit editing real sources
  await g(`sed -i '1i // tools test: reviewed' base/errno.ts && printf '\\n// tools test: reviewed\\n' >> daemon/paths.ts && git commit -q -a -m "review errno and paths"`, 'edit and commit real sources')
  t.equal(Number((await g('git rev-list --count HEAD')).trim()), srcCount + pkgs.length + 1, 'every commit is in the history')

  // --- rebase: a topic branch with a fixup, autosquashed onto the moved branch
  await times.time(`git rebase -i --autosquash (${TOPIC_COMMITS + 1} commits)`, async () => {
    await g('git switch -q -c topic work~8', 'topic branch 8 commits back')
    await g('mkdir -p notes && echo "# topic notes" > notes/topic.md && git add notes && git commit -q -m "topic: add notes"')
    const first = (await g('git rev-parse HEAD')).trim()
    await g(`echo '# topic: checked' >> scripts/setup.sh && git commit -q -a -m "topic: note in setup.sh"`)
    for (let i = 2; i < TOPIC_COMMITS; i++) await g(`echo "line ${i}" >> notes/topic.md && git commit -q -a -m "topic: more notes ${i}"`)
    await g(`echo "fixup" > notes/fixup.md && git add notes && git commit -q --fixup=${first}`)
    await g('GIT_SEQUENCE_EDITOR=true git rebase -q -i --autosquash work', 'rebase -i --autosquash onto work')
  })
  t.equal(Number((await g('git rev-list --count work..topic')).trim()), TOPIC_COMMITS, `the rebased topic has ${TOPIC_COMMITS} commits (the fixup squashed)`)
  t.equal((await run('git merge-base --is-ancestor work topic', { cwd: repo })).code, 0, 'work is an ancestor of the rebased topic')
  const subjects = (await g('git log --reverse --format=%s work..topic')).trim().split('\n')
  t.same(subjects, ['topic: add notes', 'topic: note in setup.sh', ...Array.from({ length: TOPIC_COMMITS - 2 }, (_, i) => `topic: more notes ${i + 2}`)], 'rebased subjects in order')
  t.same((await g('git diff --name-only work topic')).trim().split('\n'), ['notes/fixup.md', 'notes/topic.md', 'scripts/setup.sh'], 'the topic changes exactly its own paths')
  t.same((await g('git show --name-only --format= topic~' + String(TOPIC_COMMITS - 1))).trim().split('\n'), ['notes/fixup.md', 'notes/topic.md'], 'the fixup was squashed into its commit')
  await g('git switch -q work && git merge -q --no-ff -m "merge topic" topic', 'merge --no-ff')
  const expectCommits = srcCount + pkgs.length + 1 + TOPIC_COMMITS + 1
  t.equal(Number((await g('git rev-list --count HEAD')).trim()), expectCommits, `${expectCommits} commits after the merge`)

  // --- gc --aggressive
  const beforeGc = await markWithManifest(m, 'git: before gc', times)
  const loose = Number(/^count: (\d+)/m.exec(await g('git count-objects -v'))?.[1] ?? NaN)
  t.ok(loose > 0, `${loose} loose objects before gc`)
  await times.time('git gc --aggressive --prune=now', async () => await g('git gc -q --aggressive --prune=now', 'gc --aggressive', scale(300000, 1800000)))
  const counts = await g('git count-objects -v')
  t.match(counts, /^count: 0$/m, 'no loose objects after gc')
  t.match(counts, /^packs: 1$/m, 'one pack after gc')
  const state = await gitState(repo)
  t.equal(state.commits, expectCommits, 'gc kept every commit')
  await times.time('git fsck', async () => await gitCheck(t, repo, state, 'after gc'))

  // --- rewind cycle
  const afterGc = await rewindCycle(t, m, times, {
    tool: 'git',
    damage: async () => {
      await g('git update-ref -d refs/heads/topic && rm -rf .git/objects/pack vendor .git/index && echo broken > README.md', 'damage')
    },
    damagedCheck: async () => {
      const f = await run('git fsck --full --no-progress 2>&1', { cwd: repo })
      t.not(f.code, 0, 'git fsck fails on the damaged repository')
    },
    check: async () => await gitCheck(t, repo, state, 'after restore')
  })

  // --- across the gc: back to the loose objects and forward again
  await restoreAndCompare(t, m, beforeGc, times, 'back before gc')
  t.equal(Number(/^count: (\d+)/m.exec(await g('git count-objects -v'))?.[1] ?? NaN), loose, `${loose} loose objects again`)
  await gitCheck(t, repo, state, 'before gc, restored')
  await restoreAndCompare(t, m, afterGc, times, 'forward after gc')
  await gitCheck(t, repo, state, 'after gc, restored again')

  // --- unmount: the directory on disk is the last checkpoint
  await unmountAndCompare(t, m, afterGc, times)
  const fsck = await run('git fsck --full --strict --no-progress --no-dangling 2>&1', { cwd: repo })
  t.equal(fsck.code, 0, 'git fsck is clean on disk after unmount', fsck.code === 0 ? {} : { output: fsck.stdout.slice(0, 2000) })
  t.same(await gitState(repo), state, 'refs and counts on disk as recorded')
  times.print(t, `git: ${srcCount} cloned commits + ${pkgs.length} package commits (${files} files) + topic of ${TOPIC_COMMITS}`)
})
