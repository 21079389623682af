/**
 * The arguments of each operation as the TypeScript api takes them: the
 * daemon's RewindApi (daemon/api.ts) and the client's RewindClient
 * (client/client.ts). Derived from the wire's OpArgs (messages.ts), never
 * restated: a field added to OpArgs reaches both. Kept out of messages.ts,
 * whose exported types are the JSON Schema (scripts/generate.ts).
 */
import type { Op, OpArgs, RequestId } from './messages.js'

/**
 * OpArgs[O] with the checkpoint argument named `id` instead of
 * `checkpoint` (on the wire `id` is the request id: restore, stat,
 * readdir, read, context, export, pin, undo). Optional fields stay optional.
 */
export type ApiArgs<O extends Op> = { [K in keyof OpArgs[O] as K extends 'checkpoint' ? 'id' : K]: OpArgs[O][K] }

/**
 * The wire form of api arguments `args`: `id` renamed `checkpoint`,
 * undefined fields left out, the others as they are.
 */
export function wireArgs<O extends Op> (args: ApiArgs<O>): OpArgs[O] {
  const out: Record<string, unknown> = {}
  for (const [k, v] of Object.entries(args as Record<string, unknown>)) if (v !== undefined) out[k === 'id' ? 'checkpoint' : k] = v
  return out as OpArgs[O]
}

/**
 * The api arguments of validated request `req` (proto/validate.ts): its
 * fields besides v, id and op, `checkpoint` renamed `id`, undefined fields
 * left out. The inverse of wireArgs; the server's dispatch (daemon/server.ts).
 */
export function apiArgs<O extends Op> (req: { v: number, id: RequestId, op: O } & OpArgs[O]): ApiArgs<O> {
  const out: Record<string, unknown> = {}
  for (const [k, v] of Object.entries(req)) {
    if (v === undefined || k === 'v' || k === 'id' || k === 'op') continue
    out[k === 'checkpoint' ? 'id' : k] = v
  }
  return out as ApiArgs<O>
}
