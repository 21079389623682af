import { type RewindMount } from './helpers/mount.js';
export { CLI, tempRoot, isMounted, forceUnmount, alive, type RewindMount } from './helpers/mount.js';
export { median } from './helpers/stats.js';
/** LIFO cleanup stack; runs on normal exit, on failure and on SIGINT/SIGTERM. */
export declare class Cleanup {
    private fns;
    private running;
    constructor();
    /** Registers `fn`; the returned function runs it now (once) and unregisters it. */
    push(what: string, fn: () => unknown): () => Promise<void>;
    /** Runs every registered function, last first; a failure is printed and the rest still run. */
    run(): Promise<void>;
}
export declare const sleep: (ms: number) => Promise<void>;
/**
 * Mounts a rewindfs workspace on a fresh directory populated by `populate`
 * (on the plain directory, before mounting), served by the build at `cli`
 * (default this checkout's; bench/helpers/mount.ts); its teardown is
 * registered on `cleanup`.
 */
export declare function mountRewind(cleanup: Cleanup, tag: string, populate?: (dir: string) => void | Promise<void>, cli?: string): Promise<RewindMount>;
/** High-resolution wall clock in ms. */
export declare function now(): number;
/** Runs a command synchronously (never from a process that serves a mount); throws with its stderr on failure. */
export declare function sh(cmd: string, opts?: {
    cwd?: string;
    env?: NodeJS.ProcessEnv;
    timeoutMs?: number;
}): string;
/** Times a synchronous command in ms. */
export declare function timeSh(cmd: string, opts?: {
    cwd?: string;
    env?: NodeJS.ProcessEnv;
    timeoutMs?: number;
}): number;
export declare function fmt(x: number | undefined, _digits?: number): string;
/** Markdown table. */
export declare function table(header: string[], rows: string[][]): string;
export declare function machine(): string;
