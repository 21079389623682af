/**
 * The lower layer without FUSE (fs/lower.ts; issue 9): the workspace's own
 * directory as the daemon reads it, and the frozen copies that answer the
 * references of earlier mount sessions once the directory changed.
 *  - a listing is read once: the first answers every later one, so a
 *    second look at a path shows the same atimes (and the same names);
 *  - freeze: a copy per range of sessions, extended when the content is the
 *    same, refused for a session already frozen; frozenFor and isLive pick
 *    the copy that answers a reference, the live directory for the others;
 *  - a frozen file's content is its blocks, a live one's an fd; a frozen
 *    path of the wrong kind is EIO; a frozen symlink's target is kept;
 *  - frozen keys: a name that is not UTF-8 round-trips through the store key.
 */
import t from 'tap'
import fs from 'node:fs'
import path from 'node:path'
import { tempRoot } from '../helpers/workspace.js'
import { LowerLayer, frozenKey, relOfFrozenKey, rootOfLower } from '../../fs/lower.js'
import { BlockList } from '../../fs/blocklist.js'
import { decodeName } from '../../proto/names.js'

t.test('a lower directory is listed once; later listings are the first', async t => {
  const { lowerDir } = tempRoot(t, 'rewindfs-lower-')
  fs.mkdirSync(path.join(lowerDir, 'd'))
  fs.writeFileSync(path.join(lowerDir, 'd', 'x'), 'x')
  const lower = new LowerLayer(lowerDir, 1, new Map())
  const first = lower.list({ s: 1, p: 'd' })
  t.same(first.map(e => e.name), ['x'], 'the names of the directory')
  t.equal(first[0].st.size, 1, 'with their stat')
  fs.writeFileSync(path.join(lowerDir, 'd', 'y'), 'y')
  t.equal(lower.list({ s: 1, p: 'd' }), first, 'a second listing is the first (the same atimes, the same names)')
  t.equal(lower.known('d'), first, 'known() returns it')
  t.equal(lower.known('elsewhere'), undefined, 'and nothing for a path never listed')
  t.throws(() => lower.list({ s: 1, p: 'missing' }), { errno: 5 } as any, 'a directory that cannot be read is EIO')
  const root = rootOfLower(lower)
  t.equal(root.mode & 0o170000, 0o040000, 'the fresh root is a directory')
  t.same(root.lower, { s: 1, p: '' }, 'whose listing is left in the directory')
})

t.test('frozen copies answer the sessions they cover', async t => {
  const { lowerDir } = tempRoot(t, 'rewindfs-lower-')
  fs.writeFileSync(path.join(lowerDir, 'f'), 'live bytes')
  fs.symlinkSync('live-target', path.join(lowerDir, 'l'))
  const lower = new LowerLayer(lowerDir, 4, new Map())
  const blocks = BlockList.fromDense([7, 0, 9]).encode()
  const one = lower.freeze('f', 2, { blocks })
  t.same(one?.map(f => [f.from, f.to]), [[1, 2]], 'the first copy covers sessions 1..2')
  t.equal(lower.freeze('f', 2, { blocks }), null, 'a session already frozen is refused')
  t.same(lower.freeze('f', 3, { blocks })?.map(f => [f.from, f.to]), [[1, 3]], 'the same content extends the copy')
  t.same(lower.freeze('f', 4, { blocks: BlockList.fromDense([8]).encode() })?.map(f => [f.from, f.to]), [[1, 3], [4, 4]], 'other content adds one')
  t.same(lower.frozenFor({ s: 2, p: 'f' })?.blocks, blocks, 'a reference of session 2 is answered by the first copy')
  t.equal(lower.frozenFor({ s: 5, p: 'f' }), undefined, 'one of a later session by the directory')
  t.ok(lower.isLive({ s: 5, p: 'f' }))
  t.notOk(lower.isLive({ s: 4, p: 'f' }))
  const frozen = lower.openContent({ s: 2, p: 'f' })
  t.ok('blocks' in frozen && frozen.blocks.get(0) === 7 && frozen.blocks.get(1) === 0 && frozen.blocks.get(2) === 9, 'frozen content is its blocks')
  const live = lower.openContent({ s: 5, p: 'f' })
  t.ok('fd' in live, 'live content is an fd on the file')
  if ('fd' in live) {
    t.equal(fs.readFileSync(live.fd, 'utf8'), 'live bytes')
    fs.closeSync(live.fd)
  }
  t.throws(() => lower.list({ s: 2, p: 'f' }), { errno: 5 } as any, 'a frozen file listed as a directory is EIO')
  lower.freeze('l', 2, { target: 'old-target' })
  t.equal(lower.readlink({ s: 2, p: 'l' }), 'old-target', 'a frozen symlink keeps its target')
  t.equal(lower.readlink({ s: 5, p: 'l' }), 'live-target', 'a live one reads the directory')
  t.throws(() => lower.openContent({ s: 2, p: 'l' }), { errno: 5 } as any, 'a frozen symlink opened as a file is EIO')
  const copy = lower.frozenCopy()
  lower.setFrozen('f', [])
  t.equal(lower.frozenFor({ s: 2, p: 'f' }), undefined, 'setFrozen([]) drops the path')
  t.equal(copy.get('f')?.length, 2, 'a copy taken before keeps what it had')
})

t.test('a name that is not UTF-8 round-trips through its frozen key', async t => {
  const name = decodeName(Buffer.from([0x61, 0xff, 0x62]))
  const key = frozenKey(`d/${name}`)
  t.ok(key.startsWith('\0'), 'it is stored as NUL and hex')
  t.equal(relOfFrozenKey(key), `d/${name}`, 'and read back as the same name')
  t.equal(frozenKey('d/plain'), 'd/plain', 'a UTF-8 path is its own key')
})
