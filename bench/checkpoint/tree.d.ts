/** Small files per directory. */
export declare const PER_DIR = 100;
/** The tree's .gitignore lines. */
export declare const GITIGNORE: string[];
/** relative path of small file i */
export declare function rel(i: number): string;
/** content of small file i as populated */
export declare function original(i: number): string;
/**
 * Fills `dir` with the `n` small files and the extras (see the module doc).
 * The nested repository is made with git (one commit), as an agent's
 * vendored checkout would be.
 */
export declare function populate(dir: string, n: number): void;
/** The `changed` small files changed in repetition r, spread over the tree. */
export declare function changedSet(n: number, changed: number, r: number): number[];
/** Makes repetition r's changes in `dir`; returns the small files it changed. */
export declare function change(dir: string, n: number, changed: number, r: number): number[];
/** The first small file of `set` that is not back to its original content, or null. */
export declare function notRestored(dir: string, set: number[]): string | null;
