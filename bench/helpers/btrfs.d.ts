/** What setupBtrfs needs of a cleanup stack (bench/lib.ts Cleanup). */
export interface CleanupStack {
    push(what: string, fn: () => unknown): () => Promise<void>;
}
/** A mounted btrfs: `mnt` is its mount point; `close` tears it down now. */
export interface Btrfs {
    mnt: string;
    close: () => Promise<void>;
}
/**
 * Sets up a btrfs of `size` (truncate(1) syntax, default 8G, sparse) or
 * returns the reason it cannot (not root, no btrfs-progs, no loop device,
 * no btrfs in the kernel), having undone what it did.
 */
export declare function setupBtrfs(cleanup: CleanupStack, size?: string): Btrfs | {
    skipped: string;
};
