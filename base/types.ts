/**
 * Shared nouns of rewindfs, with almost no logic (see ../shared/STYLE.md "Shape").
 * Every other module takes these narrow types instead of reaching into each other.
 */

/** Size of a content block in bytes (64 KiB, as suggested in DESIGN.md "Store"). */
export const BLOCK_SIZE = 65536

/** Identifier of a stored block: a positive integer allocated by the block store, never reused once committed. */
export type BlockId = number

/** Identifier of a pack file: a positive integer; the file is `packs/<PackId as 8 hex digits>.pack`. */
export type PackId = number

/** Identifier of a generation: a positive integer, increasing in creation order across all branches. */
export type GenerationId = number

/** Identifier of a checkpoint: a positive integer, increasing in creation order across all branches. */
export type CheckpointId = number

/** Name of a branch: `main`, then `b<N>` for each branch a restore starts. */
export type BranchName = string

/** Inode number as the workspace reports it in st_ino: a positive integer below 2^32 (fuse-native carries uint32). */
export type Ino = number

/** Where a block lives inside the packs: byte offset and length of its stored bytes. */
export interface BlockLocation {
  pack: PackId
  /** byte offset of the block's bytes inside the pack file */
  offset: number
  /** number of bytes stored (1..BLOCK_SIZE) */
  length: number
}
