#!/usr/bin/env node
// Builds the two FUSE bindings with node-gyp, offline (npm's bundled
// node-gyp + the system node headers):
//   fuse/native  the vendored, patched fuse-native (libfuse 2, the daemon's today)
//   fuse/ll      rewindfs's own binding on libfuse 3's low-level API
// Skips a rebuild when its build/Release/*.node is newer than every source.
// Usage: node scripts/build-native.mjs [--force]
import { spawnSync } from 'node:child_process'
import { existsSync, readdirSync, statSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..')
const bindings = [
  { dir: join(root, 'fuse', 'native'), files: ['fuse-native.c', 'semaphore.h', 'binding.gyp'], pkg: 'fuse', header: '/usr/include/fuse/fuse.h', apt: 'libfuse-dev libfuse2' },
  { dir: join(root, 'fuse', 'll'), files: ['fuse-ll.c', 'nodeid.h', 'binding.gyp'], pkg: 'fuse3', header: '/usr/include/fuse3/fuse_lowlevel.h', apt: 'libfuse3-dev fuse3' }
]
const force = process.argv.includes('--force') || process.env.REWINDFS_FORCE_NATIVE === '1'

function fail (msg) {
  console.error(`build-native: ${msg}`)
  process.exit(1)
}

function upToDate (b) {
  const releaseDir = join(b.dir, 'build', 'Release')
  if (!existsSync(releaseDir)) return false
  const nodes = readdirSync(releaseDir).filter((f) => f.endsWith('.node'))
  if (nodes.length === 0) return false
  const built = Math.min(...nodes.map((f) => statSync(join(releaseDir, f)).mtimeMs))
  const newest = Math.max(...b.files.map((f) => statSync(join(b.dir, f)).mtimeMs))
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

const nodeGyp = findNodeGyp()
if (!nodeGyp) fail('node-gyp not found (looked for npm\'s bundled node-gyp next to ' + process.execPath + ')')

for (const b of bindings) {
  const rel = b.dir.slice(root.length + 1)
  for (const f of b.files) if (!existsSync(join(b.dir, f))) fail(`missing source ${join(b.dir, f)}`)
  if (!force && upToDate(b)) {
    console.log(`build-native: ${rel}/build/Release is up to date, skipping`)
    continue
  }
  const pc = spawnSync('pkg-config', ['--cflags', '--libs', b.pkg], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] })
  if (pc.error || pc.status !== 0 || !existsSync(b.header)) {
    fail(`${b.pkg} development headers not found (pkg-config ${b.pkg} failed or ${b.header} missing).\n` +
      `  run: apt-get install -y ${b.apt}`)
  }
  const args = [nodeGyp, 'rebuild']
  // Use the distro's node headers when present so no download is attempted.
  if (existsSync('/usr/include/node/node_api.h')) args.push('--nodedir=/usr')
  else if (existsSync(join(dirname(process.execPath), '..', 'include', 'node', 'node_api.h'))) args.push('--nodedir=' + resolve(dirname(process.execPath), '..'))

  console.log(`build-native: ${process.execPath} ${args.join(' ')} (cwd ${b.dir})`)
  const r = spawnSync(process.execPath, args, {
    cwd: b.dir,
    stdio: ['ignore', 'inherit', 'inherit'],
    env: { ...process.env, CI: process.env.CI ?? 'true', npm_config_yes: 'true', npm_config_offline: 'true' }
  })
  if (r.error) fail(r.error.message)
  if (r.status !== 0) fail(`node-gyp exited with ${r.status} in ${rel}`)
  if (!upToDate(b)) fail(`node-gyp finished but no fresh ${rel}/build/Release/*.node was found`)
}
console.log('build-native: ok')
