/**
 * The writer of bench/hifreq.ts, run as its own process (it writes through
 * the mount, which the bench's process must be free to serve marks beside):
 * rewrites FILES files of SIZE bytes in DIR round-robin (open, write, close:
 * what a build or a test run does) until DURATION ms have passed, then
 * prints one JSON line {files, bytes, ms}.
 *
 *   node dist/bench/hifreq-writer.js DIR DURATION_MS [SIZE=65536] [FILES=256]
 */
import fs from 'node:fs'
import path from 'node:path'

const [dir, durArg, sizeArg, filesArg] = process.argv.slice(2)
const duration = Number(durArg)
const size = Number(sizeArg ?? 65536)
const nfiles = Number(filesArg ?? 256)
if (!dir || !(duration > 0) || !(size > 0) || !(nfiles > 0)) {
  process.stderr.write('usage: hifreq-writer DIR DURATION_MS [SIZE] [FILES]\n')
  process.exit(2)
}
fs.mkdirSync(dir, { recursive: true })
const buf = Buffer.alloc(size, 0x61)
const t0 = performance.now()
let files = 0
while (performance.now() - t0 < duration) {
  buf.writeUInt32LE(files, 0)
  fs.writeFileSync(path.join(dir, `f${files % nfiles}`), buf)
  files++
}
const ms = performance.now() - t0
process.stdout.write(JSON.stringify({ files, bytes: files * size, ms }) + '\n')
