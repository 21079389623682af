/**
 * The replayed agent session of bench/session.ts: 20 ordinary steps a coding
 * agent takes on this repository, as shell commands. Step 1 runs in the
 * workspace root and clones the repository into `repo/`; every later step
 * runs in `repo/`. Commands only use the warm npm cache (`npm ci --offline`),
 * so the session needs no network once the cache is primed (PRIME_STEP).
 */

/** One step: a short name and the bash command. */
export interface Step {
  /** short name shown in tables and charts */
  name: string
  /** bash command; `$SRC` is the source repository */
  cmd: string
  /** false for the steps left out of a quick run */
  quick: boolean
  /**
   * true for the steps that need the clone's npm dependencies or build
   * output (npm ci, tsc, the unit tests, listing dist/): the smoke form
   * (SMOKE_STEPS) leaves them out
   */
  needsBuild?: boolean
  /**
   * true for the steps of the smoke form (SMOKE_STEPS): the clone and every
   * step that names a file of the repository or needs the one before it
   */
  smoke?: boolean
}

/** Options of the steps' environment. */
export interface StepEnvOptions {
  /** the repository to clone (a local path) */
  src: string
  /** npm cache directory (default: npm's own, ~/.npm) */
  npmCache?: string
}

/** The two unit test files the session runs (pure logic: no mount, no child daemon). */
export const UNIT_TESTS = ['dist/test/workspace/itable.test.js', 'dist/test/protocol/proto.test.js']

const NPM_CI = 'npm ci --offline --no-audit --no-fund --loglevel=error'
/** the project's build: one project per folder (README "Layout") */
const TSC = 'node_modules/.bin/tsc -b'

/**
 * An editor's atomic save of five files: write `.name.swp` beside the file,
 * fsync it, rename it over the file (what vim and VS Code do by default).
 */
const ATOMIC_SAVE = `node -e '
const fs = require("fs")
for (const f of ["daemon/service.ts", "fs/workspace.ts", "client/client.ts", "proto/messages.ts", "README.md"]) {
  const text = fs.readFileSync(f, "utf8") + "\\n// edited by the bench session\\n"
  const tmp = f.replace(/[^/]+$/, n => "." + n + ".swp")
  const fd = fs.openSync(tmp, "w", fs.statSync(f).mode); fs.writeSync(fd, text); fs.fsyncSync(fd); fs.closeSync(fd)
  fs.renameSync(tmp, f)
}'`

/**
 * The 20 steps, in order. They need `$SRC` (the source repository) and git's
 * identity in the environment (stepEnv gives both).
 */
export const STEPS: readonly Step[] = [
  { name: 'git clone', cmd: 'git clone -q --no-hardlinks "$SRC" repo', quick: true, smoke: true },
  { name: 'npm ci', cmd: NPM_CI, quick: true, needsBuild: true },
  { name: 'tsc build', cmd: TSC, quick: false, needsBuild: true },
  { name: 'grep -rn', cmd: 'grep -rn --exclude-dir=node_modules --exclude-dir=.git --exclude-dir=dist checkpoint . | wc -l', quick: true, smoke: true },
  { name: 'find | wc', cmd: 'find . | wc -l', quick: true },
  { name: 'git status', cmd: 'git status --porcelain | wc -l', quick: true },
  { name: 'sed -i edit', cmd: "sed -i 's/Result of `status`/Result of the `status` op/' proto/messages.ts && sed -i '1s/^/\\/\\/ bench\\n/' fs/lower.ts fuse/adapter.ts", quick: true, smoke: true },
  { name: 'atomic save x5', cmd: ATOMIC_SAVE, quick: true, smoke: true },
  { name: 'git diff', cmd: 'git diff | wc -l', quick: true },
  { name: 'tsc rebuild', cmd: TSC, quick: false, needsBuild: true },
  { name: 'unit tests (2 files)', cmd: `node_modules/.bin/tap --disable-coverage --allow-empty-coverage --jobs=1 --reporter=silent ${UNIT_TESTS.join(' ')}`, quick: false, needsBuild: true },
  { name: 'git commit -a', cmd: 'git add -A && git commit -q -m "bench: edits"', quick: true, smoke: true },
  { name: 'git blame', cmd: 'git blame fs/workspace.ts | wc -l', quick: true, smoke: true },
  { name: 'git log -p', cmd: 'git log -p -20 | wc -l', quick: true },
  { name: 'cat sources', cmd: "git ls-files -z '*.ts' | xargs -0 cat | wc -c", quick: true },
  { name: 'ls -R dist', cmd: 'ls -laR dist | wc -l', quick: false, needsBuild: true },
  { name: 'git status (built)', cmd: 'git status --porcelain --ignored | wc -l', quick: true },
  { name: 'rm -rf node_modules', cmd: 'rm -rf node_modules', quick: true },
  { name: 'npm ci (again)', cmd: NPM_CI, quick: false, needsBuild: true },
  { name: 'git diff HEAD~1', cmd: 'git diff HEAD~1 --stat | tail -1', quick: true, smoke: true }
]

/**
 * The smoke form's steps (test/bench/bench-smoke.test.ts, `bench/run.js --smoke`):
 * the clone and every step that names a file of the repository (none needs
 * npm or a build), so a session runs in seconds in every mode yet still
 * touches every file the steps name: a layout change that moves one fails
 * the smoke. What the npm, tsc and unit-test steps need is checked by
 * buildStepsNeed.
 */
export const SMOKE_STEPS: readonly Step[] = STEPS.filter(s => s.smoke === true && s.needsBuild !== true)

/**
 * The paths (relative to the repository root) the left-out steps need in a
 * built checkout: the lockfile npm ci installs from, the tsc and tap
 * binaries, the solution tsconfig, the two unit test files and dist/.
 */
export function buildStepsNeed (): string[] {
  return ['package-lock.json', 'tsconfig.json', 'node_modules/.bin/tsc', 'node_modules/.bin/tap', 'dist', ...UNIT_TESTS]
}

/**
 * The cache-priming step, run once natively before any round: an `npm ci`
 * (network allowed, cache preferred) in a scratch clone, so that every
 * package the lockfile names is in npm's cache and the timed `npm ci
 * --offline` steps never reach the registry.
 */
export const PRIME_STEP: Step = { name: 'prime the npm cache', cmd: 'git clone -q --no-hardlinks "$SRC" repo && cd repo && npm ci --prefer-offline --no-audit --no-fund --loglevel=error', quick: true }

/** Environment of the steps: $SRC, git's identity, no global git config, npm's cache if given. */
export function stepEnv (o: StepEnvOptions): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    SRC: o.src,
    GIT_AUTHOR_NAME: 'bench', GIT_AUTHOR_EMAIL: 'bench@localhost',
    GIT_COMMITTER_NAME: 'bench', GIT_COMMITTER_EMAIL: 'bench@localhost',
    GIT_CONFIG_NOSYSTEM: '1',
    npm_config_update_notifier: 'false'
  }
  if (o.npmCache) env.npm_config_cache = o.npmCache
  return env
}

/** The working directory of step `i` (0-based) in workspace `ws`: the root for the clone, repo/ after. */
export function stepCwd (ws: string, i: number): string {
  return i === 0 ? ws : `${ws}/repo`
}
