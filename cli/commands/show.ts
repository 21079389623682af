/** The `show ID` command: a file (or a directory listing) at a checkpoint. */
import path from 'node:path'
import { parseId } from '../parse.js'
import { missingAt, showPath } from '../output.js'
import { CliError } from '../errors.js'
import { withClient, workspaceOption } from '../locate.js'
import type { Command } from 'commander'

/** Adds `show` to the program `p`. */
export function registerShow (p: Command): void {
  p.command('show').addOption(workspaceOption()).argument('<ref>', 'ID:PATH, a file at a checkpoint')
    .description('Print a file (or list a directory) as it was at a checkpoint.')
    .addHelpText('after', '\nExample:\n  rewindfs show 3:src/index.js')
    .action(async (ref: string, o: { workspace?: string }) => {
      const i = ref.indexOf(':')
      if (i < 0) throw new CliError(`"${ref}" is not ID:PATH (for example 3:src/index.js)`)
      const id = parseId(ref.slice(0, i))
      const p0 = ref.slice(i + 1).replace(/^\/+/, '')
      await withClient(o, async c => {
        const st = await c.stat({ id, path: p0 })
        if (!st) throw new CliError(await missingAt(c, id, p0))
        if (st.type === 'dir') { for (const e of await c.readdir({ id, path: p0 })) console.log(`${showPath(e.path.split('/').pop() ?? '')}${e.type === 'dir' ? '/' : ''}`); return }
        if (st.type === 'symlink') { console.log(`-> ${st.target}`); return }
        for (let off = 0; off < st.size;) {
          const b = await c.read({ id, path: p0, offset: off, length: 4 * 1024 * 1024 })
          if (b.length === 0) break
          process.stdout.write(b)
          off += b.length
        }
      })
    })
}
