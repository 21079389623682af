/**
 * `rewindfs mcp`: the MCP server of a mounted workspace over stdio
 * (mcp/server.ts). stdout carries MCP messages only: console.log is sent to
 * stderr for the life of the process, and so are this command's own lines.
 */
import type { Command } from 'commander'
import { RewindClient } from '../../client/client.js'
import { SERVER_NAME } from '../../daemon/server.js'
import { route, workspaceOption, workspaceArgument, workspaceFrom } from '../locate.js'

/** The default rewind memory run of a workspace: "mcp " and its path ('!' and control characters replaced; at most 200 characters, the proto's bound). */
export function defaultMcpRun (workspace: string): string {
  return ('mcp ' + workspace).replace(/[\u0000-\u001f\u007f!]/g, '_').slice(0, 200)
}

/** Adds `mcp` to the CLI. */
export function registerMcp (p: Command): void {
  p.command('mcp')
    .addArgument(workspaceArgument())
    .addOption(workspaceOption())
    .option('--run <name>', 'rewind memory run used by backtrack_commit and memory (default: "mcp " and the workspace path, so memory lasts across sessions)')
    .description('Serve the workspace\'s checkpoint and rewind tools to an agent over MCP (stdio): checkpoint, backtrack_candidates, list_checkpoints, diff, show_file, restore, backtrack_commit, memory, status.')
    .addHelpText('after', '\nThe harness starts it; for example:\n  claude mcp add rewindfs -- rewindfs mcp -w ~/project\n(README "Agent harnesses" has the lines for Codex and Cursor.)')
    .action(async (dir: string | undefined, opts: { workspace?: string, run?: string }) => {
      const o = workspaceFrom(dir, opts)
      console.log = console.error // stdout belongs to MCP
      // loaded here, not at the top: every other command would pay for the SDK and zod at start-up
      const { StdioServerTransport } = await import('@modelcontextprotocol/sdk/server/stdio.js')
      const { createMcpServer } = await import('../../mcp/server.js')
      // the daemon as every client finds it (cli/locate.ts route: this user's registry, else discovery, so a mount made through sudo serves its user)
      const { workspace } = await route(o)
      const run = o.run ?? defaultMcpRun(workspace)
      if (run.length === 0 || run.length > 200 || /[\u0000-\u001f\u007f!]/.test(run)) throw new Error(`--run "${run}" is not a run name: 1..200 characters, no control characters and no '!'`)
      let client: RewindClient | null = null
      const server = createMcpServer({
        workspace, run, version: SERVER_NAME.split('/')[1] ?? '0.0.0',
        client: async () => {
          if (client) return client
          // looked up again at each call until connected: the workspace may be mounted after the harness started
          let r
          try { r = await route({ workspace }) } catch (e: any) { throw new Error(`cannot find the rewindfs daemon of ${workspace} (${e.message})`) }
          if (!r.running) throw new Error(`the workspace ${workspace} is not mounted: ask the user to run rewindfs mount ${workspace}`)
          try { client = await RewindClient.connect({ ...r.connect, timeoutMs: 120000 }) } catch (e: any) {
            throw new Error(`cannot reach the rewindfs daemon of ${workspace} (${e.message}): ask the user to run rewindfs mount ${workspace}`)
          }
          return client
        },
      })
      const transport = new StdioServerTransport()
      const closed = new Promise<void>(resolve => { transport.onclose = () => resolve() })
      process.stdin.on('end', () => { void server.close() })
      await server.connect(transport)
      process.stderr.write(`rewindfs mcp: serving ${workspace} (run ${JSON.stringify(run)})\n`)
      await closed
      await (client as RewindClient | null)?.close().catch(() => {})
    })
}
