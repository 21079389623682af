/**
 * Judging a restore: the independent manifest (scripts/manifest.sh, GNU find
 * + sha256sum) of the tree as checkpointed against that of the tree as
 * restored, each difference put in the class of what was lost: modes, empty
 * directories, ignored files, the nested .git, or other content. mtime and
 * nlink are not compared (peers such as git do not keep times; hard-link
 * snapshots change link counts), nor uid/gid (every peer runs as one user).
 */
/** One parsed manifest line (scripts/manifest.sh). */
export interface ManifestEntry {
    path: string;
    /** find's %y: f, d, l, ... */
    type: string;
    /** permission bits, octal text */
    mode: string;
    /** bytes, '-' for directories */
    size: string;
    /** sha256 of a file, '-> target' of a symlink, '-' otherwise */
    hash: string;
}
/**
 * Parses a manifest line `<path> <type> <mode> <uid> <gid> <nlink> <size>
 * <mtime> <hash | -> target | ->`; the path must hold no spaces. Throws an
 * Error naming the line when it does not parse.
 */
export declare function parseManifestLine(line: string): ManifestEntry;
/** What a restore lost, by class; each list holds paths. */
export interface RestoreCheck {
    /** no difference at all */
    correct: boolean;
    /** paths whose permission bits differ */
    modes: string[];
    /** directories that were empty at the checkpoint and are missing */
    emptyDirs: string[];
    /** missing or changed paths the checkpointed tree's .gitignore names */
    ignored: string[];
    /** missing or changed paths inside a nested .git directory */
    nestedGit: string[];
    /** every other missing, changed or extra path */
    content: string[];
}
/**
 * Is `p` ignored by `patterns`: gitignore-style lines of the tree's
 * top-level .gitignore, only the forms `name/` (a directory anywhere),
 * `*.ext` and plain `name` (a file or directory anywhere) are understood.
 */
export declare function isIgnored(p: string, patterns: readonly string[]): boolean;
/**
 * Compares the manifest lines `expected` (the checkpointed tree) with
 * `actual` (the restored tree). `ignorePatterns` are the lines of the
 * expected tree's .gitignore (for the `ignored` class). The root line
 * (path `.`) is compared like any other.
 */
export declare function checkRestore(expected: readonly string[], actual: readonly string[], ignorePatterns?: readonly string[]): RestoreCheck;
/** One-line verdict: "correct" or "INCORRECT: loses modes (2: ./bin/run.sh, ...), empty dirs (1: ./empty/sub), ...". */
export declare function verdict(c: RestoreCheck): string;
