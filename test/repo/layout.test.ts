/**
 * The layout holds (README "Layout", issue 9): no source file is over 500
 * lines without the README's Layout section naming it (with the sentence
 * that says why it is one file), and no two source files import each other
 * through a chain (the folders' direction is the compiler's, tsc -b; this is
 * the same rule between files, which tsc allows).
 */
import t from 'tap'
import fs from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..')
/** Not ours to split or not source: dependencies, build output, the vendored binding, results. */
const SKIP = new Set(['node_modules', 'dist', '.git', 'fuse/native', 'bench/results'])
const SOURCE = /\.(ts|c|h|mjs|py|sh)$/

/** Every source file under ROOT, relative, '/'-separated. */
function sources (dir = ''): string[] {
  const out: string[] = []
  for (const e of fs.readdirSync(path.join(ROOT, dir), { withFileTypes: true })) {
    const rel = dir === '' ? e.name : `${dir}/${e.name}`
    if (SKIP.has(rel) || e.name.startsWith('.')) continue
    if (e.isDirectory()) out.push(...sources(rel))
    else if (e.isFile() && SOURCE.test(e.name) && !e.name.endsWith('.d.ts')) out.push(rel)
  }
  return out
}

const files = sources()

t.test('a source file over 500 lines is named in README "Layout"', async t => {
  const readme = fs.readFileSync(path.join(ROOT, 'README.md'), 'utf8')
  const start = readme.indexOf('\n## Layout')
  t.ok(start >= 0, 'the README has a Layout section')
  const end = readme.indexOf('\n## ', start + 1)
  const layout = readme.slice(start, end < 0 ? undefined : end)
  const long = files.filter(f => fs.readFileSync(path.join(ROOT, f), 'utf8').split('\n').length > 500)
  t.ok(long.length > 0, 'there are such files (the check looks at something)')
  for (const f of long) t.ok(layout.includes(f), `${f} is named in Layout`)
})

t.test('no import cycle between source files', async t => {
  const ts = new Set(files.filter(f => f.endsWith('.ts')))
  const edges = new Map<string, string[]>()
  for (const f of ts) {
    const src = fs.readFileSync(path.join(ROOT, f), 'utf8')
    const out: string[] = []
    for (const m of src.matchAll(/^\s*(?:import|export)\b[^'"]*?\bfrom\s+['"](\.[^'"]+)['"]/gm)) {
      const to = path.posix.normalize(path.posix.join(path.posix.dirname(f), m[1])).replace(/\.js$/, '.ts')
      if (ts.has(to)) out.push(to)
    }
    edges.set(f, out)
  }
  t.ok([...edges.values()].some(e => e.length > 0), 'imports were found (the check looks at something)')
  // depth-first search: a file met again while still on the path closes a cycle
  const state = new Map<string, 'open' | 'done'>()
  const cycles: string[] = []
  const visit = (f: string, trail: string[]): void => {
    state.set(f, 'open')
    for (const g of edges.get(f) ?? []) {
      if (state.get(g) === 'open') cycles.push([...trail.slice(trail.indexOf(g)), g].join(' -> '))
      else if (!state.has(g)) visit(g, [...trail, g])
    }
    state.set(f, 'done')
  }
  for (const f of edges.keys()) if (!state.has(f)) visit(f, [f])
  t.same(cycles, [], 'none')
})
