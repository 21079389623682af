/**
 * Regression: a path operation racing a rename over its target must not fail.
 *
 * Editors save by renaming a temporary file over the target; a reader that
 * opens or stats the target meanwhile gets the old or the new file, never
 * ENOENT (the name exists throughout). Through libfuse 2.9's path-based API
 * the kernel may send OPEN/GETATTR for the node of the replaced file after
 * the rename; libfuse has dropped that node's name and answered ENOENT before
 * rewindfs saw the request. Found by test/tools/tools-files.test.ts (atomic save:
 * a reader got ENOENT). The binding now answers ESTALE there, which makes the
 * kernel look the path up again (fuse/native/fuse-native.c, patch 9).
 *
 * Also found there (once in about 90 000 reads of the long form, not
 * reproduced on demand): a reader read a version cut short at the size of the
 * next version. The kernel's re-lookups (d_revalidate, after ESTALE or an
 * expired entry) hold no directory lock, and libfuse's LOOKUP asks for the
 * path's attributes before it finds the node of the name, with only the
 * parent locked: a RENAME over the name in between pairs one file's node with
 * another file's size and st_ino. The binding now hands a LOOKUP and a RENAME
 * of the same name to libfuse one after the other. This test checks for it
 * (content length, fstat size, one st_ino per version) but cannot force it.
 *
 * What is left (LIMITATION, measured, not asserted): the kernel retries once;
 * if another rename replaces the file between that retry's LOOKUP and its
 * OPEN, open(2) fails with ESTALE. How often depends on the churn: about 1 in
 * 200 opens with two readers of a small file, about 1 in 8 with this test's
 * three readers of files up to 64 KiB saved back to back (before the fix
 * about as many failed with ENOENT). With saves seconds apart it needs two
 * renames within a millisecond. Only an inode-based (low-level) FUSE API, or
 * keeping a replaced node openable, closes it.
 *
 * Method: two processes rename their own temporary files over one target
 * (RENAMES each, versions of 100 B to 64 KiB that state their own length),
 * three processes open+fstat+read and stat it in a loop until the renames
 * are done; every error and inconsistency is counted. Run natively first (0 errors
 * expected there, or the method is wrong), then through the mount: no
 * ENOENT and no error other than ESTALE may occur.
 */
import t from 'tap'
import fs from 'node:fs'
import path from 'node:path'
import { mountWorkspace } from '../helpers/mount.js'
import { PYTHON, run } from '../helpers/tools.js'

const RENAMES = 1500

const RACE_PY = `
import os, sys, json, errno, multiprocessing as mp
d, n, unique_ino = sys.argv[1], int(sys.argv[2]), sys.argv[3] == 'unique-ino'
target, stop = os.path.join(d, 'doc.txt'), os.path.join(d, 'stop')
def content(w, i):
    ln = 100 + (i * 7919 + w * 104729) % 65536
    return b'%d %d %d\\n' % (w, i, ln) + (b'%d:%d;' % (w, i) * (ln // 4 + 1))[:ln]
with open(target, 'wb') as f: f.write(content(9, 0))
def renamer(w):
    tmp = os.path.join(d, '.doc.txt.%d.swp' % w)
    for i in range(n):
        with open(tmp, 'wb') as f: f.write(content(w, i))
        os.rename(tmp, target)
def count(errs, k): errs[k] = errs.get(k, 0) + 1
def reader(q):
    ops, errs, seen = 0, {}, {}
    while not os.path.exists(stop):
        for op in ('open', 'stat'):
            try:
                if op == 'open':
                    with open(target, 'rb') as f:
                        st = os.fstat(f.fileno()); b = f.read()
                    nl = b.index(b'\\n'); w, i, ln = map(int, b[:nl].split())
                    if len(b) - nl - 1 != ln: count(errs, 'open: content cut short or too long')
                    if st.st_size != len(b): count(errs, 'open: fstat size is not the size read')
                    seen.setdefault('%d,%d' % (w, i), set()).add(st.st_ino)
                else:
                    os.stat(target)
            except OSError as e:
                count(errs, '%s %s' % (op, errno.errorcode.get(e.errno, e.errno)))
            except ValueError:
                count(errs, 'open: no header')
            ops += 1
    q.put((ops, errs, {k: sorted(v) for k, v in seen.items()}))
q = mp.Queue()
readers = [mp.Process(target=reader, args=(q,)) for _ in range(3)]
renamers = [mp.Process(target=renamer, args=(w,)) for w in range(2)]
for p in readers + renamers: p.start()
for p in renamers: p.join()
open(stop, 'w').close()
res = [q.get() for _ in readers]
for p in readers: p.join()
errs, inos, owner = {}, {}, {}
for _, e, s in res:
    for k, v in e.items(): errs[k] = errs.get(k, 0) + v
    for k, v in s.items(): inos.setdefault(k, set()).update(v)
# one version of the file has one st_ino; rewindfs never reuses an inode number
# (a native file system does, once the replaced file is gone)
for k, v in inos.items():
    if len(v) > 1: count(errs, 'one version seen with several st_ino')
    for ino in v:
        if unique_ino and owner.setdefault(ino, k) != k: count(errs, 'one st_ino seen with several versions')
print(json.dumps({'ops': sum(o for o, _, _ in res), 'versions': len(inos), 'errors': errs, 'renamers': [p.exitcode for p in renamers]}))
`

t.test('open and stat racing renames over the target never fail', async t => {
  const m = await mountWorkspace(t)
  const script = path.join(m.root, 'race.py')
  fs.writeFileSync(script, RACE_PY)
  for (const [where, dir] of [['natively', path.join(m.root, 'native')], ['through the mount', path.join(m.dir, 'race')]]) {
    fs.mkdirSync(dir)
    const r = await run(`${PYTHON} ${JSON.stringify(script)} ${JSON.stringify(dir)} ${RENAMES} ${where === 'natively' ? 'reused-ino' : 'unique-ino'}`, { cwd: m.root, timeoutMs: 240000 })
    t.equal(r.code, 0, `the race ran ${where}`, r.code === 0 ? {} : { stderr: r.stderr.slice(-2000) })
    const res = JSON.parse(r.stdout.trim() || '{}') as { ops?: number, versions?: number, errors?: Record<string, number>, renamers?: number[] }
    t.same(res.renamers, [0, 0], `both renamers finished ${where}`)
    t.ok((res.ops ?? 0) > 0 && (res.versions ?? 0) > 1, `${res.ops ?? 0} opens and stats, ${res.versions ?? 0} versions read ${where}`)
    const errors = res.errors ?? {}
    const stale = (errors['open ESTALE'] ?? 0) + (errors['stat ESTALE'] ?? 0)
    if (where === 'natively') {
      t.same(errors, {}, `no open or stat failed while ${2 * RENAMES} renames replaced the target ${where}`)
    } else {
      const wrong = Object.fromEntries(Object.entries(errors).filter(([k]) => !k.endsWith(' ESTALE')))
      t.same(wrong, {}, `no open or stat failed with ENOENT (or anything but ESTALE), no version was read cut short or with another's size or st_ino, while ${2 * RENAMES} renames replaced the target ${where}`)
      t.comment(`LIMITATION: ${stale} of ${res.ops ?? 0} opens and stats failed with ESTALE (a second rename inside the kernel's retry)`)
    }
  }
})
