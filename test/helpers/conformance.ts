/**
 * The POSIX conformance suite's set-up and counting (test/posix/conformance.test.ts,
 * one file per area of POSIX in test/posix/conformance/, which share one
 * mount: conformance/mount.ts; test/README-conformance.md): one workspace whose
 * directory holds the lower content (`populateLower`), the same native tree
 * beside it, and the helpers below that compare call by call.
 *
 * A CASE is one compared operation outcome: one assertion that an operation
 * on the mount had the expected result, made by one of the helpers below and
 * counted by them (`tally`):
 * - both():        the same return value or errno as the same call natively;
 * - seq():         each labelled entry of a python sequence (return value or
 *                  errno of one call) equal to the native entry;
 * - sameStat(), sameContent(), sameList(): the same resulting stat fields
 *                  (type, mode, nlink, size, uid, gid; times where set
 *                  explicitly), bytes, or directory listing as natively;
 * - limitation():  where rewindfs cannot behave natively, the exact result it
 *                  must give instead (marked LIMITATION with the reason);
 * - property():    where the native result is not a reference (statfs
 *                  fields, SEEK_DATA/SEEK_HOLE consistency), a property POSIX
 *                  requires of the mount's result.
 * A failed assertion counts as a case that did not pass. The last subtest
 * (`countCases`) prints `# conformance: N cases, P passed` (and the split by
 * kind).
 * Assertions outside these helpers (set-up sanity, checkpoint round trip)
 * are not counted.
 *
 * The daemon runs in a child process (test/helpers/mount.ts), so the test
 * process may use synchronous fs calls on the mount. The unprivileged user is
 * uid/gid 65534 (setpriv, no supplementary groups).
 */
import type { Test } from 'tap'
import fs from 'node:fs'
import path from 'node:path'
import { mountWorkspace, type Mounted } from './mount.js'
import { fuseLayer } from '../../fuse/layer.js'
import {
  type Outcome, type P, type Trees, type PyEntry, outcome, statFields, runSync, pyJson, pySeq,
  bufDiff, pattern
} from './native-compare.js'

/** The mount is served by the libfuse 3 low-level layer (REWINDFS_FUSE=ll): some libfuse 2.9 limitations are gone there. */
export const LOW_LEVEL = fuseLayer() === 'll'
export const KiB = 1024
export const MiB = 1024 * KiB
export const GiB = 1024 * MiB
export const BLOCK = 64 * KiB
export const C = fs.constants

/**
 * Content that exists before the mount: rewindfs serves it from the lower
 * layer (the directory as it was) until it is first changed. Built the same
 * way in the native tree.
 */
export function populateLower (dir: string): void {
  const p = (r: string): string => path.join(dir, 'lower', r)
  fs.mkdirSync(p('a/b'), { recursive: true })
  fs.mkdirSync(p('z'))
  fs.writeFileSync(p('a/file'), pattern(2 * BLOCK + 9, 21))
  fs.writeFileSync(p('a/b/small'), 'small')
  fs.chmodSync(p('a/b/small'), 0o4750)
  fs.chownSync(p('a/b/small'), 321, 654)
  fs.linkSync(p('a/file'), p('z/hard'))
  fs.symlinkSync('../a/file', p('z/sym'))
  runSync('mkfifo', ['-m', '0600', p('z/fifo')])
  fs.writeFileSync(p('z/sparse'), 'x'); writeAt(p('z/sparse'), 'y', 3 * MiB)
  pyJson('import os,sys,json\nos.setxattr(sys.argv[1], "user.lower", b"L")\nprint(1)', p('a/b/small'))
  for (const r of ['a/file', 'a/b/small', 'z/sparse', 'z/sym', 'z/fifo', 'a/b', 'a', 'z', '']) {
    const x = runSync('python3', ['-c', 'import os,sys\nos.utime(sys.argv[1], ns=(1111111111222222222, 1222222222333333333), follow_symlinks=False)', p(r)])
    if (x.code !== 0) throw new Error(x.stderr)
  }
}
/**
 * Mounts a workspace over the lower content (`populateLower`) and builds the
 * same tree natively beside it: `trees.nat` and `trees.mnt` (both 0755, as
 * the unprivileged-user cases need). Unmounted in t's teardown (helpers/mount.ts).
 * Each subtest of t from now on counts its cases under its own name.
 */
export async function conformanceMount (t: Test): Promise<{ m: Mounted, trees: Trees }> {
  const m = await mountWorkspace(t, populateLower)
  const trees: Trees = { nat: path.join(m.root, 'native'), mnt: m.dir }
  fs.mkdirSync(trees.nat)
  populateLower(trees.nat)
  // mkdtemp made the temporary root 0700; the unprivileged-user case needs to reach both trees
  fs.chmodSync(m.root, 0o755)
  fs.chmodSync(trees.nat, 0o755)
  fs.chmodSync(trees.mnt, 0o755)
  t.beforeEach(tt => { current = tt.name })
  return { m, trees }
}

export interface Case { nat: P, mnt: P }

/** Conformance cases counted by the helpers below (see the header). */
const tally = { cases: 0, passed: 0, native: 0, limitation: 0, property: 0 }
/** [cases, passed] by subtest name, in the order they ran */
const bySubtest = new Map<string, [number, number]>()
/** name of the subtest running now (the helpers do not get it passed) */
let current = '(top level)'

/** Records one case of `kind` and whether its assertion passed; returns ok. */
export function record (ok: boolean, kind: 'native' | 'limitation' | 'property' = 'native'): boolean {
  tally.cases++
  tally[kind]++
  if (ok) tally.passed++
  const s = bySubtest.get(current) ?? [0, 0]
  s[0]++; if (ok) s[1]++
  bySubtest.set(current, s)
  return ok
}

/** Runs fn on both trees; asserts the same outcome; returns the native one. */
export function both<T> (tt: Test, label: string, c: Case, fn: (p: P) => T): Outcome<T> {
  const a = outcome(() => fn(c.nat))
  const b = outcome(() => fn(c.mnt))
  record(tt.same(b, a, label))
  return a
}

/** An entry of a python sequence where the mount cannot answer as native: what it answers instead, and why. */
export interface Limit { mount: PyEntry, why: string }

/**
 * Runs a python sequence (PY_PRELUDE's r() entries) on both trees and
 * asserts each mount entry equal to the native one: one case per entry.
 * Entries named in `limits` are asserted equal to the documented mount
 * answer instead (LIMITATION). `run` gets the tree's path resolver. A
 * script that fails on either side fails the test (one case).
 */
export function seq (tt: Test, label: string, c: Case, run: (p: P) => PyEntry[], limits: Record<string, Limit> = {}): PyEntry[] {
  const a = outcome(() => run(c.nat))
  const b = outcome(() => run(c.mnt))
  if (!('ok' in a) || !('ok' in b)) {
    record(tt.fail(`${label}: the script failed: native ${JSON.stringify(a).slice(0, 2000)}, mount ${JSON.stringify(b).slice(0, 2000)}`))
    return []
  }
  const n = Math.max(a.ok.length, b.ok.length)
  for (let i = 0; i < n; i++) {
    const name = String((a.ok[i] ?? b.ok[i])![0])
    const lim = limits[name]
    if (lim) limitation(tt, b.ok[i], lim.mount, `${label}: ${name}: ${lim.why} (native: ${JSON.stringify(a.ok[i]?.slice(1))})`)
    else record(tt.same(b.ok[i], a.ok[i], `${label}: ${name}`))
  }
  for (const name of Object.keys(limits)) if (!a.ok.some(e => e[0] === name)) record(tt.fail(`${label}: no entry "${name}" (a limitation names a missing case)`))
  return a.ok
}

/** A python sequence of `script` on both trees: argv[1] is the case directory; as `uid` when given. */
export function pyBoth (tt: Test, label: string, c: Case, script: string, o: { uid?: number, limits?: Record<string, Limit> } = {}): PyEntry[] {
  return seq(tt, label, c, p => pySeq(script, [p()], { uid: o.uid }), o.limits)
}

/** Runs set-up steps on both trees; they must succeed on both (a set-up is not a counted case). */
export function setup (tt: Test, c: Case, fn: (p: P) => void): void {
  const a = outcome(() => fn(c.nat))
  const b = outcome(() => fn(c.mnt))
  tt.same([a, b], [{ ok: undefined }, { ok: undefined }], 'set-up succeeds on both trees')
}

/** LIMITATION: asserts the mount's result equals what rewindfs documents instead of native behaviour. */
export function limitation (tt: Test, actual: unknown, expected: unknown, label: string): boolean {
  return record(tt.same(actual, expected, 'LIMITATION: ' + label), 'limitation')
}

/** A property POSIX requires of the mount's result where native is no reference. */
export function property (tt: Test, ok: boolean, label: string, extra?: unknown): boolean {
  return record(tt.ok(ok, label, extra === undefined ? {} : { found: extra }), 'property')
}

/** Asserts the same stat fields of rel in both trees. */
export function sameStat (tt: Test, c: Case, rel: string, o: { mtime?: boolean, atime?: boolean, follow?: boolean } = {}): void {
  const a = outcome(() => statFields(c.nat(rel), o))
  const b = outcome(() => statFields(c.mnt(rel), o))
  record(tt.same(b, a, `stat ${rel || '.'}`))
}

/** Asserts the same content bytes of rel in both trees. */
export function sameContent (tt: Test, c: Case, rel: string): void {
  const a = fs.readFileSync(c.nat(rel))
  const b = fs.readFileSync(c.mnt(rel))
  record(tt.equal(bufDiff(b, a), null, `content ${rel} (${a.length} bytes)`))
}

/** Asserts the same sorted listing of a directory in both trees. */
export function sameList (tt: Test, c: Case, rel: string): string[] {
  const a = fs.readdirSync(c.nat(rel)).sort()
  const b = fs.readdirSync(c.mnt(rel)).sort()
  record(tt.same(b, a, `readdir ${rel || '.'}`))
  return b
}

export function writeAt (p: string, data: Buffer | string, pos: number, flags = 'r+'): number {
  const fd = fs.openSync(p, flags)
  try { return fs.writeSync(fd, typeof data === 'string' ? Buffer.from(data) : data, 0, Buffer.byteLength(data), pos) } finally { fs.closeSync(fd) }
}

export function ino (p: string): bigint { return fs.lstatSync(p, { bigint: true }).ino }

/** [st_atime_ns, st_mtime_ns] of p (lstat) from python3 os.stat, as decimal strings (exact beyond 2^53). */
export function statNs (p: string): [string, string] {
  const r = runSync('python3', ['-c', "import os,sys\ns=os.stat(sys.argv[1],follow_symlinks=False)\nprint('%d %d' % (s.st_atime_ns, s.st_mtime_ns))", p])
  if (r.code !== 0) throw Object.assign(new Error(r.stderr), { code: 'PYTHON:' + r.stderr.trim().split('\n').pop() })
  const [a, mm] = r.stdout.trim().split(' ')
  return [a!, mm!]
}

/**
 * The suite's last subtest: prints `# conformance: N cases, P passed` with
 * the split by kind, and each subtest's count.
 */
export function countCases (t: Test): void {
  t.test('conformance count', async tt => {
    tt.ok(tally.cases > 0, `${tally.cases} cases counted`)
    for (const [name, [n, ok]] of bySubtest) tt.comment(`${n} cases, ${ok} passed: ${name}`)
    tt.comment(`conformance: ${tally.cases} cases, ${tally.passed} passed (${tally.native} compared with native, ${tally.limitation} asserted as documented limitations, ${tally.property} required properties)`)
  })
}
