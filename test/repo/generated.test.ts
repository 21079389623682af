/**
 * Generated files are up to date with their one definition
 * (scripts/generate.ts): the protocol's JSON Schema from proto/messages.ts,
 * the Python package's backtrack tools from client/tools.ts and its protocol
 * constants (constants.py) from proto/. And the
 * vectors' matcher (test/helpers/vectors.ts) can fail.
 */
import t from 'tap'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { ROOT, generatedFiles, protocolSchema, staleFiles } from '../../scripts/generate.js'
import { OPS } from '../../proto/messages.js'
import { mismatch } from '../helpers/vectors.js'

t.test('generated files are committed up to date', async t => {
  t.same(staleFiles(), [], 'none stale (if this fails: npm run generate, and commit the result)')
  t.equal(generatedFiles().size, 3)
})

t.test('the schema has a request and a reply for every operation', async t => {
  const s = protocolSchema()
  const defs = s.definitions ?? {}
  for (const op of OPS) {
    t.ok(defs[`Request_${op}`], `Request_${op}`)
    t.ok(defs[`Reply_${op}`], `Reply_${op}`)
  }
  t.ok(defs.ErrorReply && defs.CheckpointEvent && defs.RestoreEvent, 'error reply and events')
  const mark = defs.Request_mark as { properties: Record<string, unknown>; required: string[]; additionalProperties: boolean }
  t.same(mark.required, ['v', 'id', 'op'], 'mark: only the envelope is required')
  t.equal(mark.additionalProperties, false, 'any other field is refused')
  t.same(defs.CheckpointId, { type: 'integer', minimum: 1, description: 'Identifier of a checkpoint: a positive safe integer, increasing in creation order.' })
})

t.test('a new operation needs only OpArgs, OpResults and OPS (on a copy of proto/)', async t => {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'rewindfs-gen-'))
  t.teardown(() => fs.rmSync(tmp, { recursive: true, force: true }))
  fs.cpSync(path.join(ROOT, 'proto'), path.join(tmp, 'proto'), { recursive: true, filter: f => !f.includes('/schema') && !f.includes('/vectors') })
  fs.copyFileSync(path.join(ROOT, 'tsconfig.base.json'), path.join(tmp, 'tsconfig.base.json'))
  const file = path.join(tmp, 'proto/messages.ts')
  let src = fs.readFileSync(file, 'utf8')
  const edits: Array<[RegExp, string]> = [
    [/export interface OpArgs \{\n/, '$&  frob: { target: CheckpointId; note?: string }\n'],
    [/export interface OpResults \{\n/, '$&  frob: { frobbed: Integer }\n'],
    [/export const OPS = \[/, "$&'frob', "],
  ]
  for (const [re, to] of edits) { t.match(src, re); src = src.replace(re, to) }
  fs.writeFileSync(file, src)
  const defs = protocolSchema(tmp).definitions ?? {}
  t.same(defs.Request_frob, {
    type: 'object',
    description: 'A request of frob (PROTOCOL.md §4)',
    properties: {
      v: { $ref: '#/definitions/Integer' }, id: { $ref: '#/definitions/RequestId' }, op: { type: 'string', const: 'frob' },
      note: { anyOf: [{ type: 'string' }, { type: 'null' }] }, target: { $ref: '#/definitions/CheckpointId' },
      bytes: (defs.Request_status as { properties: { bytes: unknown } }).properties.bytes,
    },
    required: ['v', 'id', 'op', 'target'],
    additionalProperties: false,
  }, 'its request')
  t.match(defs.Reply_frob, { properties: { ok: { properties: { frobbed: { $ref: '#/definitions/Integer' } }, required: ['frobbed'] } } }, 'its reply')
})

t.test('the vectors matcher', async t => {
  t.equal(mismatch({ a: 1 }, { a: 1 }, {}), null)
  t.not(mismatch({ a: 1 }, { a: 2 }, {}), null, 'another number')
  t.not(mismatch({ a: 1 }, { a: 1, b: 2 }, {}), null, 'an extra key')
  t.equal(mismatch({ $partial: true, a: 1 }, { a: 1, b: 2 }, {}), null, '$partial allows extra keys')
  t.equal(mismatch({ $int: '18446744073709551615' }, 18446744073709551615n, {}), null)
  t.not(mismatch({ $int: '18446744073709551615' }, 18446744073709551616, {}), null, 'a float64 near 2^64 is not 2^64-1')
  t.not(mismatch({ $type: 'integer' }, 1.5, {}), null)
  t.not(mismatch({ $bytes: 'AQID' }, new Uint8Array([1, 2, 4]), {}), null)
  t.not(mismatch([1, 2], [1], {}), null)
  t.equal(mismatch({ $var: 'x.id' }, 7, { x: { id: 7 } }), null)
})
