import { type ChildProcess } from 'node:child_process';
import { RewindClient } from '../../client/client.js';
/** this checkout's dist/daemon/cli.js */
export declare const CLI: string;
/** Makes a temporary directory named rewindfs-bench-<tag>-*. */
export declare function tempRoot(tag: string): string;
/** True when `dir` is a mount point now (/proc/mounts). */
export declare function isMounted(dir: string): boolean;
/** fusermount -u, then fusermount -uz, then umount -l, stopping as soon as `dir` is no longer mounted. */
export declare function forceUnmount(dir: string): void;
/** True while the child has neither exited nor been killed. */
export declare function alive(c: ChildProcess): boolean;
/** A mounted workspace served by a daemon child process. */
export interface RewindMount {
    /** temporary root holding dir, store and home */
    root: string;
    /** the mounted workspace (absolute) */
    dir: string;
    store: string;
    /** REWINDFS_HOME of this daemon */
    home: string;
    client: RewindClient;
    daemon: ChildProcess;
    /** the cli.js that serves it */
    cli: string;
    /** unmounts (discarding), kills the daemon if it does not go, clears the mount, removes root; idempotent */
    close(): Promise<void>;
}
/** Options of mountRewind. */
export interface MountOptions {
    /** dist/daemon/cli.js of the build to run (default: this checkout's) */
    cli?: string;
    /** fills the plain workspace directory before the mount */
    populate?: (dir: string) => void | Promise<void>;
    /** daemon start-up limit, ms (default 60000) */
    startMs?: number;
}
/**
 * Mounts a new workspace under tempRoot(tag). Throws (after cleaning up)
 * with the tail of the daemon's log when it does not come up within
 * `startMs`.
 */
export declare function mountRewind(tag: string, o?: MountOptions): Promise<RewindMount>;
