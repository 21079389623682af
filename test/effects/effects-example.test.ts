/**
 * `npm run example:effects` (examples/effects-example.ts, run as its built
 * script: examples/ imports test/, not the reverse) against its real
 * loopback ticket tracker: in both runs the duplicate create is refused by
 * the recovery gate and the tracker holds exactly one ticket per title; in
 * the lost-response run the tracker creates the ticket but cuts the
 * connection, and the unknown outcome fails closed until the reconcile
 * reads the tracker.
 */
import t from 'tap'
import path from 'node:path'
import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import { fileURLToPath } from 'node:url'

const exec = promisify(execFile)
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..')

t.test('the example: both duplicates refused by the gate, one ticket per title', async tt => {
  const r = await exec(process.execPath, ['dist/examples/effects-example.js'], { cwd: root, timeout: 120000 }).catch((e: { code: number, stdout: string, stderr: string }) => e)
  const out = r.stdout
  tt.equal((r as { code?: number }).code ?? 0, 0, `the example exits 0:\n${out}${r.stderr}`)
  tt.match(out, /PASS: the gate stopped both duplicates/)
  tt.match(out, /ticket #1 created \(recorded confirmed\)/, 'run 1: the first create is confirmed')
  tt.match(out, /no response: the outcome is recorded unknown/, 'run 2: the lost response is recorded unknown')
  tt.equal(out.match(/create_ticket again: E_EFFECT_DONE/g)?.length, 2, 'the repeat is refused as done in both runs')
  tt.match(out, /create_ticket again without reconciling: E_EFFECT_UNKNOWN/, 'the unknown outcome fails closed before the reconcile')
  tt.match(out, /trajectory restored, workspace restored, external effects unreconciled/, 'the restore after the lost response gives three separate facts')
  tt.equal(out.match(/the tracker holds 1 ticket titled/g)?.length, 2, 'one ticket per title on the tracker')
})
