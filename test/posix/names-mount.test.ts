/**
 * File names are bytes (issue 18), through a real mount on both FUSE layers
 * (the default libfuse 2.9 one and REWINDFS_FUSE=ll): the issue's
 * reproduction (`pair-\xfe.txt` and `pair-\xff.txt` in the directory before
 * the mount) keeps both files with their bytes through the mount, a
 * checkpoint and restore, an unmount and a resumed mount; names made
 * through the mount with every byte 0x01..0xff but "/" (alone, and in pairs
 * that differ only in an invalid byte), a rename, a hard link and a symlink
 * whose target has such bytes all reach the directory as those bytes.
 * Python in a child process does the file work (the test process never
 * touches a mount).
 */
import t from 'tap'
import fs from 'node:fs'
import { mountWorkspace } from '../helpers/mount.js'
import { py } from '../helpers/ll-mount.js'
import path from 'node:path'
import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import { RewindClient } from '../../client/client.js'
import { ROOT } from '../../scripts/generate.js'

const run = promisify(execFile)

const B = (s: string): Buffer => Buffer.from(s, 'latin1')
const hexNames = (dir: string): string[] => fs.readdirSync(dir, { encoding: 'buffer' }).map(b => b.toString('hex')).sort()
const inDir = (dir: string, bytes: Buffer): Buffer => Buffer.concat([Buffer.from(dir + '/'), bytes])
const hex = (s: string): string => B(s).toString('hex')
const PYTHON = fs.existsSync('/usr/bin/python3') ? '/usr/bin/python3' : 'python3'

/** Runs `code` with the Python package of client/python (Debian's websockets and msgpack) against the daemon of `store`; the JSON it prints. */
async function pyClient (store: string, code: string, cp: number): Promise<any> {
  const prog = `import json\nfrom rewindfs import Client\nSTORE = ${JSON.stringify(store)}\nCP = ${cp}\n${code}`
  const r = await run(PYTHON, ['-c', prog], { cwd: '/', env: { ...process.env, PYTHONPATH: path.join(ROOT, 'client/python') }, timeout: 120000 })
  return JSON.parse(r.stdout.trim().split('\n').pop()!)
}

/** Python: the names of '.' as sorted hex of their bytes, and each regular file's content by that hex. */
const LIST = `
def listing(d=b'.'):
    names = sorted(n.hex() for n in os.listdir(d))
    files = {}
    for n in os.listdir(d):
        p = os.path.join(d, n)
        if os.path.isfile(p) and not os.path.islink(p): files[n.hex()] = open(p, 'rb').read().decode('latin1')
    return {'names': names, 'files': files}
`

for (const layer of ['hl', 'll']) {
  t.test(`layer ${layer}: names that are not UTF-8 keep their bytes through the mount, restore, unmount and a resumed mount`, async t => {
    const m = await mountWorkspace(t, dir => {
      fs.writeFileSync(inDir(dir, B('pair-\xfe.txt')), 'first\n')
      fs.writeFileSync(inDir(dir, B('pair-\xff.txt')), 'second\n')
      fs.mkdirSync(inDir(dir, B('d\xe9')))
      fs.writeFileSync(inDir(dir, B('d\xe9/in\x80side')), 'nested\n')
    }, { env: { REWINDFS_FUSE: layer } })

    const seen = await py(m.dir, LIST + "out([listing(), listing(bytes.fromhex('64e9'))])")
    t.same(seen[0].names, [hex('d\xe9'), hex('pair-\xfe.txt'), hex('pair-\xff.txt')].sort(), 'the mount lists each name with its bytes')
    t.same([seen[0].files[hex('pair-\xfe.txt')], seen[0].files[hex('pair-\xff.txt')]], ['first\n', 'second\n'], 'each file of the pair has its own content')
    t.same(seen[1].files, { [hex('in\x80side')]: 'nested\n' }, 'a file inside a directory whose name is not UTF-8')

    // the failure: writing the second must not replace the first
    const made = await py(m.dir, LIST + `
open(b'pair-\\xff.txt', 'wb').write(b'second, edited\\n')
for x in range(1, 256):
    if x == 0x2f: continue
    open(b'n' + bytes([x]), 'wb').write(bytes([x]))
os.mkdir(b'nd\\xfe')
open(b'nd\\xfe/f\\xfe', 'wb').write(b'deep\\n')
os.symlink(b't\\xfe\\xfd', b'ls\\xfe')
os.rename(b'd\\xe9/in\\x80side', b'd\\xe9/moved\\x81')
os.link(b'pair-\\xfe.txt', b'hard\\xfe')
l = listing()
out({'l': l, 'target': os.readlink(b'ls\\xfe').hex(), 'lsize': os.lstat(b'ls\\xfe').st_size, 'hard': os.stat(b'hard\\xfe').st_ino == os.stat(b'pair-\\xfe.txt').st_ino, 'sub': listing(b'd\\xe9')['names']})
`)
    const nNames = Array.from({ length: 255 }, (_, i) => i + 1).filter(x => x !== 0x2f).map(x => Buffer.from([0x6e, x]).toString('hex'))
    t.same(made.l.names.filter((n: string) => n.startsWith('6e') && n.length === 4), nNames, 'a name with every byte 0x01..0xff but "/" exists as itself: 254 names')
    t.ok(nNames.every(n => made.l.files[n] === Buffer.from(n.slice(2), 'hex').toString('latin1')), 'each holds its own byte')
    t.equal(made.l.files[hex('pair-\xfe.txt')], 'first\n', 'the first of the pair is untouched by the write to the second')
    t.equal(made.l.files[hex('pair-\xff.txt')], 'second, edited\n')
    t.equal(made.target, hex('t\xfe\xfd'), 'a symlink target keeps its bytes')
    t.equal(made.lsize, 3, 'and its size counts bytes')
    t.ok(made.hard, 'a hard link to a name that is not UTF-8')
    t.same(made.sub, [hex('moved\x81')], 'a rename between such names')

    const cp = await m.client.mark({ label: 'all names' })
    await py(m.dir, "os.unlink(b'pair-\\xfe.txt'); os.unlink(b'n\\x80'); open(b'pair-\\xff.txt', 'wb').write(b'broken'); out(0)")
    // the CLI prints such paths escaped as ls -b does
    const diff = await m.cli(['diff', String(cp.id)])
    t.equal(diff.code, 0, `diff runs: ${diff.stderr}`)
    t.same(diff.stdout.split('\n').filter(l => l !== '' && !l.endsWith(' /')).sort(), ['D /n\\200', 'D /pair-\\376.txt', 'M /pair-\\377.txt'], 'diff names the paths, escaped')
    // the protocol: such paths go as bytes (msgpack bin, JSON base64 named in `bytes`); the TS client gives them back as its strings
    for (const encoding of ['json', 'msgpack'] as const) {
      const c = await RewindClient.connect({ storeDir: m.store, encoding })
      try {
        const d = await c.diff({ a: cp.id })
        t.ok(d.some(e => e.path === '/pair-\udcfe.txt' && e.change === 'deleted'), `${encoding}: diff carries the path that is not UTF-8`)
        const st = await c.stat({ id: cp.id, path: '/pair-\udcfe.txt' })
        t.equal(st?.size, 6, `${encoding}: stat at the checkpoint of a path sent as bytes`)
        const read = await c.read({ id: cp.id, path: 'd\udce9/moved\udc81' })
        t.equal(Buffer.from(read).toString(), 'nested\n', `${encoding}: read through a directory that is not UTF-8`)
      } finally { await c.close() }
    }
    const pyc = await pyClient(m.store, `
res = {}
for enc in ('json', 'msgpack'):
    c = Client.connect(store=STORE, encoding=enc)
    try:
        d = c.diff(CP)
        st = c.stat(b'pair-\\xfe.txt', checkpoint=CP)
        res[enc] = {'deleted': sorted(e['path'].hex() for e in d if e['change'] == 'deleted' and isinstance(e['path'], bytes)),
                    'size': st['size'], 'path': st['path'].hex() if isinstance(st['path'], bytes) else st['path']}
    finally:
        c.close()
print(json.dumps(res))
`, cp.id)
    for (const enc of ['json', 'msgpack']) {
      t.same(pyc[enc]?.deleted, [hex('/n\x80'), hex('/pair-\xfe.txt')].sort(), `python ${enc}: such paths arrive as bytes`)
      t.equal(pyc[enc]?.size, 6, `python ${enc}: a path sent as bytes`)
    }
    await m.client.restore({ id: cp.id })
    const back = await py(m.dir, LIST + 'out(listing())')
    t.same(back.names, made.l.names, 'restore brings back every name')
    t.same(back.files, made.l.files, 'with every content')

    await m.unmount()
    t.same(hexNames(m.dir), made.l.names, 'after the unmount the directory holds exactly those names, as bytes')
    t.equal(fs.readFileSync(inDir(m.dir, B('pair-\xfe.txt')), 'utf8'), 'first\n', 'both files of the pair')
    t.equal(fs.readFileSync(inDir(m.dir, B('pair-\xff.txt')), 'utf8'), 'second, edited\n')
    t.equal(fs.readFileSync(inDir(m.dir, B('nd\xfe/f\xfe')), 'utf8'), 'deep\n')
    t.same(fs.readlinkSync(inDir(m.dir, B('ls\xfe')), { encoding: 'buffer' }), B('t\xfe\xfd'))
    t.notOk(hexNames(m.dir).includes(hex('pair-\xef\xbf\xbd.txt')), 'no U+FFFD name appeared')

    await m.remount()
    const resumed = await py(m.dir, LIST + 'out(listing())')
    t.same(resumed.names, made.l.names, 'a resumed mount lists the same names')
    t.same(resumed.files, made.l.files, 'with the same contents')
    await m.client.restore({ id: cp.id })
    const again = await py(m.dir, LIST + 'out(listing())')
    t.same(again.files, made.l.files, 'a restore across the remount (frozen copies of such paths) keeps them')
    await m.unmount()
    t.same(hexNames(m.dir), made.l.names, 'and the second unmount too')
  })
}
