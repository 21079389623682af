/**
 * The workspace's operations by inode number (fs/api.ts InodeOps), which
 * the low-level FUSE adapter calls, without FUSE: each checked against the
 * path-based view of the same workspace.
 */
import t from 'tap'
import fs from 'node:fs'
import path from 'node:path'
import { tempRoot, open, me, read } from '../helpers/workspace.js'
import { ROOT_INO } from '../../fs/inode.js'
import { RENAME_EXCHANGE, RENAME_NOREPLACE } from '../../fs/api.js'
import { FsError } from '../../base/errno.js'

const { O_RDWR, O_RDONLY, O_WRONLY, O_TRUNC, O_EXCL, O_CREAT } = fs.constants

function errnoOf (f: () => unknown): number {
  try { f() } catch (e) { if (e instanceof FsError) return e.errno; throw e }
  return 0
}

t.test('lookup, create, mkdir, symlink, mknod, link by (parent inode, name)', async (t) => {
  const { root, lowerDir } = tempRoot(t, 'rewindfs-wsino-')
  fs.writeFileSync(path.join(lowerDir, 'lower.txt'), 'from the directory')
  const { ws, close } = await open(root, lowerDir)
  t.teardown(close)
  const low = ws.lookupAt(ROOT_INO, 'lower.txt')
  t.equal(low.size, 18, 'a file of the lower layer is found by name')
  t.equal(ws.statIno(low.ino).ino, low.ino)
  t.equal(errnoOf(() => ws.lookupAt(ROOT_INO, 'missing')), 2, 'ENOENT')
  t.equal(errnoOf(() => ws.lookupAt(low.ino, 'x')), 20, 'ENOTDIR below a file')
  t.equal(errnoOf(() => ws.lookupAt(ROOT_INO, 'n'.repeat(256))), 36, 'ENAMETOOLONG')

  const d = ws.mkdirAt(ROOT_INO, 'd', 0o755, me)
  t.equal(d.mode, 0o40755)
  t.equal(ws.getattr('/d').ino, d.ino, 'the path view sees the same inode')
  t.equal(ws.parentIno(d.ino), ROOT_INO)
  const c = ws.createAt(d.ino, 'f', 0o640, O_RDWR | O_CREAT, me)
  t.equal(c.stat.mode, 0o100640)
  ws.write(c.fh, Buffer.from('hello'), 5, 0)
  t.equal(ws.fgetattr(c.fh).size, 5)
  ws.release(c.fh)
  t.equal(read(ws, '/d/f'), 'hello')
  t.equal(errnoOf(() => ws.createAt(d.ino, 'f', 0o644, O_RDWR | O_CREAT | O_EXCL, me)), 17, 'O_EXCL on an existing name: EEXIST')
  const again = ws.createAt(d.ino, 'f', 0o644, O_RDWR | O_CREAT, me)
  t.equal(again.stat.ino, c.stat.ino, 'create without O_EXCL opens the existing file')
  ws.release(again.fh)

  const s = ws.symlinkAt(d.ino, 's', '../lower.txt', me)
  t.equal(ws.readlinkIno(s.ino), '../lower.txt')
  t.equal(s.size, 12)
  t.equal(errnoOf(() => ws.readlinkIno(d.ino)), 22, 'readlink of a directory: EINVAL')
  const p = ws.mknodAt(d.ino, 'p', 0o10644, 0, me)
  t.equal(p.mode, 0o10644, 'a fifo')
  const l = ws.linkAt(c.stat.ino, ROOT_INO, 'hard')
  t.equal(l.nlink, 2, 'link answers nlink + 1')
  t.equal(ws.statIno(c.stat.ino).nlink, 2)
  t.equal(errnoOf(() => ws.linkAt(d.ino, ROOT_INO, 'dl')), 1, 'hard link of a directory: EPERM')
  t.equal(errnoOf(() => ws.mkdirAt(d.ino, 'f', 0o755, me)), 17, 'EEXIST')
  for (const bad of ['', '.', '..', 'a/b']) t.equal(errnoOf(() => ws.mkdirAt(ROOT_INO, bad, 0o755, me)), 22, `invalid name ${JSON.stringify(bad)}`)
  t.same(ws.readdirIno(d.ino).map(([n]) => n), ['f', 's', 'p'], 'readdir in creation order')
  t.same(ws.readdirIno(d.ino).map(([, st]) => st.ino), ['/d/f', '/d/s', '/d/p'].map(x => ws.getattr(x).ino), 'with each entry\'s stat')
  t.equal(errnoOf(() => ws.readdirIno(c.stat.ino)), 20, 'readdir of a file: ENOTDIR')
})

t.test('unlink, rmdir, rename with RENAME_NOREPLACE and RENAME_EXCHANGE', async (t) => {
  const { root, lowerDir } = tempRoot(t, 'rewindfs-wsino-')
  const { ws, close } = await open(root, lowerDir)
  t.teardown(close)
  const a = ws.mkdirAt(ROOT_INO, 'a', 0o755, me)
  const b = ws.mkdirAt(ROOT_INO, 'b', 0o755, me)
  const x = ws.createAt(a.ino, 'x', 0o644, O_RDWR, me); ws.write(x.fh, Buffer.from('xx'), 2, 0); ws.release(x.fh)
  const y = ws.createAt(b.ino, 'y', 0o644, O_RDWR, me); ws.write(y.fh, Buffer.from('yyy'), 3, 0); ws.release(y.fh)
  const sub = ws.mkdirAt(a.ino, 'sub', 0o755, me)

  t.equal(errnoOf(() => ws.renameAt(a.ino, 'x', b.ino, 'y', RENAME_NOREPLACE)), 17, 'RENAME_NOREPLACE onto an existing name: EEXIST')
  t.equal(read(ws, '/b/y'), 'yyy', 'nothing changed')
  t.equal(errnoOf(() => ws.renameAt(a.ino, 'nope', b.ino, 'y', RENAME_NOREPLACE)), 2, 'missing source: ENOENT')
  t.equal(errnoOf(() => ws.renameAt(a.ino, 'x', b.ino, 'q', RENAME_NOREPLACE | RENAME_EXCHANGE)), 22, 'both flags: EINVAL')

  ws.renameAt(a.ino, 'x', b.ino, 'y', RENAME_EXCHANGE)
  t.equal(read(ws, '/b/y'), 'xx', 'exchanged')
  t.equal(read(ws, '/a/x'), 'yyy')
  t.equal(ws.lookupAt(b.ino, 'y').ino, x.stat.ino, 'the inodes swapped names')
  t.equal(errnoOf(() => ws.renameAt(a.ino, 'x', b.ino, 'missing', RENAME_EXCHANGE)), 2, 'RENAME_EXCHANGE with a missing target: ENOENT')
  // a directory and a file exchanged across directories: subdirectory counts follow
  ws.renameAt(a.ino, 'sub', b.ino, 'y', RENAME_EXCHANGE)
  t.equal(ws.statIno(a.ino).nlink, 2, 'a lost its subdirectory')
  t.equal(ws.statIno(b.ino).nlink, 3, 'b gained it')
  t.equal(ws.parentIno(sub.ino), b.ino, '".." of the moved directory')
  t.equal(errnoOf(() => ws.renameAt(ROOT_INO, 'b', sub.ino, 'inside', 0)), 22, 'a directory into itself: EINVAL')
  t.equal(errnoOf(() => ws.renameAt(ROOT_INO, 'a', b.ino, 'y', RENAME_EXCHANGE)), 0, 'a directory exchanged with a directory outside it')
  t.ok(ws.getattr('/b/y').mode & 0o40000, '/b/y is now the directory a')

  ws.renameAt(ROOT_INO, 'b', ROOT_INO, 'c', 0)
  t.equal(ws.getattr('/c').ino, b.ino, 'plain rename')
  t.equal(errnoOf(() => ws.rmdirAt(ROOT_INO, 'c')), 39, 'ENOTEMPTY')
  t.equal(errnoOf(() => ws.unlinkAt(ROOT_INO, 'c')), 21, 'unlink of a directory: EISDIR')
  // a (now /c/y) holds the file exchanged in as 'sub'
  t.equal(ws.getattr('/c/y/sub').ino, x.stat.ino)
  t.equal(errnoOf(() => ws.rmdirAt(a.ino, 'sub')), 20, 'rmdir of a file: ENOTDIR')
  ws.unlinkAt(a.ino, 'sub')
  t.equal(errnoOf(() => ws.lookupAt(a.ino, 'sub')), 2, 'unlinked')
})

t.test('open by inode: O_TRUNC truncates in the open; a handle outlives its last name (fstat after unlink)', async (t) => {
  const { root, lowerDir } = tempRoot(t, 'rewindfs-wsino-')
  const { ws, close } = await open(root, lowerDir)
  t.teardown(close)
  const f = ws.createAt(ROOT_INO, 'f', 0o644, O_RDWR, me)
  ws.write(f.fh, Buffer.from('some content'), 12, 0)
  ws.release(f.fh)
  const r = ws.openAt(f.stat.ino, O_RDONLY)
  t.equal(ws.fgetattr(r).size, 12, 'no O_TRUNC: the content stays')
  ws.release(r)
  const r2 = ws.openAt(f.stat.ino, O_RDONLY | O_TRUNC)
  t.equal(ws.fgetattr(r2).size, 0, 'O_RDONLY|O_TRUNC truncates, as on Linux')
  ws.write(r2, Buffer.from('again'), 5, 0)
  ws.release(r2)
  const w = ws.openAt(f.stat.ino, O_WRONLY | O_TRUNC)
  t.equal(ws.fgetattr(w).size, 0, 'O_TRUNC with write access truncates at open')
  ws.write(w, Buffer.from('new'), 3, 0)
  ws.unlinkAt(ROOT_INO, 'f')
  t.equal(ws.fgetattr(w).size, 3, 'fstat of the unlinked open file')
  t.equal(ws.fgetattr(w).nlink, 0, 'with nlink 0')
  t.equal(ws.statIno(f.stat.ino).size, 3, 'getattr by inode still answers while it is open')
  ws.write(w, Buffer.from('more'), 4, 3)
  const b = Buffer.alloc(7)
  t.equal(ws.read(w, b, 7, 0), 7)
  t.equal(b.toString(), 'newmore')
  ws.release(w)
  t.equal(errnoOf(() => ws.statIno(f.stat.ino)), 116, 'after the last close the inode is gone: ESTALE')
  t.equal(errnoOf(() => ws.openAt(f.stat.ino, O_RDONLY)), 116)
})

t.test('setattr by inode: mode, owner, size and times in one call; through a handle', async (t) => {
  const { root, lowerDir } = tempRoot(t, 'rewindfs-wsino-')
  const { ws, close } = await open(root, lowerDir)
  t.teardown(close)
  const f = ws.createAt(ROOT_INO, 'f', 0o644, O_RDWR, me)
  ws.write(f.fh, Buffer.from('0123456789'), 10, 0)
  const before = ws.statIno(f.stat.ino)
  const st = ws.setattrIno(f.stat.ino, { mode: 0o4755, uid: 7, size: 4, atime: 5n, mtime: 1600000000123456789n }, null)
  t.equal(st.mode, 0o104755)
  t.equal(st.uid, 7)
  t.equal(st.gid, before.gid, 'gid absent: unchanged')
  t.equal(st.size, 4)
  t.equal(st.atime, 5n)
  t.equal(st.mtime, 1600000000123456789n, 'nanoseconds kept')
  t.ok(st.ctime >= before.ctime)
  const now = ws.setattrIno(f.stat.ino, { mtime: 'now' }, f.fh)
  t.ok(now.mtime > 1600000000123456789n, 'UTIME_NOW')
  t.equal(now.atime, 5n, 'atime omitted')
  ws.setattrIno(0, { size: 2 }, f.fh)
  t.equal(ws.fgetattr(f.fh).size, 2, 'a truncate through a handle acts on its inode')
  ws.release(f.fh)
  t.equal(errnoOf(() => ws.setattrIno(9999, { mode: 0o600 }, null)), 116, 'an unknown inode: ESTALE')
})

t.test('xattrs by inode; data ranges of a sparse file', async (t) => {
  const { root, lowerDir } = tempRoot(t, 'rewindfs-wsino-')
  const { ws, close } = await open(root, lowerDir)
  t.teardown(close)
  const f = ws.createAt(ROOT_INO, 'f', 0o644, O_RDWR, me)
  ws.setxattrIno(f.stat.ino, 'user.k', Buffer.from('v'), 0)
  t.same(Buffer.from(ws.xattrIno(f.stat.ino, 'user.k')!), Buffer.from('v'))
  t.equal(ws.xattrIno(f.stat.ino, 'user.none'), undefined)
  t.same(ws.listxattrIno(f.stat.ino), ['user.k'])
  t.same(ws.listxattr('/f'), ['user.k'], 'the path view agrees')
  t.equal(errnoOf(() => ws.setxattrIno(f.stat.ino, 'user.k', Buffer.from('w'), 1)), 17, 'XATTR_CREATE on an existing name: EEXIST')
  t.equal(errnoOf(() => ws.setxattrIno(f.stat.ino, 'bogus.k', Buffer.from('w'), 0)), 95, 'unknown namespace: ENOTSUP')
  ws.removexattrIno(f.stat.ino, 'user.k')
  t.same(ws.listxattrIno(f.stat.ino), [])
  t.equal(errnoOf(() => ws.removexattrIno(f.stat.ino, 'user.k')), 61, 'ENODATA')

  t.same(ws.dataRangesOf(f.fh), [], 'an empty file has no data')
  const block = 64 * 1024
  ws.write(f.fh, Buffer.from('x'), 1, 3 * block + 10)
  t.same(ws.dataRangesOf(f.fh), [[3 * block, 3 * block + 11]], 'unsealed data counts; the rest is a hole')
  ws.sealAll()
  ws.write(f.fh, Buffer.alloc(block, 1), block, 0)
  t.same(ws.dataRangesOf(f.fh), [[0, block], [3 * block, 3 * block + 11]], 'sealed and unsealed blocks, in order')
  ws.release(f.fh)
})
