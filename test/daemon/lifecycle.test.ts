/**
 * The daemon's lifecycle state machine (daemon/lifecycle.ts), without a
 * mount: the moves daemon.ts makes are allowed, every other move throws,
 * and `closed` resolves exactly when CLOSED is reached.
 */
import t from 'tap'
import { Lifecycle, type DaemonState } from '../../daemon/lifecycle.js'

const STATES: DaemonState[] = ['OPENING', 'MOUNTED', 'UNMOUNTING', 'CLOSED']
const ALLOWED = new Set(['OPENING>MOUNTED', 'OPENING>CLOSED', 'MOUNTED>UNMOUNTING', 'UNMOUNTING>MOUNTED', 'UNMOUNTING>CLOSED'])

/** A lifecycle brought to state `s` by allowed moves. */
function at (s: DaemonState): Lifecycle {
  const l = new Lifecycle()
  const path: Record<DaemonState, DaemonState[]> = { OPENING: [], MOUNTED: ['MOUNTED'], UNMOUNTING: ['MOUNTED', 'UNMOUNTING'], CLOSED: ['CLOSED'] }
  for (const n of path[s]) l.to(n)
  return l
}

t.test('every move: allowed ones change the state, the others throw and change nothing', async tt => {
  for (const from of STATES) {
    for (const to of STATES) {
      const l = at(from)
      if (ALLOWED.has(`${from}>${to}`)) {
        l.to(to)
        tt.equal(l.state, to, `${from} -> ${to}`)
      } else {
        tt.throws(() => l.to(to), new RegExp(`no move from ${from} to ${to}`), `${from} -> ${to} is refused`)
        tt.equal(l.state, from, `and the state stays ${from}`)
      }
    }
  }
})

t.test('closed resolves when CLOSED is reached, not before', async tt => {
  const l = new Lifecycle()
  let done = false
  void l.closed.then(() => { done = true })
  l.to('MOUNTED'); l.to('UNMOUNTING'); l.to('MOUNTED'); l.to('UNMOUNTING')
  await new Promise(resolve => setImmediate(resolve))
  tt.notOk(done, 'an unmount that went back to MOUNTED did not close it')
  l.to('CLOSED')
  await l.closed
  tt.ok(done && l.is('CLOSED'), 'closed after CLOSED')
})
