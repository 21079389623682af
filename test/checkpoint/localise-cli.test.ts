/**
 * Localise and undo one bad step through a real mount and the CLI (issue
 * 16): `log PATH` lists the checkpoints at which a file changed, `bisect`
 * finds the first checkpoint at which a check fails on a scripted history
 * (running it in scratch exports, never in the workspace), `undo --dry-run`
 * lists and changes nothing, `undo` reverts the bad step only, `restore ID
 * -- PATH` puts one file back and leaves the rest byte-identical, and the
 * kernel sees the restored bytes at once (the InvalidationPlan reached it).
 * The mount is unmounted in teardown (helpers/mount.ts).
 */
import t from 'tap'
import fs from 'node:fs'
import path from 'node:path'
import { mountWorkspace } from '../helpers/mount.js'

t.test('localise a bad step with bisect, undo it, restore one file', async t => {
  const m = await mountWorkspace(t, dir => {
    fs.mkdirSync(path.join(dir, 'src'))
    fs.writeFileSync(path.join(dir, 'src/calc.js'), 'module.exports = (a, b) => a + b\n')
    fs.writeFileSync(path.join(dir, 'README'), 'calc\n')
  })
  const f = (p: string): string => path.join(m.dir, p)
  const mark = async (label: string, meta?: unknown): Promise<number> => (await m.client.mark({ label, meta })).id
  const segment = (tool: string, args: string): unknown => ({
    kind: 'rewindfs.segment/1', run: 'r', from: null, llmCalls: 1, tools: [{ name: tool, args, exitStatus: 0 }],
    files: { created: [], modified: [], deleted: [] }, totals: { created: 0, modified: 0, deleted: 0, bytesCreated: 0, bytesModifiedDelta: 0, bytesDeleted: 0 }
  })
  const first = (await m.client.log({ limit: 1 }))[0].id
  // a scripted history: 6 steps, the 4th breaks calc.js
  const ids: number[] = []
  for (let i = 1; i <= 6; i++) {
    fs.writeFileSync(f(`notes-${i}.md`), `step ${i}\n`)
    if (i === 4) fs.writeFileSync(f('src/calc.js'), 'module.exports = (a, b) => a - b\n')
    if (i === 5) fs.appendFileSync(f('README'), 'more\n')
    ids.push(await mark(`step ${i}`, i === 4 ? segment('edit_file', '{"path":"src/calc.js"}') : undefined))
  }
  const bad = ids[3]

  const log = await m.cli(['log', 'src/calc.js', '-w', m.dir])
  t.equal(log.code, 0, log.stderr)
  const lines = log.stdout.trim().split('\n')
  t.equal(lines.length, 2, 'one change of calc.js since the mount, and the mount checkpoint where it first appears')
  t.match(lines[0], new RegExp(`^#${bad} .* M 33 B -> 33 B .*step 4`), 'the checkpoint, the change and the sizes')
  t.match(lines[1], new RegExp(`^#${first} .* A - -> 33 B`), 'added at the first checkpoint')
  const json = JSON.parse((await m.cli(['log', 'src', '--json', '-w', m.dir])).stdout)
  t.same(json.map((e: { checkpoint: number }) => e.checkpoint), [bad, first], 'a directory: the change below it')

  const blame = await m.cli(['blame', 'src/calc.js', '-w', m.dir])
  t.equal(blame.code, 0, blame.stderr)
  t.match(blame.stdout, new RegExp(`/src/calc.js: M at checkpoint #${bad} .*step 4`), 'blame: the checkpoint that last changed it')
  t.match(blame.stdout, /tool call: edit_file \{"path":"src\/calc.js"\} -> 0/, 'and the tool call of its segment')

  const check = ['node', '-e', "process.exit(require(process.cwd() + '/src/calc.js')(2, 2) === 4 ? 0 : 1)"]
  const bis = await m.cli(['bisect', '--good', String(first), '--bad', String(ids[5]), '--quiet', '-w', m.dir, '--', ...check])
  t.equal(bis.code, 0, bis.stderr)
  t.match(bis.stdout, new RegExp(`first failing checkpoint: #${bad} \\(step 4\\); the last passing one is #${ids[2]}`))
  t.match(bis.stdout, /M \/src\/calc\.js/, 'the changed files of that segment')
  const probes = bis.stderr.split('\n').filter(l => / (fails|passes) /.test(l)).length
  t.ok(probes <= 2 + Math.ceil(Math.log2(7)), `O(log n) probes (${probes})`)
  t.equal(fs.readFileSync(f('src/calc.js'), 'utf8'), 'module.exports = (a, b) => a - b\n', 'the workspace was not touched')

  fs.writeFileSync(f('unsaved.txt'), 'not yet checkpointed\n')
  const dry = await m.cli(['undo', String(bad), '--dry-run', '-w', m.dir])
  t.equal(dry.code, 0, dry.stderr)
  t.match(dry.stdout, /M \/src\/calc\.js/)
  t.match(dry.stdout, /D \/notes-4\.md/)
  t.match(dry.stdout, /dry run/)
  t.ok(fs.existsSync(f('notes-4.md')), 'the dry run changed nothing')
  const undo = await m.cli(['undo', String(bad), '-w', m.dir])
  t.equal(undo.code, 0, undo.stderr)
  t.equal(fs.readFileSync(f('src/calc.js'), 'utf8'), 'module.exports = (a, b) => a + b\n', 'the bad edit is reverted (seen through the kernel at once)')
  t.notOk(fs.existsSync(f('notes-4.md')), 'and the file that step added is gone')
  t.equal(fs.readFileSync(f('README'), 'utf8'), 'calc\nmore\n', 'the later step is kept')
  t.equal(fs.readFileSync(f('unsaved.txt'), 'utf8'), 'not yet checkpointed\n', 'unsaved work is kept')
  t.ok(fs.existsSync(f('notes-6.md')))
  const again = await m.cli(['undo', String(ids[4]), '-w', m.dir])
  t.equal(again.code, 0, 'undo of the README step: nothing later touched it')

  // restore one file from before, the rest byte-identical
  fs.writeFileSync(f('README'), 'broken\n')
  fs.writeFileSync(f('src/calc.js'), 'garbage\n')
  const before = fs.readFileSync(f('src/calc.js'))
  const r = await m.cli(['restore', String(first), '-w', m.dir, '--', 'README'])
  t.equal(r.code, 0, r.stderr)
  t.match(r.stdout, /M \/README/)
  t.equal(fs.readFileSync(f('README'), 'utf8'), 'calc\n', 'the file is back')
  t.same(fs.readFileSync(f('src/calc.js')), before, 'the rest is byte-identical')
  t.ok(fs.existsSync(f('notes-6.md')))
  const st = await m.client.status()
  t.equal(st.branch, 'main', 'no new branch')
  const bad2 = await m.cli(['restore', String(first), '-w', m.dir, '--', '/etc/passwd'])
  t.equal(bad2.code, 1)
  t.match(bad2.stderr, /outside the workspace/)
})
