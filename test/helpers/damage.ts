/** Test builder: damage to store files, as a disk or a careless hand does it. */
import fs from 'node:fs'

/** Flips the bits of `mask` (default all 8) in the byte at `offset` of `file`, in place. */
export function flipByte (file: string, offset: number, mask = 0xff): void {
  const fd = fs.openSync(file, 'r+')
  try {
    const one = Buffer.alloc(1)
    fs.readSync(fd, one, 0, 1, offset)
    one[0] = one[0]! ^ mask
    fs.writeSync(fd, one, 0, 1, offset)
  } finally { fs.closeSync(fd) }
}
