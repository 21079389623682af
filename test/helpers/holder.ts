/**
 * Test builder: a Python process that holds descriptors and mappings open
 * inside a mount while the test does other things (restores), and runs
 * Python statements on request. Each `run(code)` sends one snippet; the
 * process executes it in one shared namespace (os and mmap imported) and
 * answers with the value it left in `res`, or with the error it raised
 * (`{ err: 'FileNotFoundError', errno: 2 }`). A signal that kills it (a
 * SIGBUS from a mapping whose file shrank) rejects every pending and later
 * call with the signal's name. The process starts in `cwd` (changed into in
 * the child, never by the caller: see fuse/ll/README.md) and is killed in
 * the teardown of the test that made it.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import type { Teardownable } from './mount.js'

const PROGRAM = `
import os, sys, json, mmap
os.chdir(sys.argv[1])
g = {'os': os, 'mmap': mmap}
for line in sys.stdin:
    g['res'] = None
    try:
        exec(json.loads(line), g)
        r = {'ok': g['res']}
    except Exception as e:
        r = {'err': type(e).__name__, 'errno': getattr(e, 'errno', None), 'msg': str(e)}
    sys.stdout.write(json.dumps(r) + '\\n')
    sys.stdout.flush()
`

/** What a snippet gave: `ok` (its `res`, JSON) or the exception it raised. */
export type HolderAnswer = { ok: any } | { err: string, errno: number | null, msg: string }

/** A running holder process (see the module comment). */
export interface Holder {
  /** runs `code` (Python statements; set `res` to answer a value) */
  run(code: string): Promise<HolderAnswer>
  /** like run, but rejects on an exception; resolves with `res` */
  value(code: string): Promise<any>
  /** the signal that ended the process, or null while it runs or after a normal exit */
  readonly signal: NodeJS.Signals | null
  /** ends it (closing everything it holds) and waits for its exit */
  end(): Promise<void>
}

/** Starts a holder in directory `cwd`; killed in `t`'s teardown. */
export function startHolder (t: Teardownable, cwd: string): Holder {
  const child: ChildProcess = spawn('python3', ['-c', PROGRAM, cwd], { cwd: '/', stdio: ['pipe', 'pipe', 'pipe'] })
  let buf = ''
  let stderr = ''
  const waiting: Array<{ resolve: (a: HolderAnswer) => void, reject: (e: Error) => void }> = []
  let ended: Error | null = null
  let signal: NodeJS.Signals | null = null
  const exited = new Promise<void>(resolve => child.once('exit', (_code, sig) => {
    signal = sig
    ended = new Error(`the holder process ended${sig !== null ? ` by ${sig}` : ''}: ${stderr.slice(-500)}`)
    for (const w of waiting.splice(0)) w.reject(ended)
    resolve()
  }))
  child.stderr!.on('data', d => { stderr += String(d) })
  child.stdout!.on('data', d => {
    buf += String(d)
    for (let i = buf.indexOf('\n'); i >= 0; i = buf.indexOf('\n')) {
      const line = buf.slice(0, i)
      buf = buf.slice(i + 1)
      waiting.shift()?.resolve(JSON.parse(line))
    }
  })
  t.teardown(async () => { if (child.exitCode === null && child.signalCode === null) { child.kill('SIGKILL'); await exited } })
  const run = async (code: string): Promise<HolderAnswer> => {
    if (ended !== null) throw ended
    return await new Promise((resolve, reject) => {
      waiting.push({ resolve, reject })
      child.stdin!.write(JSON.stringify(code) + '\n')
    })
  }
  return {
    run,
    value: async (code) => {
      const a = await run(code)
      if ('err' in a) throw new Error(`${a.err} (errno ${a.errno}): ${a.msg}`)
      return a.ok
    },
    get signal () { return signal },
    end: async () => { child.stdin!.end(); await exited }
  }
}
