/** The `bisect --good A --bad B -- CMD` command: the first checkpoint at which CMD fails. */
import { parseId } from '../parse.js'
import { fmtMs, showPath } from '../output.js'
import { withClient, workspaceOption } from '../locate.js'
import { CHANGE_LETTER } from '../workspace-path.js'
import { CliError } from '../errors.js'
import { bisect, lineageBetween, probeInExport } from '../../client/bisect.js'
import { isSegmentMeta, summarizeSegment } from '../../client/segment.js'
import type { Command } from 'commander'

/** Adds `bisect` to the program `p`. */
export function registerBisect (p: Command): void {
  p.command('bisect').addOption(workspaceOption()).argument('<cmd...>', 'the check and its arguments (after --); exit status 0 passes')
    .description('Find the first checkpoint on the lineage from --good to --bad at which CMD fails, by binary search. CMD runs in a scratch export of each probed checkpoint (a temporary directory, removed after), never in the workspace; then the segment that ends there is printed: its tool calls and changed files.')
    .requiredOption('--good <id>', 'a checkpoint where CMD passes')
    .requiredOption('--bad <id>', 'a later checkpoint where CMD fails (its lineage is searched)')
    .option('--quiet', 'discard CMD\'s output (default: on stderr)')
    .option('--json', 'print JSON')
    .addHelpText('after', '\nProbes: 2 + ceil(log2(checkpoints between)) at most; each exports the whole checkpoint.\n\nExample:\n  rewindfs bisect --good 3 --bad 12 -- npm test')
    .action(async (cmd: string[], o: { workspace?: string, good: string, bad: string, quiet?: boolean, json?: boolean }) => {
      const good = parseId(o.good); const bad = parseId(o.bad)
      await withClient(o, async c => {
        const log = await c.log({ limit: 100000 })
        let line: number[]
        try { line = lineageBetween(log, good, bad) } catch (e) { throw new CliError((e as Error).message) }
        let r
        try {
          r = await bisect(line, async id => {
            const pr = await probeInExport(c, id, cmd, o.quiet === true)
            if (!o.json) console.error(`rewindfs: #${id} ${pr.fails ? `fails (exit ${pr.exitStatus})` : 'passes'} (${fmtMs(pr.ms)})`)
            return pr
          })
        } catch (e) { throw new CliError((e as Error).message) }
        const changes = await c.diff({ a: r.lastGood, b: r.firstBad })
        const cand = (await c.candidates({})).find(x => x.id === r.firstBad)
        const meta = cand?.meta ?? null
        if (o.json) { console.log(JSON.stringify({ ...r, changes, meta, calls: cand?.calls ?? null })); return }
        const info = log.find(x => x.id === r.firstBad)
        console.log(`first failing checkpoint: #${r.firstBad}${info?.label ? ` (${info.label})` : ''}; the last passing one is #${r.lastGood} (${r.probes.length} probes over ${line.length} checkpoints)`)
        if (isSegmentMeta(meta)) {
          console.log(`segment: ${summarizeSegment(meta)}`)
          for (const t of meta.tools) console.log(`  tool ${t.name} ${t.args} -> ${t.exitStatus}`)
        } else if (meta !== null) console.log(`segment metadata: ${JSON.stringify(meta).slice(0, 400)}`)
        else console.log(cand ? 'segment metadata: none' : 'segment metadata: not on the current lineage\'s newest 80 (rewindfs log)')
        if (cand?.calls !== undefined) {
          console.log('tool calls of that segment and what each changed (the daemon\'s attribution):')
          for (const c of cand.calls.calls) {
            console.log(`  ${c.call === null ? 'no tool call' : `call ${c.call}: ${c.tool} ${c.args} -> ${c.exitStatus ?? (c.open ? 'running' : '?')}`}: +${c.totals.created} ~${c.totals.modified} -${c.totals.deleted}`)
            for (const f of c.created) console.log(`    A /${f.path}`)
            for (const f of c.modified) console.log(`    M /${f.path}`)
            for (const f of c.deleted) console.log(`    D /${f.path}`)
          }
        }
        console.log(`changed in that segment (diff ${r.lastGood} ${r.firstBad}):`)
        for (const e of changes) console.log(`  ${CHANGE_LETTER[e.change]} ${showPath(e.path)}`)
        console.log(`undo it: rewindfs undo ${r.firstBad} --dry-run`)
      })
    })
}
