/**
 * The effects example (issue 15, item 5): a rewind restores the workspace
 * and the context, never what the abandoned branch did outside. An agent
 * (scripted, deterministic) creates a ticket through a small HTTP ticket
 * tracker on loopback that this example starts; the branch then fails and
 * the agent rewinds to the checkpoint before the ticket. On the new branch
 * it wants the ticket again:
 *
 *   run 1, "duplicate":     the response arrived: the ledger holds the ticket
 *                           as confirmed; the agent re-reads the tracker
 *                           (reconcile: present), and the recovery gate
 *                           refuses the second create (E_EFFECT_DONE): the
 *                           tracker keeps one ticket.
 *   run 2, "lost response": the tracker creates the ticket but the response
 *                           is lost (the connection is cut); the wrapper
 *                           records the outcome as unknown. After the rewind
 *                           the gate refuses the create (E_EFFECT_UNKNOWN:
 *                           fail closed) until a reconcile reads the tracker;
 *                           it shows the ticket, so the create stays refused
 *                           (E_EFFECT_DONE) and the tracker keeps one ticket.
 *
 * Every call goes through the TypeScript client's guarded-call wrapper
 * (client/effects.ts: begin, sent, the call with a timeout, complete).
 * Run: `npm run example:effects` (builds what is missing first; needs
 * /dev/fuse, as the tests do). Prints each step; exits 1 unless both runs
 * end with exactly one ticket on the tracker and the gate decided as above.
 */
import http from 'node:http'
import fs from 'node:fs'
import path from 'node:path'
import type { AddressInfo } from 'node:net'
import { mountWorkspace } from '../test/helpers/mount.js'
import type { RewindClient } from '../client/client.js'
import { EffectCallError, gateMessage, guardedCall, notUndoneNote } from '../client/effects.js'

/** A ticket tracker on loopback: POST /tickets creates one (JSON {title}), GET /tickets?title=T lists those with that title. */
export interface Tracker { url: string, tickets: Array<{ id: number, title: string }>, dropNextResponse: boolean, close: () => Promise<void> }

/** Start the tracker on 127.0.0.1 (any free port). With `dropNextResponse`, the next create happens but its connection is cut before the reply. */
export async function startTracker (): Promise<Tracker> {
  const t: Tracker = { url: '', tickets: [], dropNextResponse: false, close: async () => {} }
  const server = http.createServer((req, res) => {
    const u = new URL(req.url ?? '/', 'http://x')
    if (req.method === 'GET' && u.pathname === '/tickets') {
      const title = u.searchParams.get('title')
      res.setHeader('content-type', 'application/json')
      res.end(JSON.stringify(t.tickets.filter(x => title === null || x.title === title)))
      return
    }
    if (req.method === 'POST' && u.pathname === '/tickets') {
      let body = ''
      req.on('data', (c: Buffer) => { body += c.toString() })
      req.on('end', () => {
        const ticket = { id: t.tickets.length + 1, title: String((JSON.parse(body) as { title?: unknown }).title) }
        t.tickets.push(ticket)
        if (t.dropNextResponse) { t.dropNextResponse = false; req.socket.destroy(); return }
        res.statusCode = 201
        res.setHeader('content-type', 'application/json')
        res.end(JSON.stringify(ticket))
      })
      return
    }
    res.statusCode = 404
    res.end()
  })
  await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve))
  t.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  t.close = async () => { server.closeAllConnections(); await new Promise(resolve => server.close(resolve)) }
  return t
}

/** The agent's create_ticket tool, guarded: resolves to the ticket, or to the gate's refusal message. */
async function createTicket (client: RewindClient, tracker: Tracker, title: string, run: string): Promise<{ ticket?: { id: number }, refused?: string, code?: string, status?: string }> {
  try {
    const r = await guardedCall(client, {
      tool: 'create_ticket', target: `${tracker.url}/tickets`, request: { method: 'POST', body: { title } }, run,
      callTimeoutMs: 5000,
      call: async ({ identity, signal }) => {
        const res = await fetch(`${tracker.url}/tickets`, { method: 'POST', body: JSON.stringify({ title }), headers: { 'content-type': 'application/json', 'idempotency-key': identity }, signal })
        return await res.json() as { id: number }
      },
      outcome: ticket => ({ status: 'confirmed', evidence: { ticket: ticket.id } })
    })
    return { ticket: r.result, status: r.status }
  } catch (e) {
    const msg = gateMessage(e)
    if (msg !== null) return { refused: msg, code: (e as { code?: string }).code }
    if (e instanceof EffectCallError) return { status: e.status }
    throw e
  }
}

/** Re-read the tracker and record what it shows for occurrence `occurrence`. */
async function reconcileTicket (client: RewindClient, tracker: Tracker, title: string, occurrence: number): Promise<string> {
  const found = await (await fetch(`${tracker.url}/tickets?title=${encodeURIComponent(title)}`)).json() as Array<{ id: number }>
  const verdict = found.length === 0 ? 'absent' : 'present'
  await client.effectReconcile({ occurrence, verdict, evidence: { 'GET /tickets': found } })
  return verdict
}

/** One run: mark, create the ticket, fail, rewind, reconcile, try again. Returns whether it went as the module comment says. */
async function oneRun (client: RewindClient, dir: string, tracker: Tracker, way: 'duplicate' | 'lost response', say: (s: string) => void): Promise<boolean> {
  const title = `login page is blank (${way})`
  const run = `effects-${way.replace(' ', '-')}`
  fs.writeFileSync(path.join(dir, 'notes.md'), 'plan: report the bug, then fix it\n')
  const before = await client.mark({ label: `before the ticket (${way})`, context: { messages: [{ role: 'user', content: 'report the login bug, then fix it' }] } })
  say(`checkpoint #${before.id}, then create_ticket "${title}"`)
  tracker.dropNextResponse = way === 'lost response'
  const first = await createTicket(client, tracker, title, run)
  say(first.ticket !== undefined ? `  ticket #${first.ticket.id} created (recorded ${first.status})` : `  no response: the outcome is recorded ${first.status}`)
  fs.writeFileSync(path.join(dir, 'fix.js'), 'broken()\n')
  say('  the fix fails on this branch: rewind')
  const restored = await client.restore({ id: before.id })
  if (restored.recovery === undefined) throw new Error('a full restore reports recovery: this daemon keeps no effect ledger')
  const r = { recovery: restored.recovery }
  say(`restore #${before.id}: trajectory ${r.recovery.trajectory}, workspace ${r.recovery.workspace}, external effects ${r.recovery.effects}`)
  say((notUndoneNote(r.recovery.abandoned) ?? '').split('\n').map(l => `  ${l}`).join('\n'))
  const occurrence = r.recovery.abandoned[0]?.occurrence
  let ok = r.recovery.abandoned.length === 1 && !fs.existsSync(path.join(dir, 'fix.js'))
  if (way === 'lost response') {
    const blind = await createTicket(client, tracker, title, run)
    say(`new branch, create_ticket again without reconciling: ${blind.code ?? 'allowed'}: ${blind.refused ?? ''}`)
    ok &&= blind.code === 'E_EFFECT_UNKNOWN'
  }
  const verdict = await reconcileTicket(client, tracker, title, occurrence!)
  say(`reconcile #${occurrence}: GET /tickets shows the ticket ${verdict}`)
  const again = await createTicket(client, tracker, title, run)
  say(`create_ticket again: ${again.code ?? 'allowed'}: ${again.refused ?? ''}`)
  ok &&= verdict === 'present' && again.code === 'E_EFFECT_DONE'
  const onTracker = tracker.tickets.filter(x => x.title === title).length
  say(`the tracker holds ${onTracker} ticket${onTracker === 1 ? '' : 's'} titled "${title}"\n`)
  return ok && onTracker === 1
}

/** Both runs on one mount; returns true when each went as the module comment says. */
export async function effectsExample (say: (s: string) => void = console.log): Promise<boolean> {
  const teardowns: Array<() => unknown> = []
  const tracker = await startTracker()
  try {
    const m = await mountWorkspace({ teardown: fn => { teardowns.push(fn) } }, dir => { fs.writeFileSync(path.join(dir, 'README.md'), 'a project\n') })
    await m.client.effectRegister({ tool: 'create_ticket', class: 'compensable', description: 'POST /tickets on the tracker' })
    say(`ticket tracker on ${tracker.url}; workspace ${m.dir}\n`)
    const dup = await oneRun(m.client, m.dir, tracker, 'duplicate', say)
    const lost = await oneRun(m.client, m.dir, tracker, 'lost response', say)
    return dup && lost
  } finally {
    for (const fn of teardowns.reverse()) await fn()
    await tracker.close()
  }
}

if (process.argv[1] !== undefined && import.meta.url === new URL(`file://${path.resolve(process.argv[1])}`).href) {
  const ok = await effectsExample()
  console.log(ok ? 'PASS: the gate stopped both duplicates; the tracker holds one ticket per title' : 'FAIL: see above')
  process.exit(ok ? 0 : 1)
}
