/**
 * The small tree many end-to-end tests mount (src/lib/a.txt, an empty
 * directory, README, a relative symlink), and the shell manifest
 * (scripts/manifest.sh) they compare trees with.
 */
import fs from 'node:fs'
import path from 'node:path'
import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import { CLI } from './mount.js'

const run = promisify(execFile)
const MANIFEST = path.resolve(path.dirname(CLI), '../../scripts/manifest.sh')

/** Fills `dir` with the small tree: src/lib/a.txt ('alpha\n'), empty/, README ('readme\n'), link -> src/lib/a.txt. */
export function smallTree (dir: string): void {
  fs.mkdirSync(path.join(dir, 'src/lib'), { recursive: true })
  fs.mkdirSync(path.join(dir, 'empty'))
  fs.writeFileSync(path.join(dir, 'src/lib/a.txt'), 'alpha\n')
  fs.writeFileSync(path.join(dir, 'README'), 'readme\n')
  fs.symlinkSync('src/lib/a.txt', path.join(dir, 'link'))
}

/** scripts/manifest.sh's listing of `dir` (one line a path: type, mode, size, hash, link target); rejects when the script fails. */
export async function shellManifest (dir: string): Promise<string> {
  return (await run('bash', [MANIFEST, dir], { maxBuffer: 64 * 1024 * 1024 })).stdout
}
