/**
 * The live workspace without FUSE (issue 9): the POSIX calls the adapter
 * makes, straight on a Workspace over a real store and lower directory
 * (test/helpers/workspace.ts, whose fresh root is the daemon's own). What a
 * tool relies on: rename over an existing target, hard links sharing one
 * inode, an unlinked open file still readable, O_APPEND, sparse truncate,
 * the errnos of rmdir and rename on a non-empty directory, and that the
 * lower directory is never written while mounted.
 */
import t from 'tap'
import fs from 'node:fs'
import path from 'node:path'
import { tempRoot, open, write, read, me } from '../helpers/workspace.js'
import { rootOfLower, LowerLayer } from '../../fs/lower.js'

const { O_RDONLY, O_RDWR, O_APPEND } = fs.constants
const ENOENT = 2
const EEXIST = 17
const ENOTDIR = 20
const EISDIR = 21
const ENOTEMPTY = 39
/** tap's match for an FsError with this errno */
const errno = (n: number): any => ({ errno: n })

t.test('the fresh root is the directory as it is: mode, owner, subdirectory count', async t => {
  const { root, lowerDir } = tempRoot(t, 'rewindfs-wsops-')
  fs.mkdirSync(path.join(lowerDir, 'a'))
  fs.mkdirSync(path.join(lowerDir, 'b'))
  fs.chmodSync(lowerDir, 0o751)
  fs.chownSync(lowerDir, 1234, 5678)
  const rec = rootOfLower(new LowerLayer(lowerDir, 7, new Map()))
  t.equal(rec.mode & 0o7777, 0o751)
  t.equal(rec.uid, 1234)
  t.equal(rec.gid, 5678)
  t.equal(rec.subdirs, 2, 'two subdirectories')
  t.same(rec.lower, { s: 7, p: '' }, 'the listing stays in the directory of session 7')
  const { ws, close } = await open(root, lowerDir)
  const st = ws.getattr('/')
  t.equal(st.uid, 1234, 'the test builder shows the owner the daemon shows')
  t.equal(st.nlink, 4, 'nlink = 2 + subdirectories')
  await close()
})

t.test('rename over an existing file replaces it; the replaced inode is gone', async t => {
  const { root, lowerDir } = tempRoot(t, 'rewindfs-wsops-')
  fs.writeFileSync(path.join(lowerDir, 'target'), 'old target')
  const { ws, close } = await open(root, lowerDir)
  write(ws, '/new', 'new content')
  const inoNew = ws.getattr('/new').ino
  ws.rename('/new', '/target')
  t.equal(read(ws, '/target'), 'new content')
  t.equal(ws.getattr('/target').ino, inoNew, 'the renamed inode keeps its number')
  t.throws(() => ws.getattr('/new'), errno(ENOENT))
  t.equal(fs.readFileSync(path.join(lowerDir, 'target'), 'utf8'), 'old target', 'the directory underneath is untouched while mounted')
  ws.mkdir('/d', 0o755, me)
  t.throws(() => ws.rename('/target', '/d'), errno(EISDIR), 'a file cannot replace a directory')
  await close()
})

t.test('directories: rmdir and rename onto a non-empty directory fail with ENOTEMPTY', async t => {
  const { root, lowerDir } = tempRoot(t, 'rewindfs-wsops-')
  fs.mkdirSync(path.join(lowerDir, 'full'))
  fs.writeFileSync(path.join(lowerDir, 'full/x'), 'x')
  const { ws, close } = await open(root, lowerDir)
  t.throws(() => ws.rmdir('/full'), errno(ENOTEMPTY), 'a directory of the lower layer with a file')
  ws.mkdir('/empty', 0o700, me)
  t.throws(() => ws.rename('/empty', '/full'), errno(ENOTEMPTY))
  t.throws(() => ws.mkdir('/empty', 0o700, me), errno(EEXIST))
  t.throws(() => ws.rmdir('/full/x'), errno(ENOTDIR))
  ws.rename('/full', '/empty')
  t.equal(read(ws, '/empty/x'), 'x', 'a directory renamed over an empty one brings its entries')
  const { names } = ws.readdir('/')
  t.same(names.filter(n => n !== '.' && n !== '..').sort(), ['empty'])
  await close()
})

t.test('hard links share one inode: a write through one name shows through the other', async t => {
  const { root, lowerDir } = tempRoot(t, 'rewindfs-wsops-')
  const { ws, close } = await open(root, lowerDir)
  write(ws, '/a', 'first')
  ws.mkdir('/sub', 0o755, me)
  ws.link('/a', '/sub/b')
  t.equal(ws.getattr('/a').nlink, 2)
  t.equal(ws.getattr('/sub/b').ino, ws.getattr('/a').ino)
  write(ws, '/sub/b', 'SECOND')
  t.equal(read(ws, '/a'), 'SECOND')
  ws.unlink('/a')
  t.equal(ws.getattr('/sub/b').nlink, 1)
  t.equal(read(ws, '/sub/b'), 'SECOND')
  await close()
})

t.test('an unlinked open file stays readable and writable through its handle', async t => {
  const { root, lowerDir } = tempRoot(t, 'rewindfs-wsops-')
  fs.writeFileSync(path.join(lowerDir, 'f'), 'from the directory')
  const { ws, close } = await open(root, lowerDir)
  const fh = ws.open('/f', O_RDWR)
  ws.unlink('/f')
  t.throws(() => ws.getattr('/f'), errno(ENOENT))
  const b = Buffer.alloc(18)
  t.equal(ws.read(fh, b, 18, 0), 18)
  t.equal(b.toString(), 'from the directory', 'the lower content is still served')
  ws.write(fh, Buffer.from('FROM'), 4, 0)
  t.equal(ws.fgetattr(fh).nlink, 0, 'no name left')
  ws.read(fh, b, 18, 0)
  t.equal(b.toString(), 'FROM the directory')
  ws.release(fh)
  t.equal(fs.readFileSync(path.join(lowerDir, 'f'), 'utf8'), 'from the directory', 'the directory keeps its file until write-back')
  await close()
})

t.test('O_APPEND writes at the end whatever the offset; truncate up reads zeros and costs no blocks', async t => {
  const { root, lowerDir } = tempRoot(t, 'rewindfs-wsops-')
  const { ws, close } = await open(root, lowerDir)
  write(ws, '/log', 'one\n')
  const fh = ws.open('/log', O_RDWR | O_APPEND)
  ws.write(fh, Buffer.from('two\n'), 4, 0)
  ws.release(fh)
  t.equal(read(ws, '/log'), 'one\ntwo\n')
  write(ws, '/sparse', 'x')
  ws.truncate('/sparse', 10 * 1024 * 1024)
  const st = ws.getattr('/sparse')
  t.equal(st.size, 10 * 1024 * 1024)
  t.ok(st.blocks * 512 <= 64 * 1024, `a 10 MiB hole costs at most one block (${st.blocks} sectors)`)
  const rh = ws.open('/sparse', O_RDONLY)
  const b = Buffer.alloc(8, 0xff)
  t.equal(ws.read(rh, b, 8, 5 * 1024 * 1024), 8)
  t.same([...b], [0, 0, 0, 0, 0, 0, 0, 0], 'the hole reads as zeros')
  ws.release(rh)
  ws.truncate('/sparse', 0)
  t.equal(ws.getattr('/sparse').size, 0)
  await close()
})

t.test('symlinks, modes, owners and times are the workspace\'s, not the directory\'s', async t => {
  const { root, lowerDir } = tempRoot(t, 'rewindfs-wsops-')
  fs.writeFileSync(path.join(lowerDir, 'f'), 'f')
  const { ws, close } = await open(root, lowerDir)
  ws.symlink('../somewhere/else', '/link', me)
  t.equal(ws.readlink('/link'), '../somewhere/else')
  ws.chmod('/f', 0o4750)
  ws.chown('/f', 42, 43)
  ws.utimens('/f', 1_000_000_000n, 2_000_000_000n)
  const st = ws.getattr('/f')
  t.equal(st.mode & 0o7777, 0o4750, 'setuid kept')
  t.equal(st.uid, 42)
  t.equal(st.gid, 43)
  t.equal(st.atime, 1_000_000_000n)
  t.equal(st.mtime, 2_000_000_000n)
  ws.utimens('/f', null, 5_000_000_000n)
  t.equal(ws.getattr('/f').atime, 1_000_000_000n, 'UTIME_OMIT leaves atime')
  const onDisk = fs.statSync(path.join(lowerDir, 'f'))
  t.not(onDisk.mode & 0o7777, 0o4750, 'the directory\'s file keeps its mode while mounted')
  await close()
})

t.test('unsealed buffers smaller than a block: writes, reads, truncates and sealing give the bytes a plain buffer gives', async t => {
  const { root, lowerDir } = tempRoot(t, 'rewindfs-wsops-')
  const { ws, blocks, close } = await open(root, lowerDir)
  const BLOCK = 64 * 1024
  const bytes = (n: number, seed: number): Buffer => Buffer.from(Array.from({ length: n }, (_, i) => (i * 7 + seed) % 251 + 1))
  /** a new file and its model: the same bytes in a plain Buffer */
  const file = (name: string): { put: (pos: number, data: Buffer) => void, cut: (size: number) => void, check: (what: string) => void, model: () => Buffer, done: () => void } => {
    let model = Buffer.alloc(0)
    const fh = ws.create(name, 0o644, O_RDWR, me)
    return {
      put: (pos, data) => {
        t.equal(ws.write(fh, data, data.length, pos), data.length)
        if (pos + data.length > model.length) { const m = Buffer.alloc(pos + data.length); model.copy(m); model = m }
        data.copy(model, pos)
      },
      cut: (size) => {
        ws.ftruncate(fh, size)
        const m = Buffer.alloc(size); model.copy(m, 0, 0, Math.min(size, model.length)); model = m
      },
      check: (what) => {
        const size = ws.fgetattr(fh).size
        t.equal(size, model.length, `${name} ${what}: size`)
        const b = Buffer.alloc(size, 0xee)
        t.equal(ws.read(fh, b, size, 0), size, `${name} ${what}: read the whole file`)
        t.ok(b.equals(model), `${name} ${what}: bytes`)
        // reads that start and end inside a block, past a small buffer's end
        for (const [pos, len] of [[1, 10], [4090, 20], [5000, 3000], [BLOCK - 5, 10]]) {
          if (pos >= size) continue
          const n = Math.min(len, size - pos)
          const p = Buffer.alloc(n, 0xee)
          ws.read(fh, p, n, pos)
          t.ok(p.equals(model.subarray(pos, pos + n)), `${name} ${what}: read of ${n} at ${pos}`)
        }
      },
      model: () => model,
      done: () => ws.release(fh)
    }
  }
  const f = file('/f')
  f.put(0, bytes(100, 1)); f.check('100 bytes (a 4 KiB buffer)')
  f.put(70000, bytes(10, 3)); f.check('a write in the next block: the first reads zeros past its buffer')
  ws.sealAll(); f.check('sealed: the short buffer stored as its block\'s whole length')
  f.put(10, bytes(5, 4)); f.check('a write into a sealed block loads it whole')
  f.cut(BLOCK + 3); f.put(BLOCK, bytes(3, 5)); f.check('truncate and write at a block boundary')
  ws.sealAll(); f.check('sealed again')
  const g = file('/g')
  g.put(0, bytes(100, 6)); g.put(3000, bytes(2000, 7)); g.check('a write past the first buffer grows it')
  g.put(BLOCK + 10, bytes(50, 9)); g.put(BLOCK, bytes(BLOCK, 10)); g.check('a write of a whole block over a buffered one (stored at once, the buffer dropped)')
  g.put(2 * BLOCK + 7, bytes(BLOCK, 11)); g.check('a block-sized write not on a block boundary (buffered)')
  ws.sealAll(); g.check('sealed')
  const h = file('/h')
  h.put(0, bytes(3000, 8)); h.cut(50); h.check('truncate down inside a short buffer')
  h.cut(20000); h.check('truncate up: zeros past the buffer')
  ws.sealAll(); h.check('sealed: padded to the size')
  // the same bytes written through one whole buffer seal into the same blocks (dedup is by content, not by buffer size)
  const before = blocks.size
  for (const [x, name] of [[f, '/f2'], [h, '/h2']] as const) {
    const c = ws.create(name, 0o644, O_RDWR, me)
    ws.write(c, x.model(), x.model().length, 0)
    ws.release(c)
  }
  ws.sealAll()
  t.equal(blocks.size, before, 'copies written in one go add no block')
  for (const x of [f, g, h]) x.done()
  await close()
})
