/**
 * Regression: a path operation racing a rename over its target must not fail.
 *
 * Editors save by renaming a temporary file over the target; a reader that
 * opens or stats the target meanwhile gets the old or the new file, never
 * ENOENT (the name exists throughout). Through libfuse 2.9's path-based API
 * the kernel may send OPEN/GETATTR for the node of the replaced file after
 * the rename; libfuse has dropped that node's name and answered ENOENT before
 * rewindfs saw the request. Found by test/tools-files.test.ts (atomic save:
 * a reader got ENOENT). The binding now answers ESTALE there, which makes the
 * kernel look the path up again (fuse/native/fuse-native.c, patch 9).
 *
 * What is left (LIMITATION, measured, not asserted): the kernel retries once;
 * if another rename replaces the file between that retry's LOOKUP and its
 * OPEN, open(2) fails with ESTALE. Under this test's continuous renames that
 * is about 1 open in 200 (it was 3 in 100 opens and stats failing with
 * ENOENT before); with saves seconds apart it needs two renames within well
 * under a millisecond. Only an inode-based (low-level) FUSE API closes it.
 *
 * Method: two processes rename their own temporary files over one target
 * (RENAMES each), two processes open+read and stat it in a loop until the
 * renames are done; every error is counted. Run natively first (0 errors
 * expected there, or the method is wrong), then through the mount: no
 * ENOENT and no error other than ESTALE may occur.
 */
import t from 'tap'
import fs from 'node:fs'
import path from 'node:path'
import { mountWorkspace } from './helpers/mount.js'
import { PYTHON, run } from './helpers/tools.js'

const RENAMES = 2500

const RACE_PY = `
import os, sys, json, errno, multiprocessing as mp
d, n = sys.argv[1], int(sys.argv[2])
target, stop = os.path.join(d, 'doc.txt'), os.path.join(d, 'stop')
with open(target, 'w') as f: f.write('0')
def renamer(w):
    tmp = os.path.join(d, '.doc.txt.%d.swp' % w)
    for i in range(n):
        with open(tmp, 'w') as f: f.write('%d:%d' % (w, i))
        os.rename(tmp, target)
def reader(q):
    ops, errs = 0, {}
    while not os.path.exists(stop):
        for op in ('open', 'stat'):
            try:
                if op == 'open':
                    with open(target) as f: f.read()
                else:
                    os.stat(target)
            except OSError as e:
                k = '%s %s' % (op, errno.errorcode.get(e.errno, e.errno))
                errs[k] = errs.get(k, 0) + 1
            ops += 1
    q.put((ops, errs))
q = mp.Queue()
readers = [mp.Process(target=reader, args=(q,)) for _ in range(2)]
renamers = [mp.Process(target=renamer, args=(w,)) for w in range(2)]
for p in readers + renamers: p.start()
for p in renamers: p.join()
open(stop, 'w').close()
res = [q.get() for _ in readers]
for p in readers: p.join()
errs = {}
for _, e in res:
    for k, v in e.items(): errs[k] = errs.get(k, 0) + v
print(json.dumps({'ops': sum(o for o, _ in res), 'errors': errs, 'renamers': [p.exitcode for p in renamers]}))
`

t.test('open and stat racing renames over the target never fail', async t => {
  const m = await mountWorkspace(t)
  const script = path.join(m.root, 'race.py')
  fs.writeFileSync(script, RACE_PY)
  for (const [where, dir] of [['natively', path.join(m.root, 'native')], ['through the mount', path.join(m.dir, 'race')]]) {
    fs.mkdirSync(dir)
    const r = await run(`${PYTHON} ${JSON.stringify(script)} ${JSON.stringify(dir)} ${RENAMES}`, { cwd: m.root, timeoutMs: 240000 })
    t.equal(r.code, 0, `the race ran ${where}`, r.code === 0 ? {} : { stderr: r.stderr.slice(-2000) })
    const res = JSON.parse(r.stdout.trim() || '{}') as { ops?: number, errors?: Record<string, number>, renamers?: number[] }
    t.same(res.renamers, [0, 0], `both renamers finished ${where}`)
    t.ok((res.ops ?? 0) > 0, `${res.ops ?? 0} opens and stats ${where}`)
    const errors = res.errors ?? {}
    const stale = (errors['open ESTALE'] ?? 0) + (errors['stat ESTALE'] ?? 0)
    if (where === 'natively') {
      t.same(errors, {}, `no open or stat failed while ${2 * RENAMES} renames replaced the target ${where}`)
    } else {
      const wrong = Object.fromEntries(Object.entries(errors).filter(([k]) => !k.endsWith(' ESTALE')))
      t.same(wrong, {}, `no open or stat failed with ENOENT (or anything but ESTALE) while ${2 * RENAMES} renames replaced the target ${where}`)
      t.comment(`LIMITATION: ${stale} of ${res.ops ?? 0} opens and stats failed with ESTALE (a second rename inside the kernel's retry)`)
    }
  }
})
