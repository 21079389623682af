#!/usr/bin/env node
// Builds the vendored, patched fuse-native binding in fuse/native with
// node-gyp, offline (npm's bundled node-gyp + the system node headers).
// Skips the rebuild when build/Release/*.node is newer than every source.
// Usage: node scripts/build-native.mjs [--force]
import { spawnSync } from 'node:child_process'
import { existsSync, readdirSync, statSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..')
const nativeDir = join(root, 'fuse', 'native')
const sources = ['fuse-native.c', 'semaphore.h', 'binding.gyp'].map((f) => join(nativeDir, f))
const releaseDir = join(nativeDir, 'build', 'Release')
const force = process.argv.includes('--force') || process.env.REWINDFS_FORCE_NATIVE === '1'

function fail (msg) {
  console.error(`build-native: ${msg}`)
  process.exit(1)
}

function upToDate () {
  if (!existsSync(releaseDir)) return false
  const nodes = readdirSync(releaseDir).filter((f) => f.endsWith('.node'))
  if (nodes.length === 0) return false
  const built = Math.min(...nodes.map((f) => statSync(join(releaseDir, f)).mtimeMs))
  const newest = Math.max(...sources.map((f) => statSync(f).mtimeMs))
  return built > newest
}

function findNodeGyp () {
  const candidates = [
    process.env.npm_config_node_gyp,
    join(dirname(process.execPath), '..', 'lib', 'node_modules', 'npm', 'node_modules', 'node-gyp', 'bin', 'node-gyp.js'),
    '/usr/lib/node_modules/npm/node_modules/node-gyp/bin/node-gyp.js',
    '/usr/local/lib/node_modules/npm/node_modules/node-gyp/bin/node-gyp.js',
    '/usr/share/nodejs/node-gyp/bin/node-gyp.js'
  ]
  for (const c of candidates) if (c && existsSync(c)) return c
  return null
}

for (const f of sources) if (!existsSync(f)) fail(`missing source ${f}`)

if (!force && upToDate()) {
  console.log('build-native: fuse/native/build/Release is up to date, skipping')
  process.exit(0)
}

const pc = spawnSync('pkg-config', ['--cflags', '--libs', 'fuse'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] })
if (pc.error || pc.status !== 0 || !existsSync('/usr/include/fuse/fuse.h')) {
  fail('libfuse 2 development headers not found (pkg-config fuse failed or /usr/include/fuse/fuse.h missing).\n' +
    '  run: apt-get install -y libfuse-dev libfuse2 fuse')
}

const nodeGyp = findNodeGyp()
if (!nodeGyp) fail('node-gyp not found (looked for npm\'s bundled node-gyp next to ' + process.execPath + ')')

const args = [nodeGyp, 'rebuild']
// Use the distro's node headers when present so no download is attempted.
if (existsSync('/usr/include/node/node_api.h')) args.push('--nodedir=/usr')
else if (existsSync(join(dirname(process.execPath), '..', 'include', 'node', 'node_api.h'))) args.push('--nodedir=' + resolve(dirname(process.execPath), '..'))

console.log(`build-native: ${process.execPath} ${args.join(' ')} (cwd ${nativeDir})`)
const r = spawnSync(process.execPath, args, {
  cwd: nativeDir,
  stdio: ['ignore', 'inherit', 'inherit'],
  env: { ...process.env, CI: process.env.CI ?? 'true', npm_config_yes: 'true', npm_config_offline: 'true' }
})
if (r.error) fail(r.error.message)
if (r.status !== 0) fail(`node-gyp exited with ${r.status}`)
if (!upToDate()) fail('node-gyp finished but no fresh build/Release/*.node was found')
console.log('build-native: ok')
