/** The store's public surface; re-exports only (see FORMAT.md for the on-disk format). */
export * from './errors.js'
export * from './db.js'
export * from './pack.js'
export * from './blocks.js'
export * from './space.js'
