/**
 * The agent-side speed targets of issue 3, over the protocol on loopback from
 * a connected client (no CLI start-up): a mark carrying a 100 KiB context
 * (target: median under 2 ms) and listing 80 candidates (target: under 10 ms),
 * in both encodings. The peer is the same mark without a context, measured in
 * the same run, so the context's own cost shows as a difference.
 *
 * Run: node dist/bench/agent.js   (BENCH_REPS to change the repetitions, default 50)
 */
import { Cleanup, mountRewind, median, now, fmt, table, machine } from './lib.js'
import { RewindClient } from '../client/client.js'

const REPS = Number(process.env.BENCH_REPS ?? 50)

/** A context of about `bytes` bytes: chat messages as an agent would keep them. */
function context (bytes: number, seed: number): unknown {
  const messages: Array<{ role: string, content: string }> = []
  let size = 0
  for (let i = 0; size < bytes; i++) {
    const content = `step ${seed}.${i}: ` + 'the tool printed a long log line with paths and numbers 0123456789 '.repeat(8)
    messages.push({ role: i % 2 === 0 ? 'assistant' : 'tool', content })
    size += content.length + 30
  }
  return { run: 'bench', messages }
}

async function timeIt (n: number, fn: (i: number) => Promise<unknown>): Promise<number[]> {
  const out: number[] = []
  for (let i = 0; i < n; i++) { const t0 = now(); await fn(i); out.push(now() - t0) }
  return out
}

async function main (): Promise<void> {
  const cleanup = new Cleanup()
  try {
    const m = await mountRewind(cleanup, 'agent', dir => { void dir })
    const rows: string[][] = []
    for (const encoding of ['msgpack', 'json'] as const) {
      const c = await RewindClient.connect({ storeDir: m.store, encoding })
      cleanup.push('client', async () => await c.close())
      await timeIt(5, async i => await c.mark({ context: context(100 * 1024, -i) })) // warm up
      const plain = await timeIt(REPS, async () => await c.mark({}))
      const withCtx = await timeIt(REPS, async i => await c.mark({ label: `step ${i}`, context: context(100 * 1024, i), meta: { tools: [{ name: 'bash', exit: 0 }] } }))
      const cands = await timeIt(REPS, async () => await c.candidates({ limit: 80 }))
      const n = (await c.candidates({ limit: 80 })).length
      rows.push([encoding, fmt(median(plain), 2), fmt(median(withCtx), 2), fmt(median(withCtx) - median(plain), 2), fmt(median(cands), 2), String(n)])
      await c.close()
    }
    console.log(`agent operations over the protocol, median of ${REPS} (ms), ${machine()}`)
    console.log(table(['encoding', 'mark, no context', 'mark, 100 KiB context', 'context cost', 'candidates (80)', 'candidates returned'], rows))
    const worst = rows.map(r => [Number(r[2]), Number(r[4])])
    const markOk = worst.every(w => w[0] < 2)
    const candOk = worst.every(w => w[1] < 10)
    console.log(`targets: mark with a 100 KiB context < 2 ms: ${markOk ? 'MET' : 'NOT MET'}; 80 candidates < 10 ms: ${candOk ? 'MET' : 'NOT MET'}`)
  } finally {
    await cleanup.run()
  }
}

await main()
