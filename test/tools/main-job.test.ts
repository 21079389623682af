/**
 * The main job (scripts/main-job.ts, `npm run demo`) end to end: run the
 * compiled job as a child process, bounded to 3 minutes, and require exit 0
 * and PASS. The job cleans up after itself; on timeout it is sent SIGTERM
 * (it unmounts and removes its temporary directories), then SIGKILL.
 */
import t from 'tap'
import path from 'node:path'
import { spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'

const here = path.dirname(fileURLToPath(import.meta.url))
/** dist/scripts/main-job.js */
const JOB = path.resolve(here, '../../scripts/main-job.js')
const LIMIT_MS = 180000

t.test('main job: real tools through the mount, damage, restore, independent manifest', { timeout: LIMIT_MS + 60000 }, async t => {
  const started = Date.now()
  const r = await new Promise<{ code: number | null, signal: NodeJS.Signals | null, out: string, timedOut: boolean }>((resolve, reject) => {
    const child = spawn(process.execPath, [JOB], { stdio: ['ignore', 'pipe', 'pipe'] })
    let out = ''
    child.stdout.on('data', (d: Buffer) => { out += d.toString() })
    child.stderr.on('data', (d: Buffer) => { out += d.toString() })
    let timedOut = false
    let kill: ReturnType<typeof setTimeout> | undefined
    const timer = setTimeout(() => {
      timedOut = true
      child.kill('SIGTERM')
      kill = setTimeout(() => child.kill('SIGKILL'), 30000)
    }, LIMIT_MS)
    child.on('error', reject)
    child.on('close', (code, signal) => {
      clearTimeout(timer)
      if (kill !== undefined) clearTimeout(kill)
      resolve({ code, signal, out, timedOut })
    })
  })
  const elapsed = Date.now() - started
  t.comment(`main job finished in ${(elapsed / 1000).toFixed(1)} s`)
  t.notOk(r.timedOut, `finishes within ${LIMIT_MS / 1000} s`)
  t.ok(elapsed < LIMIT_MS, `took ${(elapsed / 1000).toFixed(1)} s`)
  t.equal(r.code, 0, 'exit status 0', { output: r.code === 0 ? undefined : r.out.slice(-6000), signal: r.signal })
  t.match(r.out, /^PASS\b/m, 'prints PASS')
  t.notMatch(r.out, /^FAIL\b/m, 'prints no FAIL')
  t.match(r.out, /restore #\d+ \(after damage\)\s+[\d.]+ ms/, 'prints the restore latency')
  t.match(r.out, /5 chmod \+x\s+#\d+\s+[\d.]+/, 'prints each checkpoint with its latency')
})
