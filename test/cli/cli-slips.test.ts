/**
 * Ordinary slips get a clear refusal that loses nothing (issue 11, found in
 * a trial): `mount ''` (an unset shell variable), a checkpoint id with
 * blanks (`restore ' 2'`), and an export into a path whose parents do not
 * exist (a typo must not create a tree of directories somewhere). A
 * newcomer's `unmount DIR` works as `mount DIR` does (and status, gc,
 * verify: every command whose only operand is the workspace), and `log`
 * of a path that never existed says so and fails.
 */
import t from 'tap'
import fs from 'node:fs'
import path from 'node:path'
import { execFile } from 'node:child_process'
import { mountWorkspace, tempRoot, CLI } from '../helpers/mount.js'

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

t.test('the workspace as an operand, as mount DIR; log of a path that never existed', async t => {
  const m = await mountWorkspace(t, dir => fs.writeFileSync(path.join(dir, 'a'), 'a\n'))
  const env = { REWINDFS_HOME: m.home, REWINDFS_RUNTIME_DIR: m.runtime }
  const st = await cli(['status', m.dir], env)
  t.equal(st.code, 0, `status DIR (${st.stderr})`)
  t.match(st.stdout, new RegExp(`^workspace  ${m.dir}$`, 'm'), 'acts on DIR')
  const gc = await cli(['gc', m.dir, '--dry-run'], env)
  t.equal(gc.code, 0, `gc DIR (${gc.stderr})`)
  const two = await cli(['unmount', m.dir, '-w', m.root], env)
  t.equal(two.code, 1, 'DIR and a different -w are refused')
  t.match(two.stderr, /two workspaces given/, two.stderr)
  const blank = await cli(['unmount', ''], env)
  t.equal(blank.code, 1, 'an empty DIR is refused')
  t.match(blank.stderr, /empty name \(an unset shell variable\?\)/, blank.stderr)

  const nope = await m.cli(['log', 'nope'])
  t.equal(nope.code, 1, 'log of a path that never existed fails')
  t.match(nope.stderr, /^rewindfs: \/nope: no such path in any checkpoint of the current lineage nor in the workspace now/, nope.stderr)
  t.equal(nope.stdout, '', 'and prints no history')
  const a = await m.cli(['log', 'a'])
  t.equal(a.code, 0, 'a path of the checkpoints is no error')
  t.match(a.stdout, / A /, 'it shows where it was added')
  fs.writeFileSync(path.join(m.dir, 'new'), 'n')
  const fresh = await m.cli(['log', 'new'])
  t.equal(fresh.code, 0, `nor one made since the last checkpoint (${fresh.stderr})`)
  t.match(fresh.stdout, /^\/new: no change at any checkpoint/)

  await m.client.close()
  const u = await cli(['unmount', m.dir], env)
  t.equal(u.code, 0, `unmount DIR (${u.stderr})`)
  t.match(u.stdout, `unmounted ${m.dir}`)
  await new Promise(resolve => m.daemon.exitCode !== null || m.daemon.signalCode !== null ? resolve(null) : m.daemon.once('exit', resolve))
  const v = await cli(['verify', m.dir], env)
  t.equal(v.code, 0, `verify DIR on the stopped store (${v.stderr})`)
  t.equal(fs.readFileSync(path.join(m.dir, 'new'), 'utf8'), 'n', 'the directory holds the final state')
})
