/**
 * The Python package (client/python): installed with
 * `pip install --no-build-isolation` into a venv made with
 * `python3 -m venv --system-site-packages` (Debian's python3-websockets and
 * python3-msgpack, no package index), then its unittest suite runs against a
 * real daemon found from the workspace path: the sync and asyncio APIs,
 * values in both encodings, the backtrack tools, the runner, and the
 * conformance vectors (proto/vectors/v1.json) in JSON and msgpack frames.
 * The package is installed from a copy, so the build leaves nothing in the
 * source tree.
 */
import t from 'tap'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { execFile, spawnSync } from 'node:child_process'
import { promisify } from 'node:util'
import { mountWorkspace } from '../helpers/mount.js'
import { ROOT } from '../../scripts/generate.js'
import { VECTORS_FILE } from '../helpers/vectors.js'

const run = promisify(execFile)
/** Debian's interpreter: the one that sees python3-websockets (a pyenv python3 on PATH does not). */
const PYTHON = fs.existsSync('/usr/bin/python3') ? '/usr/bin/python3' : 'python3'
const hasVenv = spawnSync(PYTHON, ['-c', 'import venv, ensurepip'], { stdio: 'ignore' }).status === 0

t.test('the Python package installs with pip and passes its tests', { skip: hasVenv ? false : `python3-venv is missing (${PYTHON} cannot import venv and ensurepip): apt-get install python3-venv, or run npm test, whose setup installs it` }, async t => {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'rewindfs-py-'))
  t.teardown(() => fs.rmSync(tmp, { recursive: true, force: true }))
  const src = path.join(tmp, 'python')
  fs.cpSync(path.join(ROOT, 'client/python'), src, { recursive: true, filter: f => !/(__pycache__|\.egg-info|\/build)$/.test(f) })
  const venv = path.join(tmp, 'venv')
  await run(PYTHON, ['-m', 'venv', '--system-site-packages', venv], { timeout: 120000 })
  const pip = await run(path.join(venv, 'bin/pip'), ['install', '--no-build-isolation', '--no-index', '--disable-pip-version-check', src], { timeout: 300000 })
  t.match(pip.stdout, /Successfully installed rewindfs-0\.1\.0/, 'pip installed it')
  const where = await run(path.join(venv, 'bin/python'), ['-c', 'import rewindfs, rewindfs_client; print(rewindfs.__file__)'], { cwd: tmp })
  t.ok(where.stdout.trim().startsWith(venv), `imported from the venv: ${where.stdout.trim()}`)

  const m = await mountWorkspace(t, dir => {
    fs.writeFileSync(path.join(dir, 'vectors.txt'), 'hello\n')
    fs.writeFileSync(path.join(dir, 'a.txt'), 'a\n')
  })
  const env = { ...process.env, REWINDFS_TEST_WORKSPACE: m.dir, REWINDFS_RUNTIME_DIR: m.runtime, REWINDFS_VECTORS: VECTORS_FILE, REWINDFS_EXPECT_PREFIX: venv }
  let out = ''
  let code = 0
  try {
    const r = await run(path.join(venv, 'bin/python'), ['-m', 'unittest', 'discover', '-s', path.join(src, 'tests'), '-t', path.join(src, 'tests'), '-v'], { cwd: tmp, env, timeout: 600000 })
    out = r.stdout + r.stderr
  } catch (e: any) { out = `${e.stdout ?? ''}${e.stderr ?? ''}`; code = typeof e.code === 'number' ? e.code : 1 }
  t.equal(code, 0, 'the unittest suite passes')
  const ran = /Ran (\d+) tests?/.exec(out)
  t.ok(ran !== null && Number(ran[1]) >= 13, `ran ${ran?.[1]} tests`)
  t.notMatch(out, /skipped/, 'none skipped (the daemon is there)')
  for (const line of out.split('\n')) {
    const r = /^(test_\w+) \(([\w.]+)\)[^\n]*\.\.\. (ok|FAIL|ERROR|skipped.*)$/.exec(line)
    if (r !== null) t.equal(r[3], 'ok', r[2])
  }
  if (code !== 0) t.comment(out)
})
