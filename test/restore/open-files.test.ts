/**
 * Open files across a restore on the libfuse 3 low-level layer (issue 13;
 * README "What holds", DECISIONS.md "Open files keep their content across a
 * restore"): a restore acts like renaming the checkpoint's tree over the
 * live one. Descriptors and mappings opened before it keep the content they
 * had (no SIGBUS, no ESTALE), writes through them go to a private copy that
 * never reaches the restored state, hard links of a restored file share its
 * new identity, a shell whose directory is restored (or moved by the
 * restore) sees the restored listing, a directory stream open across a
 * restore goes on, the node ids of old incarnations are forgotten exactly,
 * gc keeps what they read, and a tool call's write through an old
 * descriptor is not attributed to it as a change of the live file. The git
 * loop is open-files-git.test.ts.
 */
import t, { type Test } from 'tap'
import fs from 'node:fs'
import path from 'node:path'
import { spawn } from 'node:child_process'
import { mountWorkspace, type Mounted } from '../helpers/mount.js'
import { startHolder } from '../helpers/holder.js'

process.env.REWINDFS_FUSE = 'll'

/** Restores of the leak check (REWINDFS_OPENFILES_RESTORES; the long form runs 10,000: scripts/test-long.sh). */
const LEAK_RESTORES = Number(process.env.REWINDFS_OPENFILES_RESTORES ?? 100)

type Nodes = { nodes: number, lookups: number, forgetUnknown: number, afterForget: number, old: number, renewed: number, oldForgotten: number, oldWrittenDropped: number, oldBytesDropped: number, oldPrivateBytes: number }

async function nodes (m: Mounted): Promise<Nodes> {
  const s = await m.client.status() as any
  if (s.kernelNodes === undefined) throw new Error('status has no kernelNodes: the daemon is not on the low-level layer')
  return s.kernelNodes
}

/** Polls until the kernel holds no old incarnation (forgets are asynchronous), at most 10 s; the last counts. */
async function oldGone (m: Mounted): Promise<Nodes> {
  let n = await nodes(m)
  for (let i = 0; i < 200 && n.old > 0; i++) { await new Promise(resolve => setTimeout(resolve, 50)); n = await nodes(m) }
  return n
}

function pattern (size: number, seed: number): Buffer {
  const b = Buffer.alloc(size)
  for (let i = 0; i < size; i++) b[i] = (i * 31 + seed * 7 + (i >> 9)) & 0xff
  return b
}

t.test('the reproduction: a 300 KB file mapped and open across a restore to where it is 6 bytes reads the old bytes, no SIGBUS, no ESTALE', async t => {
  const m = await mountWorkspace(t, dir => { fs.writeFileSync(path.join(dir, 'big.bin'), 'small\n') })
  fs.readdirSync(m.dir) // listed before the checkpoint: the file keeps its inode number (README "Editors, watchers ...")
  const cp = await m.client.mark({ label: 'six bytes' })
  const big = pattern(300 * 1024, 1)
  fs.writeFileSync(path.join(m.dir, 'big.bin'), big)
  const inoBefore = fs.statSync(path.join(m.dir, 'big.bin')).ino
  const h = startHolder(t, m.dir)
  await h.value(`
fd = os.open('big.bin', os.O_RDONLY)
mp = mmap.mmap(fd, ${big.length}, prot=mmap.PROT_READ)
res = mp[0:4].hex()`)
  const r = await m.client.restore({ id: cp.id })
  t.same(r.oldIncarnations, { files: 1, handles: 1 }, 'the reply says one file stayed open on its old incarnation, with one handle')
  const after = await h.value(`
st = os.fstat(fd)
res = {'tail': mp[${big.length - 4}:${big.length}].hex(), 'mid': mp[150000:150004].hex(), 'pread': os.pread(fd, 8, 200000).hex(), 'size': st.st_size, 'nlink': st.st_nlink, 'ino': st.st_ino}`)
  t.equal(h.signal, null, 'touching the mapping raised no SIGBUS')
  t.same(after, {
    tail: big.subarray(big.length - 4).toString('hex'),
    mid: big.subarray(150000, 150004).toString('hex'),
    pread: big.subarray(200000, 200008).toString('hex'),
    size: big.length,
    nlink: 0,
    ino: inoBefore
  }, 'the mapping and the descriptor read the old bytes; fstat says the old size, nlink 0 (as if unlinked) and the same inode number')
  t.equal(fs.readFileSync(path.join(m.dir, 'big.bin'), 'utf8'), 'small\n', 'a new open reads the restored 6 bytes')
  t.equal(fs.statSync(path.join(m.dir, 'big.bin')).ino, inoBefore, 'the restored file reports the same inode number (git\'s index stays valid)')
  const reopened = await h.value(`
fd2 = os.open('/proc/self/fd/%d' % fd, os.O_RDONLY)
res = os.pread(fd2, 4, 299996).hex()
os.close(fd2)`)
  t.equal(reopened, big.subarray(299996, 300000).toString('hex'), 'reopening the old descriptor through /proc opens the old incarnation')
  t.ok((await nodes(m)).old >= 1, 'the old incarnation is held while open')
  await h.value('mp.close(); os.close(fd)')
  const end = await oldGone(m)
  t.equal(end.old, 0, 'after close the kernel forgot the old incarnation')
  t.equal(end.forgetUnknown, 0, 'no forget of a node id not held')
  t.equal(end.afterForget, 0, 'no request named a node id not held')
  await h.end()
})

t.test('writes through a descriptor opened before a restore go to a private copy, never into the restored state, and are counted when dropped', async t => {
  const m = await mountWorkspace(t, dir => { fs.writeFileSync(path.join(dir, 'log.txt'), 'v1\n') })
  const cp = await m.client.mark({})
  fs.appendFileSync(path.join(m.dir, 'log.txt'), 'v2\n')
  // a writer appending as fast as it can while the restore runs; it reads its file back through its own descriptor at the end
  const writer = spawn('python3', ['-c', `
import os, sys, time
fd = os.open('log.txt', os.O_WRONLY | os.O_APPEND)
rd = os.open('log.txt', os.O_RDONLY)
sys.stdout.write('ready\\n'); sys.stdout.flush()
n = 0
t0 = time.time()
while time.time() - t0 < 3:
    os.write(fd, b'line %d\\n' % n); n += 1
    time.sleep(0.002)
data = os.pread(rd, 1 << 20, 0)
sys.stdout.write('%d %s\\n' % (n, data.hex())); sys.stdout.flush()
sys.stdin.readline()
`], { cwd: m.dir, stdio: ['pipe', 'pipe', 'pipe'] })
  t.teardown(() => { writer.kill('SIGKILL') })
  let out = ''
  writer.stdout!.on('data', d => { out += String(d) })
  while (!out.includes('ready\n')) await new Promise(resolve => setTimeout(resolve, 20))
  await new Promise(resolve => setTimeout(resolve, 500))
  const r = await m.client.restore({ id: cp.id })
  t.same(r.oldIncarnations, { files: 1, handles: 2 }, 'the reply names the file and both of the writer\'s descriptors')
  while (out.split('\n').length < 3) await new Promise(resolve => setTimeout(resolve, 50))
  const [count, hex] = out.split('\n')[1].split(' ')
  const lines = Array.from({ length: Number(count) }, (_v, i) => `line ${i}\n`).join('')
  t.equal(Buffer.from(hex, 'hex').toString(), 'v1\nv2\n' + lines, `the writer reads back through its descriptor every line it wrote (${count}), before and after the restore, in order`)
  t.equal(fs.readFileSync(path.join(m.dir, 'log.txt'), 'utf8'), 'v1\n', 'the restored file holds the checkpoint\'s bytes only: no write through the old descriptor reached it')
  const saved = await m.client.mark({ label: 'after' })
  t.equal(Buffer.from(await m.client.read({ path: 'log.txt', id: saved.id })).toString(), 'v1\n', 'nor the next checkpoint')
  const before = await nodes(m)
  t.ok(before.oldPrivateBytes > 0, `the private copy is held while the descriptors are open (${before.oldPrivateBytes} bytes)`)
  writer.stdin!.end('\n')
  await new Promise(resolve => writer.once('exit', resolve))
  const end = await oldGone(m)
  t.equal(end.old, 0, 'the old incarnation was forgotten after close')
  t.equal(end.oldWrittenDropped, 1, 'one old incarnation with writes was dropped')
  t.ok(end.oldBytesDropped > 0 && end.oldBytesDropped <= lines.length, `and its bytes written after the restore are counted (${end.oldBytesDropped})`)
  t.equal(end.oldPrivateBytes, 0, 'no private copy is left')
  t.match(fs.readFileSync(path.join(m.home, 'daemon.log'), 'utf8'), /bytes written through descriptors opened before a restore.*were dropped/, 'the daemon log says what was dropped')
  t.equal(end.afterForget + end.forgetUnknown, 0, 'the node id accounting stayed exact')
})

t.test('hard links of a restored file: every name gets the new identity, a descriptor keeps the old', async t => {
  const m = await mountWorkspace(t, dir => { fs.mkdirSync(path.join(dir, 'd')); fs.writeFileSync(path.join(dir, 'a'), 'one\n'); fs.linkSync(path.join(dir, 'a'), path.join(dir, 'd/b')) })
  const ino = fs.statSync(path.join(m.dir, 'a')).ino
  t.equal(fs.statSync(path.join(m.dir, 'd/b')).ino, ino, 'one inode, two names')
  const cp = await m.client.mark({})
  fs.writeFileSync(path.join(m.dir, 'd/b'), 'two, longer\n')
  t.equal(fs.readFileSync(path.join(m.dir, 'a'), 'utf8'), 'two, longer\n', 'both names changed (both cached now)')
  const fd = fs.openSync(path.join(m.dir, 'a'), 'r')
  await m.client.restore({ id: cp.id })
  for (const name of ['a', 'd/b']) {
    const st = fs.statSync(path.join(m.dir, name))
    t.same([fs.readFileSync(path.join(m.dir, name), 'utf8'), st.size, st.nlink, st.ino], ['one\n', 4, 2, ino], `${name}: the restored content, size and link count, the same inode number`)
  }
  const b = Buffer.alloc(64)
  t.equal(b.subarray(0, fs.readSync(fd, b, 0, 64, 0)).toString(), 'two, longer\n', 'the descriptor opened before reads the old content')
  t.equal(fs.fstatSync(fd).nlink, 0, 'and its file says nlink 0')
  const ln = await m.sh(`ln -L /proc/${process.pid}/fd/${fd} back`)
  t.match([ln.code, ln.stderr], [1, /No such file/], 'the old incarnation cannot be linked back into the workspace (ENOENT, as an unlinked file)')
  t.notOk(fs.existsSync(path.join(m.dir, 'back')), 'nothing was linked')
  fs.closeSync(fd)
  const end = await oldGone(m)
  t.equal(end.old + end.afterForget + end.forgetUnknown, 0, 'forgotten after close, accounting exact')
})

/** A bash reading commands from stdin in `cwd`; `ask` runs one and resolves with its output. */
function shellIn (t: Test, cwd: string): { ask: (cmd: string) => Promise<string>, end: () => void } {
  const sh = spawn('bash', ['-c', `cd ${JSON.stringify(cwd)} && exec bash`], { cwd: '/', stdio: ['pipe', 'pipe', 'pipe'] })
  t.teardown(() => { sh.kill('SIGKILL') })
  let buf = ''
  sh.stdout!.on('data', d => { buf += String(d) })
  sh.stderr!.on('data', d => { buf += String(d) })
  let n = 0
  return {
    ask: async (cmd) => {
      const mark = `--done-${n++}--`
      buf = ''
      sh.stdin!.write(`${cmd} 2>&1; echo ${mark}\n`)
      while (!buf.includes(mark)) await new Promise(resolve => setTimeout(resolve, 10))
      return buf.slice(0, buf.indexOf(mark)).trim()
    },
    end: () => { sh.stdin!.end() }
  }
}

t.test('a shell whose directory is restored sees the restored listing and content', async t => {
  const m = await mountWorkspace(t, dir => { fs.mkdirSync(path.join(dir, 'src')); fs.writeFileSync(path.join(dir, 'src/keep.c'), 'int k;\n'); fs.writeFileSync(path.join(dir, 'src/edit.c'), 'v1\n') })
  fs.readdirSync(path.join(m.dir, 'src')) // listed before the checkpoint, so that src keeps its inode number (as it would once anything had looked inside)
  const cp = await m.client.mark({})
  const sh = shellIn(t, path.join(m.dir, 'src'))
  t.equal(await sh.ask('ls; cat edit.c'), 'edit.c\nkeep.c\nv1', 'before')
  await sh.ask('echo v2-longer > edit.c; touch new.c; rm keep.c; exec 7<edit.c')
  t.equal(await sh.ask('ls; cat edit.c'), 'edit.c\nnew.c\nv2-longer', 'changed')
  await m.client.restore({ id: cp.id })
  t.equal(await sh.ask('ls; cat edit.c; pwd -P'), `edit.c\nkeep.c\nv1\n${fs.realpathSync(path.join(m.dir, 'src'))}`, 'the restored listing and content, and the directory keeps its identity (pwd)')
  t.equal(await sh.ask('cat <&7'), 'v2-longer', 'its descriptor 7 opened before reads the old content')
  sh.end()
})

t.test('a restore that swaps directory nesting, with shells inside both directories and a directory stream open across it', async t => {
  const m = await mountWorkspace(t, dir => {
    fs.mkdirSync(path.join(dir, 'a/b'), { recursive: true })
    fs.writeFileSync(path.join(dir, 'a/b/file'), 'deep\n')
    fs.mkdirSync(path.join(dir, 'many'))
    for (let i = 0; i < 3000; i++) fs.writeFileSync(path.join(dir, 'many', `n${i}`), '')
  })
  await m.sh('find . > /dev/null') // every directory listed before the checkpoint: they keep their inode numbers
  const cp = await m.client.mark({})
  // swap: a/b -> b/a (b holds a now)
  fs.renameSync(path.join(m.dir, 'a/b'), path.join(m.dir, 'b'))
  fs.renameSync(path.join(m.dir, 'a'), path.join(m.dir, 'b/a'))
  for (let i = 0; i < 3000; i += 2) fs.rmSync(path.join(m.dir, 'many', `n${i}`))
  const inA = shellIn(t, path.join(m.dir, 'b/a'))
  const inB = shellIn(t, path.join(m.dir, 'b'))
  t.equal(await inB.ask('ls'), 'a\nfile', 'B holds a and file before the restore')
  const h = startHolder(t, m.dir)
  const first = await h.value("it = os.scandir('many'); seen = [next(it).name for _ in range(10)]; res = len(seen)")
  t.equal(first, 10, 'a directory stream read 10 entries')
  await m.client.restore({ id: cp.id })
  const real = fs.realpathSync(m.dir)
  t.equal(await inA.ask('ls'), 'b', 'the shell in A (now /a) lists b')
  t.equal(await inB.ask('ls; cat file'), 'file\ndeep', 'the shell in B (now /a/b) lists file and reads it')
  t.equal((await m.sh('find . -path ./many -prune -o -print | sort')).stdout, '.\n./a\n./a/b\n./a/b/file\n', 'the tree is the checkpoint\'s, no loop, no error')
  // the kernel dropped the directories' old names; once their new paths are looked up (the find above), their working directories have paths again
  t.equal(await inA.ask('pwd -P'), `${real}/a`, 'then the shell in A is in /a')
  t.equal(await inB.ask('pwd -P'), `${real}/a/b`, 'and the shell in B in /a/b')
  const rest = await h.run('seen += [e.name for e in it]; res = seen')
  t.notOk('err' in rest, `the stream goes on after the restore (${JSON.stringify('err' in rest ? rest : '')})`)
  const names = 'ok' in rest ? rest.ok as string[] : []
  t.equal(new Set(names).size, names.length, `no entry twice (${names.length} read)`)
  t.ok(names.every(n => /^n\d+$/.test(n) && Number(n.slice(1)) < 3000), 'every entry is one the directory had')
  t.equal(fs.readdirSync(path.join(m.dir, 'many')).length, 3000, 'a new listing is the restored one')
  const n = await nodes(m)
  t.equal(n.afterForget + n.forgetUnknown, 0, 'the node id accounting stayed exact')
  inA.end(); inB.end()
  await h.end()
})

t.test(`forget accounting for old incarnations: ${LEAK_RESTORES} restores with a file held open leak nothing, and none is answered after its last forget`, async t => {
  const m = await mountWorkspace(t, dir => { fs.writeFileSync(path.join(dir, 'f'), 'A\n'); fs.writeFileSync(path.join(dir, 'g'), 'gA\n') })
  const a = await m.client.mark({})
  fs.writeFileSync(path.join(m.dir, 'f'), 'B, longer\n')
  fs.writeFileSync(path.join(m.dir, 'g'), 'gB\n')
  const b = await m.client.mark({})
  const held = fs.openSync(path.join(m.dir, 'f'), 'r') // on B's content, for the whole run
  const t0 = Date.now()
  let maxOld = 0
  for (let i = 0; i < LEAK_RESTORES; i++) {
    const target = i % 2 === 0 ? a : b
    await m.client.restore({ id: target.id })
    // a reader per round: the current incarnation is looked up (and cached) before the next restore renews it
    const want = i % 2 === 0 ? 'A\n' : 'B, longer\n'
    const got = fs.readFileSync(path.join(m.dir, 'f'), 'utf8')
    if (got !== want) { t.fail(`restore ${i}: f reads ${JSON.stringify(got)}, not ${JSON.stringify(want)}`); break }
    if (i % 50 === 49 || i === LEAK_RESTORES - 1) maxOld = Math.max(maxOld, (await nodes(m)).old)
  }
  const ms = Date.now() - t0
  t.comment(`open-files: ${LEAK_RESTORES} restores with a file held open in ${ms} ms (${(ms / LEAK_RESTORES).toFixed(1)} ms each)`)
  const b64 = Buffer.alloc(64)
  t.equal(b64.subarray(0, fs.readSync(held, b64, 0, 64, 0)).toString(), 'B, longer\n', 'the descriptor held through every restore still reads the content it was opened on')
  t.ok(maxOld <= 3, `old incarnations held at any check: at most ${maxOld} (the held one, and the last round's until its forget)`)
  const renewed = (await nodes(m)).renewed
  t.ok(renewed >= LEAK_RESTORES, `every restore renewed the file the kernel held (${renewed})`)
  fs.closeSync(held)
  const end = await oldGone(m)
  t.equal(end.old, 0, 'after close no old incarnation is held')
  t.equal(end.oldForgotten, end.renewed, 'every old incarnation made was forgotten')
  t.equal(end.forgetUnknown, 0, 'no forget named a node id not held')
  t.equal(end.afterForget, 0, 'no request named a node id after its last forget')
  t.equal(end.oldPrivateBytes, 0, 'no private copy is held')
})

t.test('gc with an old incarnation alive keeps the blocks it reads', async t => {
  const m = await mountWorkspace(t)
  const empty = await m.client.mark({ label: 'empty' })
  const data = pattern(3 * 65536 + 100, 9)
  fs.writeFileSync(path.join(m.dir, 'only-here.bin'), data)
  const fd = fs.openSync(path.join(m.dir, 'only-here.bin'), 'r')
  // the restore seals the file into "before restore to N" on the branch it abandons; gc below drops that branch
  const r = await m.client.restore({ id: empty.id })
  t.same(r.oldIncarnations, { files: 1, handles: 1 }, 'the file stays open on its old incarnation')
  const report = await m.client.gc({ keepLast: 0, abandonedAfterMs: 0 })
  t.ok(report.checkpoints.removed.length >= 1, `gc removed the abandoned checkpoints (${report.checkpoints.removed.join(', ')}), the only ones holding the file`)
  const got = Buffer.alloc(data.length + 10)
  const n = fs.readSync(fd, got, 0, got.length, 0)
  t.ok(n === data.length && got.subarray(0, n).equals(data), 'the descriptor still reads every byte of it after gc')
  fs.closeSync(fd)
  await oldGone(m)
  const again = await m.client.gc({ keepLast: 0, abandonedAfterMs: 0 })
  t.ok(again.blocks.removed >= 3, `once forgotten, the next gc collects its blocks (${again.blocks.removed})`)
  t.equal((await m.sh('cat only-here.bin')).code, 1, 'and the file is not in the workspace')
})

t.test('a write through an old descriptor is not attributed to the tool call as a change of the live file', async t => {
  const m = await mountWorkspace(t, dir => { fs.writeFileSync(path.join(dir, 'f.txt'), 'v1\n') })
  fs.readdirSync(m.dir)
  const cp = await m.client.mark({})
  // a tool call opens f.txt, writes, and writes again through the same descriptor after the restore
  const script = `cd '${m.dir}' || exit 9
exec 3>>f.txt
echo before >&3
touch ready
while [ ! -e go ]; do sleep 0.05; done
echo after-the-restore >&3
exec 3>&-`
  const ex = m.cli(['exec', '--no-checkpoint', '--', 'bash', '-c', script])
  while (!fs.existsSync(path.join(m.dir, 'ready'))) await new Promise(resolve => setTimeout(resolve, 20))
  const r = await m.client.restore({ id: cp.id })
  t.equal(r.oldIncarnations?.handles, 1, 'the call\'s descriptor stays on the old incarnation of f.txt')
  // the restored f.txt is then changed by a process outside the call
  fs.writeFileSync(path.join(m.dir, 'f.txt'), 'v3 by someone else\n')
  fs.writeFileSync(path.join(m.dir, 'go'), '')
  t.equal((await ex).code, 0, 'the call ended')
  t.equal(fs.readFileSync(path.join(m.dir, 'f.txt'), 'utf8'), 'v3 by someone else\n', 'the call\'s late write did not reach the live file')
  await m.client.mark({ label: 'after the call' })
  const calls = (await m.client.candidates({ limit: 1 }))[0].calls?.calls ?? []
  const pathsOf = (tool: string | null): string[] => {
    const c = calls.find(x => tool === null ? x.call === null : x.tool === tool)
    return c === undefined ? [] : [...c.created, ...c.modified, ...c.deleted].map(f => f.path)
  }
  t.notOk(pathsOf('exec').includes('f.txt'), `the call is not credited with f.txt (it lists ${JSON.stringify(pathsOf('exec'))})`)
  t.ok(pathsOf(null).includes('f.txt'), 'the change of f.txt is no call\'s')
})

t.test('a shared writable mapping whose descriptor was closed before the restore: its dirty pages go to the old incarnation, never to the restored file', async t => {
  const m = await mountWorkspace(t, dir => { fs.writeFileSync(path.join(dir, 'm.bin'), 'restored\n') })
  fs.readdirSync(m.dir)
  const cp = await m.client.mark({})
  fs.writeFileSync(path.join(m.dir, 'm.bin'), Buffer.alloc(8192, 0x61))
  const h = startHolder(t, m.dir)
  await h.value(`
fd = os.open('m.bin', os.O_RDWR)
mp = mmap.mmap(fd, 8192, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
os.close(fd)`)
  const r = await m.client.restore({ id: cp.id })
  t.same(r.oldIncarnations, { files: 1, handles: 1 }, 'the mapping holds the old incarnation open (its descriptor is closed)')
  const got = await h.run("mp[0:5] = b'dirty'; mp.flush(); res = mp[0:8].decode()")
  t.same(got, { ok: 'dirtyaaa' }, 'a write into the mapping and msync after the restore succeed (written back to the old incarnation)')
  t.equal(h.signal, null, 'no SIGBUS')
  t.equal(fs.readFileSync(path.join(m.dir, 'm.bin'), 'utf8'), 'restored\n', 'the restored file is untouched')
  await h.value('mp.close()')
  const end = await oldGone(m)
  t.equal(end.old, 0, 'after munmap the old incarnation is forgotten')
  t.ok(end.oldWrittenDropped >= 1, 'with its written pages dropped and counted')
  t.equal(end.afterForget + end.forgetUnknown, 0, 'no request after its last forget')
  await h.end()
})
