/**
 * Where a native file holds data: the extents SEEK_DATA / SEEK_HOLE
 * (lseek(2)) report, so that copying a sparse file of the directory into
 * blocks (first write, freezing at unmount) reads its data only, not
 * terabytes of holes (issue 11, item 1). Node has no lseek, so a file whose
 * allocated blocks are fewer than its size is asked about in one python3
 * process; a dense file needs no question.
 */
import fs from 'node:fs'
import { isByteName } from '../base/names.js'
import { execFileSync } from 'node:child_process'
import { BLOCK_SIZE, type BlockId } from '../base/types.js'
import { BlockList, isZeroBlock } from './blocklist.js'

/** Debian's python3 when present (a version-manager shim on PATH can cost a second per start). */
const PYTHON = fs.existsSync('/usr/bin/python3') ? '/usr/bin/python3' : 'python3'

const EXTENTS = `import errno,json,os,sys
p, size = sys.argv[1], int(sys.argv[2])
try: fd = os.open(p, os.O_RDONLY | os.O_NOFOLLOW | os.O_NOATIME)
except PermissionError: fd = os.open(p, os.O_RDONLY | os.O_NOFOLLOW)
out, off = [], 0
while off < size:
    try: s = os.lseek(fd, off, os.SEEK_DATA)
    except OSError as e:
        if e.errno == errno.ENXIO: break
        raise
    if s >= size: break
    e = min(os.lseek(fd, s, os.SEEK_HOLE), size)
    out.append([s, e]); off = e
print(json.dumps(out))
`

/** A file smaller than this is read whole: asking python3 costs more than reading it (bytes). */
const ASK_ABOVE = 16 * 1024 * 1024

/**
 * Byte ranges [start, end) of `path` that may hold data, in increasing
 * order, within 0..size. The whole file when it is small or not sparse
 * (`allocated`, st_blocks × 512, covers its size), or when the question
 * fails (a filesystem without SEEK_DATA answers the whole file itself).
 * `path` must resolve outside the mount (the lower layer's
 * `/proc/<pid>/fd/N/...` form: python3 is another process, so
 * `/proc/self` would name it, not the daemon).
 */
export function dataExtents (path: string, size: number, allocated: number): Array<[number, number]> {
  // a path that is not UTF-8 cannot be an argument (Node passes UTF-8; it could name another file): the whole file
  if (size <= ASK_ABOVE || allocated >= size || isByteName(path)) return size > 0 ? [[0, size]] : []
  try {
    const out = JSON.parse(execFileSync(PYTHON, ['-c', EXTENTS, path, String(size)], { encoding: 'utf8', timeout: 60000, maxBuffer: 64 * 1024 * 1024 }))
    if (Array.isArray(out)) return out as Array<[number, number]>
  } catch {}
  return [[0, size]]
}

/** The path another process must use for a path of this process under /proc/self. */
export function forOtherProcess (path: string): string {
  return path.startsWith('/proc/self/') ? `/proc/${process.pid}/${path.slice('/proc/self/'.length)}` : path
}

/**
 * Copies the first `size` bytes of the native file open on `fd` into
 * blocks: its data extents only (dataExtents of `path`, the same file by a
 * path another process can open), each BLOCK_SIZE chunk handed to `put`
 * (which stores it and returns its id; it may throw, e.g. ENOSPC) unless it
 * is all zeros, which stays a hole. Used by the first write to a file of
 * the directory (copy-up) and by freezing at unmount. Throws what the reads
 * or `put` throw; the caller closes `fd`.
 */
export function copyIntoBlocks (fd: number, path: string, size: number, put: (chunk: Buffer) => BlockId): BlockList {
  const blocks = BlockList.empty()
  const buf = Buffer.allocUnsafe(BLOCK_SIZE)
  // python3 gets the path as an argument, UTF-8: a path that is not (issue 18) is reached through the open fd
  const asked = isByteName(path) ? `/proc/${process.pid}/fd/${fd}` : path
  for (const [start, end] of dataExtents(asked, size, fs.fstatSync(fd).blocks * 512)) {
    for (let k = Math.floor(start / BLOCK_SIZE); k * BLOCK_SIZE < Math.min(end, size); k++) {
      const off = k * BLOCK_SIZE
      const n = fs.readSync(fd, buf, 0, Math.min(BLOCK_SIZE, size - off), off)
      const chunk = buf.subarray(0, n)
      if (n > 0 && !isZeroBlock(chunk)) blocks.set(k, put(chunk))
    }
  }
  return blocks
}
