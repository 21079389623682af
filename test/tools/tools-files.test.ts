/**
 * Real tools at scale through the mount: make -j2, tar, rsync and an
 * editor-style atomic save (issue 4, item 3), each in a workspace of its own
 * and each ending with the rewind cycle (checkpoint + manifest, damage,
 * restore, identical manifest, the tool's own check again) and an unmount
 * (write-back) after which the directory on disk must equal the last
 * manifest.
 *
 * make: a C project generated here (N source files `f_k.c`, a header, a
 *   Makefile with -MMD dependencies), built with `make -j2`; the binary's
 *   output must be the values computed here; `make -q` must say up to date;
 *   touching one source rebuilds exactly that object and the link; editing
 *   one changes exactly its line of output; touching the header rebuilds
 *   everything. Damage: obj/ and bin/ removed, a source overwritten with a
 *   syntax error. After restore `make -q` is up to date again (every mtime
 *   came back) and the binary prints the right values.
 * tar: two real tarballs made outside the mount — the typescript tarball
 *   from the npm registry (`npm pack`, from the npm cache when it is there)
 *   and a GNU tar of package trees from the project's node_modules (with
 *   .bin symlinks) — extracted into the mount and into a native directory:
 *   the manifests must be equal (modes, owners, mtimes, hashes, link
 *   targets; the npm tarball has no directory entries, so tar x leaves its
 *   directories at extraction time: they are set to one time on both
 *   sides); `tar c` of both (sorted, POSIX format with nanosecond mtimes)
 *   must be byte-identical, and every member of the re-created archive must
 *   match the original tarball's (type, mode, size, mtime, sha256, link).
 * rsync: a native tree of real package files plus fixtures with hard links
 *   (within and across directories), symlinks (relative, absolute,
 *   dangling, to a directory), modes (setuid, setgid, sticky, 0444, 0600),
 *   owners, nanosecond times on files, directories and symlinks, user.* and
 *   trusted.* xattrs, a fifo, an empty directory, a 4 MiB file with holes;
 *   `rsync -aHAX` into the mount; then `rsync -aHAXn --itemize-changes`
 *   (and with -c) must list nothing (all with --modify-window=-1: rsync
 *   compares whole seconds by default and then leaves a directory's time
 *   a fraction of a second off, natively too), the manifests must be equal and every
 *   xattr equal; a second round changes the source (append, truncate,
 *   chmod, a new hard link, delete, rename, xattr, times) and syncs it with
 *   `--delete --inplace --no-whole-file` (delta writes into existing files),
 *   checked the same way.
 * atomic save: W writer processes save the same file editor-style (write a
 *   temporary file, fsync, rename over the target, fsync the directory every
 *   10 saves), each version self-describing (writer, version, length,
 *   sha256 of the body; 1 KiB to 257 KiB, so up to 5 blocks); R reader
 *   processes read the file in a loop and must never see a partial or mixed
 *   version, nor a writer's version go backwards, nor ENOENT; an open that
 *   fails with ESTALE (a second save inside the kernel's retry, see
 *   test/posix/rename-race.test.ts and DECISIONS.md) is counted, reported and
 *   retried; meanwhile rewindfs
 *   checkpoints are marked every 50 ms and the file at each of them must be
 *   a complete version too. The final file must be version N of a writer and
 *   no temporary file may be left.
 *
 * Sizes: CI form 12 C files; 30 package trees in the tar and 25 in the rsync
 * source; 2 writers × 150 saves, 1 reader. REWINDFS_TOOLS_SCALE=large: 300 C
 * files; the whole node_modules in the tar and the rsync source; 3 writers ×
 * 2000 saves, 2 readers.
 */
import t, { type Test } from 'tap'
import fs from 'node:fs'
import path from 'node:path'
import { createHash } from 'node:crypto'
import { mountWorkspace, type Mounted } from '../helpers/mount.js'
import { PROJECT, PYTHON, scale, run, ok, background, Timings, manifest, sameManifest, rewindCycle, unmountAndCompare, type Marked } from '../helpers/tools.js'

const C_FILES = scale(12, 300)
const TAR_PACKAGES = scale(30, Infinity)
const RSYNC_PACKAGES = scale(25, Infinity)
const SAVE_WRITERS = scale(2, 3)
const SAVE_READERS = scale(1, 2)
const SAVES = scale(150, 2000)

/** top-level entries of the project's node_modules (not .bin), in name order */
function packageNames (): string[] {
  return fs.readdirSync(path.join(PROJECT, 'node_modules')).filter(n => !n.startsWith('.')).sort()
}

// ------------------------------------------------------------------ make

/** multiplier of f_k (the edit step changes one) */
const mult = (k: number): number => k + 3

function cSource (k: number, mu: number): string {
  return `#include "calc.h"\n\nlong f_${k} (long x)\n{\n  long s = 0;\n  for (long i = 0; i < x + ${k}; i++) s += (i * ${mu}) % 1009;\n  return s;\n}\n`
}

/** what bin/app prints with multipliers mu(k) */
function expectedOutput (n: number, mu: (k: number) => number): string {
  let total = 0
  let out = ''
  for (let k = 0; k < n; k++) {
    let s = 0
    for (let i = 0; i < 100 + k; i++) s += (i * mu(k)) % 1009
    total += s
    out += `f_${k}(100) = ${s}\n`
  }
  return out + `total = ${total}\n`
}

function writeCProject (dir: string, n: number): void {
  fs.mkdirSync(path.join(dir, 'src'), { recursive: true })
  fs.mkdirSync(path.join(dir, 'include'))
  fs.writeFileSync(path.join(dir, 'include/calc.h'), `#ifndef CALC_H\n#define CALC_H\n${Array.from({ length: n }, (_, k) => `long f_${k} (long x);\n`).join('')}#endif\n`)
  for (let k = 0; k < n; k++) fs.writeFileSync(path.join(dir, `src/f_${k}.c`), cSource(k, mult(k)))
  fs.writeFileSync(path.join(dir, 'src/main.c'), `#include <stdio.h>\n#include "calc.h"\n\nint main (void)\n{\n  long total = 0, v;\n${Array.from({ length: n }, (_, k) => `  v = f_${k}(100); total += v; printf("f_${k}(100) = %ld\\n", v);\n`).join('')}  printf("total = %ld\\n", total);\n  return 0;\n}\n`)
  fs.writeFileSync(path.join(dir, 'Makefile'), [
    'CC ?= cc',
    'CFLAGS ?= -O1 -Wall -Werror',
    'SRCS := $(sort $(wildcard src/*.c))',
    'OBJS := $(patsubst src/%.c,obj/%.o,$(SRCS))',
    '',
    'bin/app: $(OBJS) | bin',
    '\t@echo "LD $@"',
    '\t@$(CC) -o $@ $(OBJS)',
    '',
    'obj/%.o: src/%.c | obj',
    '\t@echo "CC $<"',
    '\t@$(CC) $(CFLAGS) -Iinclude -MMD -MP -c -o $@ $<',
    '',
    'obj bin:',
    '\t@mkdir -p $@',
    '',
    '-include $(OBJS:.o=.d)',
    ''
  ].join('\n'))
}

/** the CC/LD lines make printed, sorted */
const actions = (out: string): string[] => out.split('\n').filter(l => /^(CC|LD) /.test(l)).sort()

async function makeTool (t: Test, m: Mounted, times: Timings): Promise<Marked> {
  const dir = path.join(m.dir, 'make')
  writeCProject(dir, C_FILES)
  let mu = mult
  const app = async (when: string): Promise<void> => {
    const r = await run('./bin/app', { cwd: dir })
    t.equal(r.stdout, expectedOutput(C_FILES, mu), `bin/app prints the expected ${C_FILES} values and their total ${when}`)
  }
  const upToDate = async (when: string): Promise<void> => {
    const q = await run('make -q', { cwd: dir })
    t.equal(q.code, 0, `make -q: up to date ${when}`)
    const r = await run('make -j2', { cwd: dir })
    t.same(actions(r.stdout), [], `make -j2 has nothing to do ${when}`)
  }

  const b = await times.time(`make -j2 (${C_FILES + 1} files)`, async () => await ok(t, 'make -j2', { cwd: dir }))
  t.same(actions(b.stdout), [...Array.from({ length: C_FILES }, (_, k) => `CC src/f_${k}.c`), 'CC src/main.c', 'LD bin/app'].sort(), 'make compiled every source and linked')
  await app('after the build')
  await upToDate('after the build')

  // touch one source: exactly its object and the link
  await ok(t, 'touch src/f_3.c', { cwd: dir })
  t.not((await run('make -q', { cwd: dir })).code, 0, 'make -q: not up to date after touching a source')
  t.same(actions((await ok(t, 'make -j2', { cwd: dir })).stdout), ['CC src/f_3.c', 'LD bin/app'], 'touching src/f_3.c rebuilds exactly f_3.o and the link')
  // edit one source: exactly its output line changes
  await ok(t, `sed -i 's/(i \\* ${mult(1)})/(i * 40)/' src/f_1.c`, { cwd: dir })
  mu = (k: number): number => k === 1 ? 40 : mult(k)
  t.same(actions((await ok(t, 'make -j2', { cwd: dir })).stdout), ['CC src/f_1.c', 'LD bin/app'], 'editing src/f_1.c rebuilds exactly f_1.o and the link')
  await app('after editing f_1.c')
  // the header: every object (through the -MMD dependency files)
  await ok(t, 'touch include/calc.h', { cwd: dir })
  t.equal(actions((await ok(t, 'make -j2', { cwd: dir })).stdout).length, C_FILES + 2, 'touching the header rebuilds every object and the link')
  await upToDate('after the rebuilds')

  return await rewindCycle(t, m, times, {
    tool: 'make',
    damage: async () => { await ok(t, 'rm -rf make/obj make/bin && echo "this is not C" > make/src/f_2.c', { cwd: m.dir, msg: 'damage' }) },
    damagedCheck: async () => { t.not((await run('make -q', { cwd: dir })).code, 0, 'make -q: not up to date on the damaged tree') },
    check: async () => { await upToDate('after restore'); await app('after restore') }
  })
}

// ------------------------------------------------------------------ tar

/** tarcmp.py ORIG NEW — compares non-directory members (names without ./ and package/ kept): prints {"members": n, "mismatches": [...]} */
const TARCMP_PY = `
import tarfile, sys, hashlib, json
def members(p):
    out = {}
    with tarfile.open(p) as tf:
        for m in tf:
            if m.isdir(): continue
            name = m.name[2:] if m.name.startswith('./') else m.name
            h = hashlib.sha256(tf.extractfile(m).read()).hexdigest() if m.isfile() else None
            out[name] = [m.type.decode('latin1'), oct(m.mode), m.size if m.isfile() else 0, int(m.mtime), h, m.linkname]
    return out
a, b = members(sys.argv[1]), members(sys.argv[2])
mis = [n for n in sorted(set(a) | set(b)) if a.get(n) != b.get(n)]
print(json.dumps({'members': len(a), 'mismatches': [[n, a.get(n), b.get(n)] for n in mis[:10]], 'count': len(mis)}))
`

const TAR_CREATE = 'tar --sort=name --format=posix --pax-option=delete=atime,delete=ctime,exthdr.name=%d/PaxHeaders/%f --numeric-owner -cf'

async function tarTool (t: Test, m: Mounted, times: Timings): Promise<Marked> {
  const work = path.join(m.root, 'tar-work')
  const native = path.join(m.root, 'tar-native')
  fs.mkdirSync(work); fs.mkdirSync(native)
  fs.writeFileSync(path.join(work, 'tarcmp.py'), TARCMP_PY)
  const lock = JSON.parse(fs.readFileSync(path.join(PROJECT, 'package-lock.json'), 'utf8')) as { packages: Record<string, { version: string }> }
  const tsVersion = lock.packages['node_modules/typescript'].version
  const env = { ...process.env, npm_config_update_notifier: 'false' }
  await times.time('npm pack typescript (tarball)', async () => await ok(t, `npm pack typescript@${tsVersion} --prefer-offline --pack-destination . --loglevel=error`, { cwd: work, env, timeoutMs: 120000 }))
  const pkgs = packageNames().slice(0, TAR_PACKAGES)
  await times.time(`tar c of ${pkgs.length} package trees (tarball)`, async () => await ok(t, `tar --sort=name -cf ${JSON.stringify(path.join(work, 'modules.tar'))} .bin ${pkgs.map(p => JSON.stringify(p)).join(' ')}`, { cwd: path.join(PROJECT, 'node_modules'), timeoutMs: 300000 }))
  // [name, tarball, has no directory entries]
  const tarballs: Array<[string, string, boolean]> = [['typescript', path.join(work, `typescript-${tsVersion}.tgz`), true], ['modules', path.join(work, 'modules.tar'), false]]

  const tarDir = path.join(m.dir, 'tar')
  fs.mkdirSync(tarDir)
  const cmp = async (orig: string, made: string): Promise<{ members: number, count: number, mismatches: unknown[] }> => {
    const r = await run(`${PYTHON} tarcmp.py ${JSON.stringify(orig)} ${JSON.stringify(made)}`, { cwd: work, timeoutMs: 300000 })
    try { return JSON.parse(r.stdout) } catch { return { members: 0, count: -1, mismatches: [r.stderr.slice(-2000)] } }
  }
  // the check: tar c from the mount is byte-identical to tar c of the native extraction
  const recreate = async (name: string, into: string): Promise<string> => {
    await ok(t, `${TAR_CREATE} ${JSON.stringify(into)} -C ${name} .`, { cwd: tarDir, timeoutMs: 300000 })
    return createHash('sha256').update(fs.readFileSync(into)).digest('hex')
  }
  const nativeSums: Record<string, string> = {}
  for (const [name, ball, implicitDirs] of tarballs) {
    for (const root of [tarDir, native]) {
      fs.mkdirSync(path.join(root, name))
      await times.time(`tar x ${name} (${root === tarDir ? 'mount' : 'native'})`, async () => await ok(t, `tar -xpf ${JSON.stringify(ball)} -C ${name}`, { cwd: root, timeoutMs: 300000 }))
      await ok(t, implicitDirs ? `find ${name} -type d -exec touch -d @1700000000 {} +` : `touch -d @1700000000 ${name}`, { cwd: root })
    }
    const [a, b] = await Promise.all([manifest(path.join(native, name)), manifest(path.join(tarDir, name))])
    sameManifest(t, b, a, `tar x of ${name} through the mount gives the same tree as natively`)
    t.ok(a.files > 100, `${name}: ${a.files} files`)
    nativeSums[name] = await (async () => { await ok(t, `${TAR_CREATE} ${JSON.stringify(path.join(work, name + '-native.tar'))} -C ${name} .`, { cwd: native, timeoutMs: 300000 }); return createHash('sha256').update(fs.readFileSync(path.join(work, name + '-native.tar'))).digest('hex') })()
    const made = await times.time(`tar c ${name} (from the mount, into the mount)`, async () => await recreate(name, path.join(tarDir, `${name}.tar`)))
    t.equal(made, nativeSums[name], `tar c of ${name} from the mount is byte-identical to tar c of the native extraction`)
    const c = await cmp(ball, path.join(tarDir, `${name}.tar`))
    t.equal(c.count, 0, `every member of the re-created ${name} archive matches the original tarball (${c.members} members: type, mode, size, mtime, sha256, link)`, c.count === 0 ? {} : { mismatches: c.mismatches })
  }

  const check = async (when: string): Promise<void> => {
    for (const [name] of tarballs) t.equal(await recreate(name, path.join(work, `${name}-check.tar`)), nativeSums[name], `tar c of ${name} from the mount is byte-identical to the native one ${when}`)
  }
  return await rewindCycle(t, m, times, {
    tool: 'tar',
    damage: async () => { await ok(t, 'rm -rf tar/typescript/package/lib tar/modules.tar && f=$(find tar/modules -name package.json | sort | head -n 1) && echo overwritten > "$f" && chmod 600 "$f"', { cwd: m.dir, msg: 'damage' }) },
    damagedCheck: async () => {
      t.not(await recreate('typescript', path.join(work, 'typescript-check.tar')), nativeSums.typescript, 'tar c of the damaged typescript tree differs')
      t.not(await recreate('modules', path.join(work, 'modules-check.tar')), nativeSums.modules, 'tar c of the damaged modules tree differs')
    },
    check: async () => await check('after restore')
  })
}

// ------------------------------------------------------------------ rsync

/** builds the fixtures of the rsync source (argument: its directory) */
const RSYNC_FIXTURES_PY = `
import os, sys
root = os.path.join(sys.argv[1], 'special')
def p(*a): return os.path.join(root, *a)
os.makedirs(p('sub', 'deep'))
os.makedirs(p('empty'))
os.makedirs(p('setgid')); os.chmod(p('setgid'), 0o2775)
os.makedirs(p('sticky')); os.chmod(p('sticky'), 0o1777)
os.makedirs(p('private')); os.chmod(p('private'), 0o700)
with open(p('h1'), 'wb') as f: f.write(os.urandom(70000))
os.link(p('h1'), p('h2')); os.link(p('h1'), p('sub', 'h3'))
with open(p('sub', 'deep', 'pair-a'), 'wb') as f: f.write(b'pair\\n' * 1000)
os.link(p('sub', 'deep', 'pair-a'), p('private', 'pair-b'))
with open(p('exec.sh'), 'w') as f: f.write('#!/bin/sh\\necho hi\\n')
os.chmod(p('exec.sh'), 0o755)
with open(p('secret'), 'w') as f: f.write('secret\\n')
os.chmod(p('secret'), 0o600)
with open(p('readonly'), 'w') as f: f.write('ro\\n')
os.chmod(p('readonly'), 0o444)
with open(p('suid'), 'w') as f: f.write('suid\\n')
os.chmod(p('suid'), 0o4755)
open(p('empty-file'), 'w').close()
with open(p('holes'), 'wb') as f: f.write(b'start'); f.seek(4 * 1024 * 1024 - 3); f.write(b'end')
os.mkfifo(p('fifo'), 0o640)
os.symlink('h1', p('rel'))
os.symlink('/etc/hostname', p('abs'))
os.symlink('nowhere/at/all', p('dangling'))
os.symlink('sub', p('dirlink'))
os.chown(p('secret'), 1234, 5678)
os.chown(p('sub'), 0, 100)
os.lchown(p('rel'), 4321, 4321)
os.setxattr(p('h1'), 'user.note', b'hard linked')
os.setxattr(p('exec.sh'), 'user.bin', bytes(range(256)) + b'x' * 44)
os.setxattr(p('sub'), 'user.dir', b'a directory')
os.setxattr(p('secret'), 'trusted.rewind', b'trusted value')
os.setxattr(p('readonly'), 'user.empty', b'')
# nanosecond times on everything below special/, deepest first so directories keep theirs
t = 1500000000_123456789
for d, dirs, files in sorted(os.walk(root), key=lambda e: -e[0].count('/')):
    for n in files + dirs:
        t += 1_000_017_003
        os.utime(os.path.join(d, n), ns=(t, t), follow_symlinks=False)
    os.utime(d, ns=(t + 5, t + 7))
`

/** xattrs of every path below DIR (not following symlinks), as sorted "path name hexvalue" lines */
const XATTRS_PY = `
import os, sys
root = sys.argv[1]
out = []
for d, dirs, files in os.walk(root):
    for n in [''] + dirs + files:
        q = os.path.join(d, n) if n else d
        for a in sorted(os.listxattr(q, follow_symlinks=False)):
            out.append('%s %s %s' % (os.path.relpath(q, root), a, os.getxattr(q, a, follow_symlinks=False).hex()))
print('\\n'.join(sorted(out)))
`

/** the second round's changes to the source */
const RSYNC_CHANGE_SH = `
set -e
cd "$1/special"
printf 'appended\\n' >> sub/deep/pair-a
truncate -s 100 h1
chmod 640 exec.sh
ln readonly sub/readonly-link
rm secret
mv private private-renamed
python3 -c 'import os; os.setxattr("sub", "user.dir", b"changed"); os.removexattr("readonly", "user.empty")'
touch -h -d '2001-02-03 04:05:06.789' rel sub empty
`

async function rsyncTool (t: Test, m: Mounted, times: Timings): Promise<Marked> {
  const src = path.join(m.root, 'rsync-src')
  const dst = path.join(m.dir, 'rsync')
  fs.mkdirSync(src)
  fs.writeFileSync(path.join(m.root, 'fixtures.py'), RSYNC_FIXTURES_PY)
  fs.writeFileSync(path.join(m.root, 'xattrs.py'), XATTRS_PY)
  fs.writeFileSync(path.join(m.root, 'change.sh'), RSYNC_CHANGE_SH.replace('python3', PYTHON))
  const pkgs = packageNames().slice(0, RSYNC_PACKAGES)
  const plain = pkgs.filter(p => !p.startsWith('@'))
  await ok(t, `mkdir -p ${JSON.stringify(src + '/modules')} && cp -a ${pkgs.map(p => JSON.stringify(p)).join(' ')} ${JSON.stringify(src + '/modules/')}`, { cwd: path.join(PROJECT, 'node_modules'), timeoutMs: 300000, msg: `copy ${pkgs.length} package trees into the rsync source` })
  await ok(t, `${PYTHON} ${JSON.stringify(path.join(m.root, 'fixtures.py'))} ${JSON.stringify(src)}`, { cwd: m.root, msg: 'rsync fixtures (hard links, symlinks, modes, owners, times, xattrs, fifo, holes)' })
  // hard links across package directories
  await ok(t, `ln modules/${plain[0]}/package.json modules/${plain[1]}/linked-package.json && touch -d @1600000000 modules/${plain[1]} modules`, { cwd: src })

  const itemize = async (extra: string): Promise<string> => (await ok(t, `rsync -aHAXn --modify-window=-1 ${extra} --itemize-changes ${JSON.stringify(src + '/')} ${JSON.stringify(dst + '/')}`, { cwd: m.root, timeoutMs: 300000 })).stdout
  const xattrs = async (dir: string): Promise<string> => (await ok(t, `${PYTHON} ${JSON.stringify(path.join(m.root, 'xattrs.py'))} ${JSON.stringify(dir)}`, { cwd: m.root })).stdout
  const check = async (when: string, full = true): Promise<void> => {
    const it = await itemize('')
    t.equal(it, '', `rsync -aHAXn --itemize-changes lists nothing to do ${when}`)
    if (full) t.equal(await itemize('-c'), '', `rsync -aHAXnc (checksums) lists nothing to do ${when}`)
    const [a, b] = await Promise.all([manifest(src), manifest(dst)])
    sameManifest(t, b, a, `the mount's copy has the same manifest as the source ${when}`)
    const [xa, xb] = await Promise.all([xattrs(src), xattrs(dst)])
    t.equal(xb, xa, `every xattr is the same ${when} (${xa.split('\n').filter(Boolean).length} of them)`)
  }

  await times.time(`rsync -aHAX (${pkgs.length} package trees + fixtures)`, async () => await ok(t, `rsync -aHAX --modify-window=-1 ${JSON.stringify(src + '/')} ${JSON.stringify(dst + '/')}`, { cwd: m.root, timeoutMs: 300000 }))
  t.equal(fs.statSync(path.join(dst, 'special/h2')).nlink, 3, 'the hard link group arrived with 3 names')
  await times.time('rsync checks (round 1)', async () => await check('after the first rsync'))

  await ok(t, `bash ${JSON.stringify(path.join(m.root, 'change.sh'))} ${JSON.stringify(src)}`, { cwd: m.root, msg: 'change the source' })
  const pending = await itemize('--delete')
  t.ok(pending.split('\n').filter(Boolean).length >= 8, `rsync -n sees the changes (${pending.split('\n').filter(Boolean).length} lines)`)
  await times.time('rsync --delete --inplace --no-whole-file (round 2)', async () => await ok(t, `rsync -aHAX --modify-window=-1 --delete --inplace --no-whole-file ${JSON.stringify(src + '/')} ${JSON.stringify(dst + '/')}`, { cwd: m.root, timeoutMs: 300000 }))
  await times.time('rsync checks (round 2)', async () => await check('after the second rsync'))

  return await rewindCycle(t, m, times, {
    tool: 'rsync',
    damage: async () => {
      await ok(t, `rm -rf rsync/special/sub rsync/modules/${pkgs[2]} && chmod 000 rsync/special/exec.sh && echo x >> rsync/special/h2 && ${PYTHON} -c 'import os; os.setxattr("rsync/special/h1", "user.note", b"damaged")'`, { cwd: m.dir, msg: 'damage' })
    },
    damagedCheck: async () => { t.ok((await itemize('')).split('\n').filter(Boolean).length >= 4, 'rsync -n sees the damage') },
    check: async () => await check('after restore', false)
  })
}

// ------------------------------------------------------------------ atomic save

/** save-writer.cjs TARGET W N GOFILE — N editor-style saves of TARGET */
const SAVE_WRITER_JS = `
const fs = require('fs'), path = require('path'), crypto = require('crypto')
const [target, w, n, go] = [process.argv[2], Number(process.argv[3]), Number(process.argv[4]), process.argv[5]]
const dir = path.dirname(target), tmp = path.join(dir, '.' + path.basename(target) + '.' + w + '.swp')
const sleep = (ms) => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms)
while (!fs.existsSync(go)) sleep(5)
for (let v = 1; v <= n; v++) {
  const len = 1024 + ((v * 7919 + w * 104729) % (256 * 1024))
  const body = Buffer.alloc(len, w + ':' + v + ':')
  const head = Buffer.from('rewindfs-save w=' + w + ' v=' + v + ' len=' + len + ' sha256=' + crypto.createHash('sha256').update(body).digest('hex') + '\\n')
  const fd = fs.openSync(tmp, 'wx', 0o644)
  fs.writeSync(fd, head); fs.writeSync(fd, body)
  fs.fsyncSync(fd); fs.closeSync(fd)
  fs.renameSync(tmp, target)
  if (v % 10 === 0) { const d = fs.openSync(dir, 'r'); fs.fsyncSync(d); fs.closeSync(d); console.log(v) }
}
`

/** save-reader.cjs TARGET STOPFILE — reads until STOPFILE exists; or save-reader.cjs --check FILE... — validates each file. Prints JSON. */
const SAVE_READER_JS = `
const fs = require('fs'), crypto = require('crypto')
function validate (buf) {
  const nl = buf.indexOf(10)
  if (nl < 0) return { error: 'no header line (' + buf.length + ' bytes)' }
  const m = /^rewindfs-save w=(\\d+) v=(\\d+) len=(\\d+) sha256=([0-9a-f]{64})$/.exec(buf.subarray(0, nl).toString())
  if (!m) return { error: 'bad header: ' + JSON.stringify(buf.subarray(0, Math.min(nl, 100)).toString()) }
  const body = buf.subarray(nl + 1)
  if (body.length !== Number(m[3])) return { error: 'w=' + m[1] + ' v=' + m[2] + ': ' + body.length + ' body bytes, header says ' + m[3] }
  if (crypto.createHash('sha256').update(body).digest('hex') !== m[4]) return { error: 'w=' + m[1] + ' v=' + m[2] + ': body does not match its sha256' }
  return { w: Number(m[1]), v: Number(m[2]) }
}
if (process.argv[2] === '--check') { console.log(JSON.stringify(process.argv.slice(3).map(f => validate(fs.readFileSync(f))))); process.exit(0) }
const [target, stop] = [process.argv[2], process.argv[3]]
let reads = 0, errors = [], last = {}, versions = new Set(), stale = 0
for (;;) {
  const done = fs.existsSync(stop)
  let buf
  try { buf = fs.readFileSync(target) } catch (e) {
    // ESTALE (116): a second save landed inside the kernel's retry; counted, retried
    if (e.errno === -116) { stale++; continue }
    errors.push(e.code + ' ' + e.message); if (errors.length > 20) break; continue
  }
  const r = validate(buf)
  if (r.error) errors.push(r.error)
  else {
    if (r.v < (last[r.w] ?? 0)) errors.push('writer ' + r.w + ' went back from v=' + last[r.w] + ' to v=' + r.v)
    last[r.w] = r.v; versions.add(r.w + ':' + r.v)
  }
  reads++
  if (done || errors.length > 20) break
}
console.log(JSON.stringify({ reads, stale, versions: versions.size, errors: errors.slice(0, 5), errorCount: errors.length }))
process.exit(errors.length > 0 ? 1 : 0)
`

async function saveTool (t: Test, m: Mounted, times: Timings): Promise<Marked> {
  const dir = path.join(m.dir, 'save')
  const target = path.join(dir, 'doc.txt')
  const writerJs = path.join(m.root, 'save-writer.cjs')
  const readerJs = path.join(m.root, 'save-reader.cjs')
  fs.writeFileSync(writerJs, SAVE_WRITER_JS)
  fs.writeFileSync(readerJs, SAVE_READER_JS)
  fs.mkdirSync(dir)
  const body0 = Buffer.from('initial\n')
  fs.writeFileSync(target, Buffer.concat([Buffer.from(`rewindfs-save w=0 v=0 len=${body0.length} sha256=${createHash('sha256').update(body0).digest('hex')}\n`), body0]))
  type Valid = { w?: number, v?: number, error?: string }
  const validateAll = async (files: string[]): Promise<Valid[]> => {
    const r = await run(`${JSON.stringify(process.execPath)} ${JSON.stringify(readerJs)} --check ${files.map(f => JSON.stringify(f)).join(' ')}`, { cwd: m.root })
    try { return JSON.parse(r.stdout) } catch { return files.map(() => ({ error: r.stderr })) }
  }
  const validate = async (file: string): Promise<Valid> => (await validateAll([file]))[0]

  const go = path.join(m.root, 'save-go')
  const stop = path.join(m.root, 'save-stop')
  const s0 = Date.now()
  const readers = Array.from({ length: SAVE_READERS }, () => background(t, process.execPath, [readerJs, target, stop], { cwd: m.root }))
  const writers = Array.from({ length: SAVE_WRITERS }, (_, i) => background(t, process.execPath, [writerJs, target, String(i + 1), String(SAVES), go], { cwd: m.root }))
  fs.writeFileSync(go, '')
  // checkpoints while the saves run
  const marks: number[] = []
  while (writers.some(w => w.child.exitCode === null && w.child.signalCode === null)) {
    marks.push((await m.client.mark({ label: `save: during the saves ${marks.length + 1}` })).id)
    await new Promise(resolve => setTimeout(resolve, 50))
  }
  const ws = await Promise.all(writers.map(async w => await w.done))
  fs.writeFileSync(stop, '')
  const rs = await Promise.all(readers.map(async r => await r.done))
  times.add(`atomic save: ${SAVE_WRITERS} writers × ${SAVES} saves, ${SAVE_READERS} reader(s)`, Date.now() - s0, `${marks.length} checkpoints during the saves`)
  ws.forEach((w, i) => t.equal(w.code, 0, `writer ${i + 1} made ${SAVES} saves`, w.code === 0 ? {} : { stderr: w.stderr.slice(-2000) }))
  rs.forEach((r, i) => {
    let res: { reads?: number, stale?: number, versions?: number, errors?: string[] } = {}
    try { res = JSON.parse(r.stdout) } catch {}
    t.equal(r.code, 0, `reader ${i + 1} never saw a partial, mixed or older version, nor ENOENT`, r.code === 0 ? {} : { result: r.stdout.slice(0, 2000), stderr: r.stderr.slice(-1000) })
    t.ok((res.reads ?? 0) > 0, `reader ${i + 1} read the file ${res.reads ?? 0} times (${res.versions ?? 0} distinct versions)`)
    t.comment(`reader ${i + 1}: ${res.stale ?? 0} of ${(res.reads ?? 0) + (res.stale ?? 0)} opens failed with ESTALE and were retried (LIMITATION, DECISIONS.md)`)
  })
  t.ok(marks.length > 0, `${marks.length} checkpoints marked during the saves`)
  const atMarks = path.join(m.root, 'at-checkpoints')
  fs.mkdirSync(atMarks)
  for (const id of marks) fs.writeFileSync(path.join(atMarks, String(id)), await m.client.read({ id, path: 'save/doc.txt' }))
  const bad = (await validateAll(marks.map(id => path.join(atMarks, String(id))))).map((r, i) => r.error === undefined ? '' : `#${marks[i]}: ${r.error}`).filter(Boolean)
  t.same(bad, [], `save/doc.txt is a complete version at each of the ${marks.length} checkpoints taken during the saves`)

  const check = async (when: string): Promise<void> => {
    const r = await validate(target)
    t.equal(r.error, undefined, `save/doc.txt is a complete version ${when}`)
    t.equal(r.v, SAVES, `it is the last version (v=${SAVES}) of a writer ${when}`)
    t.same(fs.readdirSync(dir), ['doc.txt'], `no temporary file left ${when}`)
  }
  await check('after the saves')
  return await rewindCycle(t, m, times, {
    tool: 'atomic save',
    damage: async () => { await ok(t, 'truncate -s 5000 save/doc.txt && head -c 3000 /dev/urandom > save/.doc.txt.9.swp', { cwd: m.dir, msg: 'damage' }) },
    damagedCheck: async () => { t.not((await validate(target)).error, undefined, 'the damaged file is not a complete version') },
    check: async () => await check('after restore')
  })
}

// ------------------------------------------------------------------ the workspaces

type Tool = (t: Test, m: Mounted, times: Timings) => Promise<Marked>

/** one workspace per tool: the tool, its rewind cycle, then unmount and compare the directory on disk */
function toolTest (name: string, tool: Tool): void {
  t.test(name, { timeout: scale(240000, 3600000) }, async t => {
    const times = new Timings()
    const m = await mountWorkspace(t)
    const last = await tool(t, m, times)
    await unmountAndCompare(t, m, last, times)
    times.print(t, name)
  })
}

toolTest(`make -j2 of a ${C_FILES}-file C project through the mount`, makeTool)
toolTest('tar x and tar c of real tarballs through the mount', tarTool)
toolTest('rsync -aHAX into the mount', rsyncTool)
toolTest(`atomic saves: ${SAVE_WRITERS} writers, ${SAVE_READERS} reader(s), checkpoints during the saves`, saveTool)
