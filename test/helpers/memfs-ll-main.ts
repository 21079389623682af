/**
 * Mounts the in-memory filesystem (memfs-ll.ts) on the libfuse 3 binding in
 * its own process: `node dist/test/helpers/memfs-ll-main.js <mountpoint>`.
 * Prints "ready" once mounted; SIGTERM unmounts and exits 0. The tests use
 * it for what needs another process (a daemon killed with SIGKILL).
 */
import { LowLevelSession } from '../../fuse/ll/session.js'
import { MemFs } from './memfs-ll.js'

const mnt = process.argv[2]
if (mnt === undefined) { console.error('usage: memfs-ll-main.js <mountpoint>'); process.exit(2) }
const fs = new MemFs()
fs.add(1, 'hello.txt', 0o100644, 'hello\n')
const s = await LowLevelSession.mount(mnt, fs.ops, { entryTimeout: 1, attrTimeout: 1 })
process.on('SIGTERM', () => { s.unmount().then(() => process.exit(0), () => process.exit(1)) })
console.log('ready')
