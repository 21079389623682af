/**
 * Builds the TypeScript client as an npm package and packs it with `npm pack`:
 * `@rewindfs/client`, its exports map (client/npm-package.json) naming the
 * client (`.`), the agent half (`./agent`), discovery (`./discover`) and the
 * message types (`./messages`), with their .d.ts. The package holds the
 * compiled client/ and proto/ of dist/ (run `tsc -b` first) in the same
 * relative layout, so their imports resolve unchanged; its dependencies are
 * the root package.json's ranges of the libraries they import (ws, msgpackr).
 *
 * Usage: node dist/scripts/pack-client.js [OUT_DIR]   (default: dist/pkg);
 * prints the path of the .tgz.
 */
import fs from 'node:fs'
import path from 'node:path'
import { execFileSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..')
/** The libraries the compiled client and proto import (checked against the compiled files when packing). */
const RUNTIME_DEPS = ['ws', 'msgpackr', 'canonicalize']

function copyCompiled (from: string, to: string): void {
  for (const e of fs.readdirSync(from, { withFileTypes: true })) {
    const src = path.join(from, e.name)
    if (e.isDirectory()) { copyCompiled(src, path.join(to, e.name)); continue }
    if (!e.name.endsWith('.js') && !e.name.endsWith('.d.ts')) continue
    fs.mkdirSync(to, { recursive: true })
    fs.copyFileSync(src, path.join(to, e.name))
  }
}

/** Every bare import specifier of the .js files under `dir` (node: builtins left out). */
function bareImports (dir: string): Set<string> {
  const out = new Set<string>()
  for (const e of fs.readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (!e.isFile() || !e.name.endsWith('.js')) continue
    const text = fs.readFileSync(path.join(e.parentPath ?? e.path, e.name), 'utf8')
    for (const m of text.matchAll(/\bfrom '([^'./][^']*)'/g)) if (!m[1].startsWith('node:')) out.add(m[1])
  }
  return out
}

/**
 * Stage the package in `out`/stage and pack it into `out`. Returns the .tgz
 * path. Throws when dist/ is not built, or when the compiled files import a
 * library the package does not depend on.
 */
export function packClient (out: string = path.join(ROOT, 'dist/pkg')): string {
  const dist = path.join(ROOT, 'dist')
  if (!fs.existsSync(path.join(dist, 'client/client.js'))) throw new Error('dist/client is not built: run node_modules/.bin/tsc -b first')
  const stage = path.join(out, 'stage')
  fs.rmSync(stage, { recursive: true, force: true })
  copyCompiled(path.join(dist, 'client'), path.join(stage, 'client'))
  copyCompiled(path.join(dist, 'proto'), path.join(stage, 'proto'))
  const unknown = [...bareImports(stage)].filter(d => !RUNTIME_DEPS.includes(d))
  if (unknown.length > 0) throw new Error(`the client imports ${unknown.join(', ')}, which the package does not depend on: add it to RUNTIME_DEPS in scripts/pack-client.ts`)
  const root = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { version: string; dependencies: Record<string, string> }
  const manifest = JSON.parse(fs.readFileSync(path.join(ROOT, 'client/npm-package.json'), 'utf8')) as Record<string, unknown>
  manifest.version = root.version
  manifest.dependencies = Object.fromEntries(RUNTIME_DEPS.map(d => [d, root.dependencies[d]]))
  fs.writeFileSync(path.join(stage, 'package.json'), JSON.stringify(manifest, null, 2) + '\n')
  fs.copyFileSync(path.join(ROOT, 'client/README.md'), path.join(stage, 'README.md'))
  const name = execFileSync('npm', ['pack', '--pack-destination', out, '--silent'], { cwd: stage, encoding: 'utf8' }).trim().split('\n').pop()!
  return path.join(out, name)
}

if (process.argv[1] !== undefined && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  console.log(packClient(process.argv[2] !== undefined ? path.resolve(process.argv[2]) : undefined))
}
