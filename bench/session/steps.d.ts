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
    name: string;
    /** bash command; `$SRC` is the source repository */
    cmd: string;
    /** false for the steps left out of a quick run */
    quick: boolean;
}
/** Options of the steps' environment. */
export interface StepEnvOptions {
    /** the repository to clone (a local path) */
    src: string;
    /** npm cache directory (default: npm's own, ~/.npm) */
    npmCache?: string;
}
/** The two unit test files the session runs (pure logic: no mount, no child daemon). */
export declare const UNIT_TESTS: string[];
/**
 * The 20 steps, in order. They need `$SRC` (the source repository) and git's
 * identity in the environment (stepEnv gives both).
 */
export declare const STEPS: readonly Step[];
/**
 * The cache-priming step, run once natively before any round: an `npm ci`
 * (network allowed, cache preferred) in a scratch clone, so that every
 * package the lockfile names is in npm's cache and the timed `npm ci
 * --offline` steps never reach the registry.
 */
export declare const PRIME_STEP: Step;
/** Environment of the steps: $SRC, git's identity, no global git config, npm's cache if given. */
export declare function stepEnv(o: StepEnvOptions): NodeJS.ProcessEnv;
/** The working directory of step `i` (0-based) in workspace `ws`: the root for the clone, repo/ after. */
export declare function stepCwd(ws: string, i: number): string;
