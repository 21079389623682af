/**
 * The conformance vectors (proto/vectors/v1.json) through the TypeScript
 * client against a real daemon, in JSON text frames and msgpack binary
 * frames; the client finds the daemon from the workspace path. Every request
 * that must succeed and every reply is also validated against the generated
 * JSON Schema (proto/schema/protocol.schema.json). The Python package runs
 * the same vectors (test/client/python-client.test.ts).
 */
import t from 'tap'
import fs from 'node:fs'
import path from 'node:path'
import { Ajv } from 'ajv'
import { mountWorkspace } from '../helpers/mount.js'
import { expand, loadVectors, mismatch } from '../helpers/vectors.js'
import { RewindClient, RewindError } from '../../client/client.js'
import { codec } from '../../proto/codec.js'
import type { Encoding, Op } from '../../proto/messages.js'
import { ROOT, SCHEMA_FILE } from '../../scripts/generate.js'

const schema = JSON.parse(fs.readFileSync(path.join(ROOT, SCHEMA_FILE), 'utf8'))
const ajv = new Ajv({ strict: false, allErrors: true })
ajv.addSchema(schema, 'protocol')

/** Null when `msg` (as the JSON encoding writes it) is valid as definition `def`, else ajv's errors. */
function invalid (def: string, msg: unknown): string | null {
  const wire = JSON.parse(codec.encode(msg, 'json') as string)
  const validate = ajv.getSchema(`protocol#/definitions/${def}`)
  if (validate === undefined) return `no definition ${def} in the schema`
  return validate(wire) ? null : ajv.errorsText(validate.errors)
}

t.test('conformance vectors through the TypeScript client', async t => {
  const m = await mountWorkspace(t, dir => { fs.writeFileSync(path.join(dir, 'vectors.txt'), 'hello\n') })
  const before = process.env.REWINDFS_RUNTIME_DIR
  process.env.REWINDFS_RUNTIME_DIR = m.runtime
  t.teardown(() => { if (before === undefined) delete process.env.REWINDFS_RUNTIME_DIR; else process.env.REWINDFS_RUNTIME_DIR = before })
  const { vectors, variables } = loadVectors()
  t.ok(vectors.length >= 30, `${vectors.length} vectors`)
  for (const encoding of ['json', 'msgpack'] as Encoding[]) {
    await t.test(encoding, async t => {
      const c = await RewindClient.connect({ workspace: path.join(m.dir, 'below'), encoding, timeoutMs: 60000 })
      t.teardown(() => c.close())
      const vars: Record<string, unknown> = { ...variables, run: `conformance-ts-${encoding}` }
      for (const v of vectors) {
        const { op, ...args } = expand(v.request, vars) as { op: string } & Record<string, unknown>
        let ok: unknown
        let err: RewindError | null = null
        try {
          ok = await c.call(op as Op, args as never)
        } catch (e) {
          if (!(e instanceof RewindError)) throw e
          err = e
        }
        if (v.error !== undefined) {
          t.equal(err?.code, v.error.code, `${v.name}: ${v.error.code}${err === null ? ` (got ok ${JSON.stringify(ok, (_k, x) => typeof x === 'bigint' ? String(x) : x)})` : ''}`)
          if (v.error.details !== undefined) t.equal(mismatch(v.error.details, err?.details, vars), null, `${v.name}: details`)
          if (err !== null) t.equal(invalid('ErrorReply', { id: 1, error: { code: err.code, message: err.message, ...(err.details === undefined ? {} : { details: err.details }) } }), null, `${v.name}: the error reply fits the schema`)
          continue
        }
        t.equal(err, null, `${v.name}: no error${err !== null ? ` (got ${err.code}: ${err.message})` : ''}`)
        t.equal(mismatch(v.ok, ok, vars), null, v.name)
        t.equal(invalid(`Request_${op}`, { ...args, v: 1, id: 1, op }), null, `${v.name}: the request fits the schema`)
        t.equal(invalid(`Reply_${op}`, { id: 1, ok }), null, `${v.name}: the reply fits the schema`)
        if (v.save !== undefined) vars[v.save] = ok
      }
    })
  }
})
