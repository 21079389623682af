/**
 * File names are bytes (issue 18), without FUSE: the name codec
 * (proto/names.ts, PEP 383 surrogateescape) is lossless and leaves UTF-8 as
 * it was; a directory holding names that are not UTF-8 is read by the lower
 * layer, kept through checkpoints, restore, a reopened store (records with
 * such names stored as bin), export, and written back with the same bytes;
 * the frozen copies of such paths keep them too.
 */
import t from 'tap'
import fs from 'node:fs'
import path from 'node:path'
import { tempRoot, open, write, read, me } from '../helpers/workspace.js'
import { writeBack } from '../../fs/writeback.js'
import { exportCheckpoint } from '../../fs/export.js'
import { decodeName, encodeName, isByteName, NameEncodingError } from '../../proto/names.js'
import { decodeFrozen, frozenKey, relOfFrozenKey } from '../../fs/lower.js'
import { encodeRecord, decodeRecord, type InodeRecord } from '../../fs/inode.js'
import { packr } from '../../store/db.js'

const noInvalidate = async (): Promise<void> => {}
const B = (s: string): Buffer => Buffer.from(s, 'latin1')
/** the names of a native directory as hex of their bytes, sorted */
const hexNames = (dir: string): string[] => fs.readdirSync(dir, { encoding: 'buffer' }).map(b => b.toString('hex')).sort()
const inDir = (dir: string, bytes: Buffer): Buffer => Buffer.concat([Buffer.from(dir + '/'), bytes])

t.test('the codec: every byte, alone and in pairs, round-trips; UTF-8 stays as it was', async t => {
  const seen = new Map<string, string>()
  let bad = 0
  for (let a = 1; a < 256; a++) {
    if (a === 0x2f) continue
    for (const bytes of [Buffer.from([a]), Buffer.from([0x70, a, 0x2e]), Buffer.from([a, 0xff]), Buffer.from([0xc3, a])]) {
      const s = decodeName(bytes)
      if (!Buffer.from(encodeName(s)).equals(bytes)) bad++
      const other = seen.get(s)
      if (other !== undefined && other !== bytes.toString('hex')) bad++
      seen.set(s, bytes.toString('hex'))
    }
  }
  t.equal(bad, 0, `${seen.size} byte strings: each decodes to its own string and encodes back to its bytes`)
  t.equal(decodeName(B('pair-\xfe.txt')), 'pair-\udcfe.txt', 'an invalid byte is a lone surrogate U+DC80 + (byte - 0x80)')
  t.not(decodeName(B('pair-\xfe.txt')), decodeName(B('pair-\xff.txt')), 'two names differing in an invalid byte stay two')
  for (const s of ['plain.txt', 'café', 'emoji-😀', '\ufeffbom', 'snowman ☃ \u{10ffff}', 'U+FFFD � itself']) {
    t.equal(decodeName(Buffer.from(s)), s, `valid UTF-8 decodes as before: ${JSON.stringify(s)}`)
    t.notOk(isByteName(s))
    t.same(Buffer.from(encodeName(s)), Buffer.from(s))
  }
  // encoded surrogates, overlong forms, code points above U+10FFFF: not UTF-8, so escaped byte by byte
  for (const hex of ['eda080', 'edbfbf', 'c0af', 'e08080', 'f4908080', 'f8', 'c3', 'e282']) {
    const b = Buffer.from(hex, 'hex')
    t.ok(isByteName(decodeName(b)), `${hex} is escaped`)
    t.same(Buffer.from(encodeName(decodeName(b))), b, `${hex} round-trips`)
  }
  const thrown = (s: string): unknown => { try { encodeName(s); return null } catch (e) { return e } }
  t.ok(thrown('x\ud800') instanceof NameEncodingError, 'a lone high surrogate is no name')
  t.ok(thrown('x\udc10') instanceof NameEncodingError, 'a lone low surrogate outside U+DC80..U+DCFF is no name')
})

t.test('store forms: records and frozen copies keep names that are not UTF-8 (bin), UTF-8 ones unchanged', async t => {
  const r: InodeRecord = {
    ino: 5, mode: 0o40755, uid: 0, gid: 0, rdev: 0, size: 0, atime: 1n, mtime: 2n, ctime: 3n,
    links: [[1, 'd\udce9']], entries: new Map([['pair-\udcfe.txt', 6], ['pair-\udcff.txt', 7], ['plain', 8]]),
    lower: { s: 1, p: 'd\udce9' }
  }
  const back = decodeRecord(packr.unpack(packr.pack(encodeRecord(r))))
  t.same([...back.entries!], [...r.entries!], 'entries')
  t.same(back.links, r.links, 'links')
  t.same(back.lower, r.lower, 'lower path')
  const sym: InodeRecord = { ino: 9, mode: 0o120777, uid: 0, gid: 0, rdev: 0, size: 3, atime: 1n, mtime: 2n, ctime: 3n, links: [[1, 'l']], target: 't\udcfe' }
  t.equal(decodeRecord(packr.unpack(packr.pack(encodeRecord(sym)))).target, 't\udcfe', 'symlink target')
  const plain = { ...r, links: [[1, 'd']], entries: new Map([['a', 2]]), lower: { s: 1, p: 'd' } } as InodeRecord
  t.same(packr.pack(encodeRecord(plain)), packr.pack({ ...plain, entries: [['a', 2]] }), 'a record with UTF-8 names is written as it always was')
  t.equal(frozenKey('src/a.txt'), 'src/a.txt', 'a UTF-8 path is its own key')
  t.equal(frozenKey('d\udce9/x'), '\u000064e92f78', 'any other path: NUL and the hex of its bytes')
  t.equal(relOfFrozenKey(frozenKey('d\udce9/x')), 'd\udce9/x')
})

t.test('a directory with names that are not UTF-8: kept through the workspace, the store, restore, export and write-back', async t => {
  const { root, lowerDir } = tempRoot(t, 'rewindfs-names-')
  // the reproduction, and a directory, a symlink target and a nested file with such bytes
  fs.writeFileSync(inDir(lowerDir, B('pair-\xfe.txt')), 'first\n')
  fs.writeFileSync(inDir(lowerDir, B('pair-\xff.txt')), 'second\n')
  fs.mkdirSync(inDir(lowerDir, B('d\xe9')))
  fs.writeFileSync(inDir(lowerDir, B('d\xe9/in\x80side')), 'nested\n')
  fs.symlinkSync(B('pair-\xfe.txt'), inDir(lowerDir, B('ln\xfe')))
  const before = hexNames(lowerDir)

  let s = await open(root, lowerDir)
  const names = s.ws.readdir('/').names.filter(n => n !== '.' && n !== '..').sort()
  t.same(names, ['d\udce9', 'ln\udcfe', 'pair-\udcfe.txt', 'pair-\udcff.txt'], 'the lower layer lists each name as its own string')
  t.equal(read(s.ws, '/pair-\udcfe.txt'), 'first\n')
  t.equal(read(s.ws, '/pair-\udcff.txt'), 'second\n', 'both files keep their content')
  t.equal(read(s.ws, '/d\udce9/in\udc80side'), 'nested\n', 'a file inside a directory whose name is not UTF-8')
  t.equal(s.ws.readlink('/ln\udcfe'), 'pair-\udcfe.txt', 'a symlink target with such a byte')
  const c1 = await s.gens.mark(s.ws, { label: 'as found' })

  // changes through the workspace: new names with such bytes, an edit of one of the pair
  write(s.ws, '/pair-\udcff.txt', 'second, edited\n')
  write(s.ws, '/new-\udc80\udcc0.txt', 'created\n')
  s.ws.mkdir('/nd\udcfe', 0o755, me)
  write(s.ws, '/nd\udcfe/f\udcfe', 'deep\n')
  s.ws.symlink('t\udcfe\udcfd', '/ls\udcfe', me)
  s.ws.rename('/d\udce9/in\udc80side', '/d\udce9/moved\udc81')
  s.ws.link('/pair-\udcfe.txt', '/hard\udcfe')
  s.ws.mknod('/fifo\udcfe', 0o10644, 0, me)
  const c2 = await s.gens.mark(s.ws, { label: 'changed' })
  const d = (await s.gens.diff(s.ws, c1.id, c2.id)).map(e => `${e.change} ${e.path}`).sort()
  t.ok(d.includes('added /new-\udc80\udcc0.txt') && d.includes('modified /pair-\udcff.txt') && d.includes('deleted /d\udce9/in\udc80side') && !d.some(l => l.includes('pair-\udcfe')), `diff names the paths with their bytes: ${JSON.stringify(d)}`)

  // the store: reopen and read everything back from records (names stored as bin)
  await s.close()
  s = await open(root, lowerDir)
  t.equal(read(s.ws, '/pair-\udcff.txt'), 'second, edited\n', 'the resumed workspace reads the edited file')
  t.equal(read(s.ws, '/pair-\udcfe.txt'), 'first\n', 'and its pair')
  t.equal(read(s.ws, '/nd\udcfe/f\udcfe'), 'deep\n')
  t.equal(s.ws.readlink('/ls\udcfe'), 't\udcfe\udcfd')
  t.equal(read(s.ws, '/d\udce9/moved\udc81'), 'nested\n')

  // restore to the first checkpoint and back
  await s.gens.restore(s.ws, c1.id, noInvalidate)
  t.equal(read(s.ws, '/pair-\udcff.txt'), 'second\n', 'restore brings the first content back')
  t.equal((() => { try { s.ws.getattr('/new-\udc80\udcc0.txt'); return 0 } catch (e: any) { return e.errno } })(), 2, 'and removes the new name (ENOENT)')
  await s.gens.restore(s.ws, c2.id, noInvalidate)

  // export
  const out = path.join(root, 'export')
  await exportCheckpoint({ gens: s.gens, ws: s.ws, id: c2.id, dir: out, workspaceDir: lowerDir })
  t.equal(fs.readFileSync(inDir(out, B('pair-\xfe.txt')), 'utf8'), 'first\n', 'export writes the names with their bytes')
  t.equal(fs.readFileSync(inDir(out, B('pair-\xff.txt')), 'utf8'), 'second, edited\n')
  t.same(fs.readlinkSync(inDir(out, B('ls\xfe')), { encoding: 'buffer' }), B('t\xfe\xfd'), 'a symlink target\'s bytes')
  t.ok(fs.lstatSync(inDir(out, B('fifo\xfe'))).isFIFO(), 'a fifo whose name is not UTF-8')
  t.equal(fs.statSync(inDir(out, B('hard\xfe'))).ino, fs.statSync(inDir(out, B('pair-\xfe.txt'))).ino, 'a hard link stays one inode')

  // write-back at unmount
  await s.gens.mark(s.ws, { label: 'final' })
  const dirFd = fs.openSync(lowerDir, fs.constants.O_RDONLY | fs.constants.O_DIRECTORY)
  let r
  try { r = await writeBack({ ws: s.ws, gens: s.gens, db: s.db, blocks: s.blocks, dir: lowerDir, dirFd, log: () => {} }) } finally { fs.closeSync(dirFd) }
  t.same(r.errors, [], 'write-back reports no error')
  t.same(hexNames(lowerDir), [...before, ...['new-\x80\xc0.txt', 'nd\xfe', 'ls\xfe', 'hard\xfe', 'fifo\xfe'].map(n => B(n).toString('hex'))].sort(), 'the directory holds exactly the names, as bytes')
  t.equal(fs.readFileSync(inDir(lowerDir, B('pair-\xfe.txt')), 'utf8'), 'first\n', 'both files of the pair are there')
  t.equal(fs.readFileSync(inDir(lowerDir, B('pair-\xff.txt')), 'utf8'), 'second, edited\n')
  t.equal(fs.readFileSync(inDir(lowerDir, B('nd\xfe/f\xfe')), 'utf8'), 'deep\n')
  t.equal(fs.readFileSync(inDir(lowerDir, B('d\xe9/moved\x81')), 'utf8'), 'nested\n')
  t.same(fs.readlinkSync(inDir(lowerDir, B('ls\xfe')), { encoding: 'buffer' }), B('t\xfe\xfd'))
  t.ok(fs.lstatSync(inDir(lowerDir, B('fifo\xfe'))).isFIFO())

  // the frozen copies: what the directory held for this session, under the byte names
  const frozen = new Map<string, unknown>()
  for await (const e of s.db.iterate<unknown[]>('lower')) frozen.set(relOfFrozenKey(e.key), decodeFrozen(e.value))
  const rootCopy = (frozen.get('') as Array<{ listing?: Array<{ name: string }> }> | undefined)?.[0]
  t.same(rootCopy?.listing?.map(e => e.name).sort(), ['d\udce9', 'ln\udcfe', 'pair-\udcfe.txt', 'pair-\udcff.txt'], 'the frozen listing of the root names both files')
  t.ok(frozen.has('d\udce9'), 'a frozen directory whose name is not UTF-8 has its own key')
  await s.close()
})
