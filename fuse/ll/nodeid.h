/*
 * The node id layout of rewindfs's low-level FUSE binding: the ONE place
 * that defines it (fuse-ll.c exports the constants to JavaScript as
 * INO_BITS / INCARNATION_BITS; fuse/ll/session.ts reads them from there).
 *
 *   node id (64 bits) = incarnation << LL_INO_BITS | ino
 *
 *   ino          low 40 bits: the filesystem's own inode number (1..2^40-1);
 *                the root is ino 1, incarnation 0, which is FUSE_ROOT_ID.
 *   incarnation  high 24 bits: which identity of that inode the kernel holds
 *                (issue 13: a restore that changes a file's content gives it
 *                a new incarnation, so the kernel sees a new inode while old
 *                descriptors keep the old node id).
 *
 * 40 bits of inode number is 10^12 inodes, far beyond any workspace; 24 bits
 * of incarnation is 16 million identities per inode, and a wrap is harmless
 * as long as the daemon never hands out an incarnation the kernel still
 * holds (it knows, from the forget counts). Both fit a JavaScript number
 * exactly (< 2^53), so neither half needs a BigInt.
 */
#ifndef REWINDFS_LL_NODEID_H
#define REWINDFS_LL_NODEID_H

#include <stdint.h>

#define LL_INO_BITS 40
#define LL_INCARNATION_BITS 24
#define LL_INO_MASK ((UINT64_C(1) << LL_INO_BITS) - 1)
#define LL_INCARNATION_MAX ((UINT64_C(1) << LL_INCARNATION_BITS) - 1)

static inline uint64_t ll_nodeid (uint64_t ino, uint64_t incarnation) {
  return (incarnation << LL_INO_BITS) | (ino & LL_INO_MASK);
}
static inline uint64_t ll_ino_of (uint64_t nodeid) { return nodeid & LL_INO_MASK; }
static inline uint64_t ll_incarnation_of (uint64_t nodeid) { return nodeid >> LL_INO_BITS; }

#endif
