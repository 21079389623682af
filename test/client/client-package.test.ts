/**
 * The TypeScript client as a package: `npm pack` (scripts/pack-client.ts)
 * produces @rewindfs/client; installed into an empty project it type-checks
 * through its exports map (client, agent half, discovery, messages), and the
 * README's snippet, taken from README.md as written, runs with plain node in
 * a mounted workspace and finds the daemon from its path.
 */
import t from 'tap'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import { mountWorkspace } from '../helpers/mount.js'
import { packClient } from '../../scripts/pack-client.js'
import { ROOT } from '../../scripts/generate.js'

const run = promisify(execFile)

/** The first ```js block of README.md that imports @rewindfs/client. */
function readmeSnippet (): string {
  const md = fs.readFileSync(path.join(ROOT, 'README.md'), 'utf8')
  for (const m of md.matchAll(/```js\n([\s\S]*?)```/g)) if (m[1].includes("from '@rewindfs/client'")) return m[1]
  throw new Error('README.md has no ```js block importing @rewindfs/client')
}

t.test('npm pack makes @rewindfs/client; the packed client imports, type-checks and connects', async t => {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'rewindfs-pkg-'))
  t.teardown(() => fs.rmSync(tmp, { recursive: true, force: true }))
  const tgz = packClient(path.join(tmp, 'out'))
  t.match(path.basename(tgz), /^rewindfs-client-\d+\.\d+\.\d+\.tgz$/, 'npm pack wrote the tarball')
  const list = (await run('tar', ['tzf', tgz])).stdout.split('\n')
  for (const f of ['package/package.json', 'package/client/client.js', 'package/client/client.d.ts', 'package/client/agent.js', 'package/proto/codec.js']) t.ok(list.includes(f), `it holds ${f}`)
  t.notOk(list.some(f => f.endsWith('.ts') && !f.endsWith('.d.ts')), 'no TypeScript sources')

  const app = path.join(tmp, 'app')
  fs.mkdirSync(app)
  fs.writeFileSync(path.join(app, 'package.json'), JSON.stringify({ name: 'app', private: true, type: 'module' }))
  await run('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline', tgz], { cwd: app, timeout: 300000 })
  t.ok(fs.existsSync(path.join(app, 'node_modules/@rewindfs/client/package.json')), 'npm installed it')

  fs.writeFileSync(path.join(app, 'check.ts'), [
    "import { RewindClient, RewindError } from '@rewindfs/client'",
    "import { Runner, backtrackTools, type Model } from '@rewindfs/client/agent'",
    "import { discover } from '@rewindfs/client/discover'",
    "import type { CheckpointInfo } from '@rewindfs/client/messages'",
    'export async function f (model: Model): Promise<CheckpointInfo> {',
    "  const c = await RewindClient.connect({ workspace: '/w' })",
    "  void new Runner({ client: c, model, run: 'r', executeTool: async () => ({ result: 1, exitStatus: 0 }) }); void backtrackTools; void discover; void RewindError",
    "  return await c.mark({ label: 'x' })",
    '}',
    '// @ts-expect-error: mark takes an object',
    'export const bad = (c: RewindClient) => c.mark(3)',
    '',
  ].join('\n'))
  const tsc = path.join(ROOT, 'node_modules/.bin/tsc')
  const typed = await run(tsc, ['--noEmit', '--strict', '--module', 'nodenext', '--moduleResolution', 'nodenext', '--target', 'es2022', '--skipLibCheck', 'check.ts'], { cwd: app }).then(() => '', (e: any) => `${e.stdout}${e.stderr}`)
  t.equal(typed, '', 'the exports map and types resolve under NodeNext (and a wrong call is a type error)')

  const m = await mountWorkspace(t)
  fs.writeFileSync(path.join(app, 'snippet.mjs'), readmeSnippet())
  const r = await run(process.execPath, [path.join(app, 'snippet.mjs')], { cwd: m.dir, env: { ...process.env, REWINDFS_RUNTIME_DIR: m.runtime }, timeout: 60000 })
    .then(r => r.stdout, (e: any) => `FAILED ${e.stdout}${e.stderr}`)
  t.match(r, /^checkpoint #\d+, context \{ messages: \[\] \}/, `the README's snippet runs with plain node: ${r.trim()}`)
  const id = Number(/#(\d+)/.exec(r)?.[1])
  const log = await m.client.log({ limit: 5 })
  t.ok(log.some(c => c.id === id && c.label === 'before migration'), 'its checkpoint is in the log')
})
