/**
 * Ordinary slips get a clear refusal that loses nothing (issue 11, found in
 * a trial): `mount ''` (an unset shell variable), a checkpoint id with
 * blanks (`restore ' 2'`), and an export into a path whose parents do not
 * exist (a typo must not create a tree of directories somewhere).
 */
import t from 'tap'
import fs from 'node:fs'
import path from 'node:path'
import { execFile } from 'node:child_process'
import { mountWorkspace, tempRoot, CLI } from './helpers/mount.js'

const cli = async (args: string[], env: Record<string, string>): Promise<{ code: number, stdout: string, stderr: string }> =>
  await new Promise(resolve => execFile(process.execPath, [CLI, ...args], { env: { ...process.env, ...env }, timeout: 60000 },
    (err: any, stdout, stderr) => resolve({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stdout, stderr })))

t.test('mount with an empty name', async t => {
  const root = tempRoot()
  t.teardown(() => fs.rmSync(root, { recursive: true, force: true }))
  const r = await cli(['mount', ''], { REWINDFS_HOME: root })
  t.equal(r.code, 1, 'refused')
  t.match(r.stderr, /^rewindfs: rewindfs mount needs a directory, and was given an empty name \(an unset shell variable\?\)/, `says what was wrong: ${r.stderr}`)
  t.match(r.stderr, /rewindfs mount \. for the current directory/, 'and what to type')
  t.equal(fs.readdirSync(root).length, 0, 'nothing was created')
})

t.test('an id with blanks, an export whose parent is missing', async t => {
  const m = await mountWorkspace(t, dir => fs.writeFileSync(path.join(dir, 'a'), 'a\n'))
  fs.writeFileSync(path.join(m.dir, 'a'), 'b\n')
  const cp = await m.client.mark({ label: 'b' })
  const r = await m.cli(['restore', ` ${cp.id}`])
  t.equal(r.code, 1, 'restore " N" is refused')
  t.match(r.stderr, new RegExp(`" ${cp.id}" is not a checkpoint id: ids are numbers from 1 \\(optionally after #, no blanks\\)`), r.stderr)
  t.equal((await m.client.log()).length, 2, 'and nothing happened (no "before restore" checkpoint)')
  t.equal((await m.cli(['restore', `#${cp.id}`])).code, 0, '#N is an id')

  const deep = path.join(m.root, 'missing', 'deep', 'x')
  const e = await m.cli(['export', String(cp.id), deep])
  t.equal(e.code, 1, 'export into a missing parent is refused')
  t.match(e.stderr, new RegExp(`its parent ${path.dirname(deep)} does not exist \\(or is not a directory\\); create it first \\(mkdir -p ${path.dirname(deep)}\\)`), e.stderr)
  t.notOk(fs.existsSync(path.join(m.root, 'missing')), 'and no directory was created')
  const ok = await m.cli(['export', String(cp.id), path.join(m.root, 'x')])
  t.equal(ok.code, 0, `a new directory in an existing one is made (${ok.stderr})`)
  t.match(ok.stdout, new RegExp(`exported checkpoint #${cp.id} to`))
  t.equal(fs.readFileSync(path.join(m.root, 'x', 'a'), 'utf8'), 'b\n')
})
