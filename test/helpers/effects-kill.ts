/**
 * Child of effects-ledger.test: opens the ledger of the store in argv[2],
 * registers a tool, begins an effect, prints its occurrence id once the
 * begin resolved (the intent is durable) and kills itself with SIGKILL
 * before completing it.
 */
import { Ledger } from '../../effects/ledger.js'

const l = await Ledger.open(process.argv[2])
await l.register({ tool: 'ticket', class: 'compensable' })
const b = await l.begin({ tool: 'ticket', target: 'http://t', identity: 'k' })
process.stdout.write(`${b.occurrence}\n`, () => process.kill(process.pid, 'SIGKILL'))
