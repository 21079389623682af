/**
 * The CLI against a real daemon: an unknown checkpoint, export into the
 * workspace, exec's checkpoint and exit status, mount errors, nested workspaces.
 */
import t from 'tap'
import fs from 'node:fs'
import path from 'node:path'
import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import { mountWorkspace, tempRoot, CLI } from '../helpers/mount.js'
import { smallTree, shellManifest } from '../helpers/small-tree.js'

const run = promisify(execFile)

t.test('unknown checkpoint: clear error, nothing changes', async t => {
  const m = await mountWorkspace(t, smallTree)
  fs.writeFileSync(path.join(m.dir, 'new.txt'), 'x')
  const before = await shellManifest(m.dir)
  const r = await m.cli(['restore', '999'])
  t.equal(r.code, 1, 'exit status 1')
  t.match(r.stderr, /no checkpoint 999/, 'says which checkpoint is unknown')
  t.match(r.stderr, /rewindfs log/, 'says what to do')
  t.equal(await shellManifest(m.dir), before, 'workspace unchanged')
  const bad = await m.cli(['restore', 'abc'])
  t.equal(bad.code, 1)
  t.match(bad.stderr, /not a checkpoint id/)
})

t.test('export refuses a destination that leads into the workspace, without touching the mount', async t => {
  const m = await mountWorkspace(t, smallTree)
  const cp = await m.client.mark({})
  const link = path.join(m.root, 'link-into-ws')
  fs.symlinkSync(path.join(m.dir, 'src'), link)
  const r = await m.cli(['export', String(cp.id), path.join(link, 'x')])
  t.equal(r.code, 1)
  t.match(r.stderr, /inside the workspace/, 'a symlink into the workspace is refused')
  t.doesNotThrow(() => fs.readdirSync(m.dir), 'the daemon still answers')
  const out = path.join(m.root, 'out')
  const ok = await m.cli(['export', String(cp.id), out])
  t.equal(ok.code, 0, ok.stderr)
  t.equal(fs.readFileSync(path.join(out, 'src/lib/a.txt'), 'utf8'), 'alpha\n', 'a plain destination works')
})

t.test('exec checkpoints before the command and passes its exit status through', async t => {
  const m = await mountWorkspace(t, smallTree)
  const before = (await m.client.log({})).length
  const r = await m.cli(['exec', '--checkpoint-each', '--', 'bash', '-c', `echo ran > ${m.dir}/exec-out.txt; exit 3`])
  t.equal(r.code, 3, 'exit status of the command')
  t.match(r.stderr, /checkpoint #\d+ before bash/)
  const log = await m.client.log({})
  t.equal(log.length, before + 1, 'one checkpoint per command')
  t.equal(log[0].label, `before: bash -c echo ran > ${m.dir}/exec-out.txt; exit 3`)
  t.equal(fs.readFileSync(path.join(m.dir, 'exec-out.txt'), 'utf8'), 'ran\n')
  await m.client.restore({ id: log[0].id })
  t.notOk(fs.existsSync(path.join(m.dir, 'exec-out.txt')), 'restoring that checkpoint undoes the command')
  const missing = await m.cli(['exec', '--', 'no-such-command-xyz'])
  t.equal(missing.code, 127)
  t.match(missing.stderr, /command not found/)
})

t.test('mount errors say what to do', async t => {
  const root = tempRoot()
  t.teardown(() => fs.rmSync(root, { recursive: true, force: true }))
  const env = { ...process.env, REWINDFS_HOME: root }
  const file = path.join(root, 'file')
  fs.writeFileSync(file, '')
  const e1 = await run(process.execPath, [CLI, 'mount', file], { env }).catch(e => e)
  t.match(e1.stderr, /not a directory/)
  const e2 = await run(process.execPath, [CLI, 'mount', path.join(root, 'missing')], { env }).catch(e => e)
  t.match(e2.stderr, /does not exist/)
  const e3 = await run(process.execPath, [CLI, 'status', '-w', root], { env }).catch(e => e)
  t.match(e3.stderr, /never been mounted/)
})

t.test('nested workspaces are refused both ways', async t => {
  const m = await mountWorkspace(t, dir => { fs.mkdirSync(path.join(dir, 'sub')) })
  const env = { ...process.env, REWINDFS_HOME: m.home }
  const inner = await run(process.execPath, [CLI, 'mount', path.join(m.dir, 'sub')], { env }).catch(e => e)
  t.match(inner.stderr, /is inside the rewindfs workspace .*nested workspaces are not supported/, 'a directory inside a workspace')
  const outer = await run(process.execPath, [CLI, 'mount', m.root], { env }).catch(e => e)
  t.match(outer.stderr, /contains the rewindfs workspace .*nested workspaces are not supported.*unmount it first/, 'a directory that contains a workspace')
  t.notOk(fs.readFileSync('/proc/mounts', 'utf8').split('\n').some(l => l.split(' ')[1] === m.root), 'nothing was mounted over it')
})
