import { Cleanup } from '../lib.js';
/** A populated tree kept by one peer. */
export interface PeerTree {
    /** where changes are made and the restore is judged */
    dir: string;
    /** the base checkpoint (untimed set-up) */
    base: () => Promise<void>;
    checkpoint: () => Promise<void>;
    /** back to the base checkpoint */
    restore: () => Promise<void>;
    /** time inside the daemon of the last checkpoint / restore, ms (rewindfs) */
    inside?: () => {
        mark: number;
        restore: number;
    };
    /** resident memory of the serving process, bytes (rewindfs) */
    rss?: () => number;
    close: () => Promise<void>;
}
/** A peer: prepare once (or say why not), then one tree per size. */
export interface Peer {
    name: string;
    label: string;
    /** null, or the reason this machine cannot run the peer */
    prepare: () => Promise<string | null>;
    tree: (n: number) => Promise<PeerTree>;
}
/** rewindfs, this checkout's build. */
export declare function rewindPeer(cleanup: Cleanup): Peer;
/** git into a separate GIT_DIR. */
export declare function gitPeer(cleanup: Cleanup): Peer;
/** btrfs snapshots on a loop image. */
export declare function btrfsPeer(cleanup: Cleanup): Peer;
/** rsync --link-dest hard-link snapshots. */
export declare function rsyncPeer(cleanup: Cleanup): Peer;
/** overlayfs, a layer per checkpoint. */
export declare function overlayPeer(cleanup: Cleanup): Peer;
/** The whole-tree hash-and-copy recorder. */
export declare function hashcopyPeer(cleanup: Cleanup): Peer;
/** Every peer, in table order. */
export declare function allPeers(cleanup: Cleanup): Peer[];
