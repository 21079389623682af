/**
 * The agent half of the client library, in one import: session recorder
 * (segment metadata eta_t), backtrack tools, rewind memory, runner, run log.
 * Re-exports only.
 */
export * from './chat.js'
export * from './segment.js'
export * from './recorder.js'
export * from './memory.js'
export * from './tools.js'
export * from './localise.js'
export * from './bisect.js'
export * from './runner.js'
export * from './runlog.js'
