/**
 * The value model (proto/values.ts, PROTOCOL.md "Values"): what a context,
 * meta and memory entry may hold, what comes back in each encoding, what is
 * refused; and contexts stored by the version before the model (frozen
 * records under test/fixtures/values/) read back under it through a real
 * server in both encodings.
 */
import t, { type Test } from 'tap'
import { createHash } from 'node:crypto'
import { readFileSync } from 'node:fs'
import * as path from 'node:path'
import { fileURLToPath } from 'node:url'
import { Packr } from 'msgpackr'
import { WebSocket } from 'ws'
import { codec } from '../../proto/codec.js'
import { ProtoError } from '../../proto/errors.js'
import { validateRequest } from '../../proto/validate.js'
import { MAX_VALUE_DEPTH, toMsgpackValue } from '../../proto/values.js'
import { startServer } from '../../daemon/server.js'
import type { RewindApi } from '../../daemon/api.js'
import { packr as storePackr } from '../../store/db.js'

const here = path.dirname(fileURLToPath(import.meta.url))
const fixtures = path.join(here, '..', '..', '..', 'test', 'fixtures', 'values')
/** A plain msgpack writer, as another language's client would use (bigint → int64/uint64). */
const client = new Packr({ useRecords: false })
const hex = (b: Uint8Array): string => Buffer.from(b).toString('hex')

function decodeRequest (frame: Uint8Array | string): any {
  return validateRequest(codec.decode(frame, typeof frame !== 'string').msg)
}

function refused (t: Test, frame: Uint8Array | string, field: string, what: RegExp): void {
  try {
    decodeRequest(frame)
    t.fail(`accepted ${typeof frame === 'string' ? frame.slice(0, 80) : hex(frame).slice(0, 80)}`)
  } catch (e) {
    t.ok(e instanceof ProtoError, 'ProtoError')
    t.equal((e as ProtoError).code, 'E_BAD_REQUEST')
    t.equal(((e as ProtoError).details as { field?: string }).field, field, `details.field ${field}`)
    t.match((e as ProtoError).message, what)
    t.equal((e as ProtoError).id, 9, 'the error carries the request id')
  }
}

t.test('integers: exact in both encodings, msgpack ints on the wire', async t => {
  const ints = [0, 1, -1, 2 ** 31, -(2 ** 31) - 1, 2 ** 32, 1764612000000, 2 ** 53 - 1, -(2 ** 53 - 1), 2n ** 53n, 2n ** 63n, 2n ** 64n - 1n, -(2n ** 63n)]
  // in over msgpack (as Python's msgpack writes them), out over both encodings
  const req = decodeRequest(client.pack({ v: 1, id: 1, op: 'mark', context: { ints } }))
  const back = codec.decode(codec.encode({ id: 1, ok: req.context }, 'msgpack'), true).msg as any
  t.same(back.ok.ints.map(String), ints.map(String), 'msgpack → msgpack exact')
  const text = codec.encode({ id: 1, ok: req.context }, 'json') as string
  t.equal(text, `{"id":1,"ok":{"ints":[${ints.map(String).join(',')}]}}`, 'JSON numbers with all their digits')
  const viaJson = codec.decode(text, false).msg as any
  t.same(viaJson.ok.ints.map(String), ints.map(String), 'JSON → exact values (bigint beyond 2^53)')
  t.equal(typeof viaJson.ok.ints[12], 'bigint')
  t.equal(typeof viaJson.ok.ints[6], 'number', 'safe integers are numbers')
  // in over JSON, out over msgpack
  const fromJson = decodeRequest(`{"v":1,"id":2,"op":"mark","context":[18446744073709551615,-9223372036854775808,9007199254740993,1e2,1.0,-0]}`)
  t.same(fromJson.context.map(String), ['18446744073709551615', '-9223372036854775808', '9007199254740993', '100', '1', '0'])
  const mp = codec.encode({ id: 2, ok: fromJson.context }, 'msgpack') as Uint8Array
  t.match(hex(mp), /cfffffffffffffffff/, 'uint64 on the wire')
  t.match(hex(mp), /d38000000000000000/, 'int64 on the wire')
  // times: integers, never float64 (issue 14 4b)
  const info = codec.encode({ id: 3, ok: { time: 1764612000000, ended: 1764612000001, ms: 1.5 } }, 'msgpack') as Uint8Array
  t.notMatch(hex(info), /cb4279/, 'time is not a float64')
  t.match(hex(info), /d30000019adb124900/, 'time is an int64')
  t.match(hex(info), /cb3ff8/, 'a fractional ms stays a float64')
  // an integral float64 beyond 2^53 is the integer it equals
  const f = decodeRequest(client.pack({ v: 1, id: 4, op: 'mark', context: 2 ** 60 }))
  t.equal(codec.encode({ id: 4, ok: f.context }, 'json'), `{"id":4,"ok":${2n ** 60n}}`)
  // a literal out of int64/uint64 range is a float64
  t.equal(decodeRequest('{"v":1,"id":5,"op":"mark","context":18446744073709551616}').context, 2 ** 64)
  // a long digit run inside a string is left alone
  t.equal(decodeRequest('{"v":1,"id":6,"op":"mark","context":"12345678901234567890"}').context, '12345678901234567890')
})

t.test('bytes: bin in msgpack, base64 named by `bytes` in JSON, both ways', async t => {
  const ctx = { img: new Uint8Array([1, 2, 3]), list: [new Uint8Array([]), 'x', { 'a/b~': new Uint8Array([255]) }] }
  const req = decodeRequest(client.pack({ v: 1, id: 1, op: 'mark', context: ctx }))
  const text = codec.encode({ id: 1, ok: req.context }, 'json') as string
  const j = JSON.parse(text)
  t.same(j.bytes, ['/ok/img', '/ok/list/0', '/ok/list/2/a~1b~0'], 'JSON Pointers from the message root')
  t.equal(j.ok.img, 'AQID')
  t.notMatch(text, /Buffer/, 'not {"type":"Buffer"}')
  const back = codec.decode(text, false).msg as any
  t.ok(back.ok.img instanceof Uint8Array)
  t.same([...back.ok.list[2]['a/b~']], [255])
  t.notOk('bytes' in back, 'the bytes field is consumed')
  // a JSON client can send bytes the same way
  const fromJson = decodeRequest('{"v":1,"id":2,"op":"mark","context":{"k":"/w=="},"bytes":["/context/k"]}')
  t.same([...fromJson.context.k], [255])
  const mp = codec.encode({ id: 2, ok: fromJson.context }, 'msgpack') as Uint8Array
  t.match(hex(mp), /c401ff/, 'bin in msgpack')
  // the client's encoder writes the same form
  const sent = codec.encode({ v: 1, id: 3, op: 'mark', context: { k: new Uint8Array([7]) } }, 'json') as string
  t.same(JSON.parse(sent).bytes, ['/context/k'])
  t.same([...decodeRequest(sent).context.k], [7])
})

t.test('what JSON preserves: stated, and tested', async t => {
  const r = decodeRequest('{"v":1,"id":1,"op":"mark","context":{"b":1.0,"10":"x","a":-0,"2":"y","d":1,"d":2,"e":0.1,"f":1.5e3,"s":"\\u0041\\ud83d\\ude00","__proto__":{"p":1}}}')
  const out = codec.encode({ id: 1, ok: r.context }, 'json')
  t.equal(out, '{"id":1,"ok":{"2":"y","10":"x","b":1,"a":0,"d":2,"e":0.1,"f":1500,"s":"A😀","__proto__":{"p":1}}}',
    'array-index keys first, then insertion order; 1.0 → 1; -0 → 0; last duplicate wins; escapes decoded; __proto__ stays a key')
  const mp = codec.decode(codec.encode({ id: 1, ok: r.context }, 'msgpack'), true).msg as any
  t.same(Object.keys(mp.ok), ['2', '10', 'b', 'a', 'd', 'e', 'f', 's', '__proto__'], 'the same order in msgpack')
  t.ok(Object.prototype.hasOwnProperty.call(mp.ok, '__proto__'), '__proto__ is an own key after msgpack')
  t.equal(Object.getPrototypeOf(mp.ok), Object.prototype, 'and no prototype was set')
})

t.test('refused values: E_BAD_REQUEST with details.field, for context, meta and entry', async t => {
  const mark = (context: unknown): Uint8Array => client.pack({ v: 1, id: 9, op: 'mark', context })
  refused(t, mark({ x: NaN }), 'context', /not finite/)
  refused(t, mark([Infinity]), 'context', /not finite/)
  refused(t, mark({ when: new Date(0) }), 'context', /timestamp/)
  refused(t, mark([undefined]), 'context', /undefined/)
  refused(t, client.pack({ v: 1, id: 9, op: 'mark', meta: new Map<unknown, unknown>([[1, 'one']]) }), 'meta', /map key must be a string/)
  refused(t, client.pack({ v: 1, id: 9, op: 'memory_add', run: 'r', entry: { x: NaN } }), 'entry', /not finite/)
  refused(t, '{"v":1,"id":9,"op":"mark","context":"\\ud800"}', 'context', /lone surrogate/)
  refused(t, `{"v":1,"id":9,"op":"mark","context":${'['.repeat(MAX_VALUE_DEPTH + 1)}${']'.repeat(MAX_VALUE_DEPTH + 1)}}`, 'context', /nesting deeper/)
  t.doesNotThrow(() => decodeRequest(`{"v":1,"id":9,"op":"mark","context":${'['.repeat(MAX_VALUE_DEPTH)}${']'.repeat(MAX_VALUE_DEPTH)}}`), `${MAX_VALUE_DEPTH} deep is accepted`)
  refused(t, '{"v":1,"id":9,"op":"mark","context":{"k":"!!"},"bytes":["/context/k"]}', 'bytes', /not base64/)
  refused(t, '{"v":1,"id":9,"op":"mark","context":{"k":1},"bytes":["/context/k"]}', 'bytes', /not a base64 string/)
  refused(t, '{"v":1,"id":9,"op":"mark","context":{},"bytes":["/context/nope"]}', 'bytes', /nothing at/)
  refused(t, '{"v":1,"id":9,"op":"mark","bytes":"x"}', 'bytes', /array of JSON Pointers/)
})

/** The frozen records, and what they must read back as. */
const ctxRecord = readFileSync(path.join(fixtures, 'context-record.msgpack'))
const memRecord = readFileSync(path.join(fixtures, 'memory-record.msgpack'))

t.test('contexts and memory stored before the value model read back under it (frozen records)', async t => {
  // frozen: written by commit 047e107's codec and store (README in the fixture directory); never regenerate
  t.equal(createHash('sha256').update(ctxRecord).digest('hex'), '4f7dcd06879e86d08a33a08d24fb1b3231cc5df91bb03503ca1ef25a2da36700', 'context record unchanged')
  t.equal(createHash('sha256').update(memRecord).digest('hex'), '1f4adc969a1479a94577150ac5d1da9f79798d45bd1883072977f8a03dba2f98', 'memory record unchanged')
  t.match(hex(ctxRecord), /cfffffffffffffffff/, 'the record holds a uint64, as the old version stored it')
  t.match(hex(ctxRecord), /cb4279adb124900000/, 'and a time as float64')
  const stored = storePackr.unpack(ctxRecord) as { v: unknown }
  const mem = storePackr.unpack(memRecord) as { time: number; entry: Record<string, unknown> }
  const api = {
    context: async () => stored.v,
    memoryGet: async () => ({ entries: [mem.entry] }),
  } as unknown as RewindApi
  const token = 'cd'.repeat(32)
  const server = await startServer({ api, token })
  t.teardown(() => server.close())
  const ws = new WebSocket(`ws://127.0.0.1:${server.port}/`, { headers: { Authorization: `Bearer ${token}` } })
  await new Promise<void>((resolve, reject) => { ws.once('open', () => resolve()); ws.once('error', reject) })
  t.teardown(() => ws.close())
  const ask = (frame: Uint8Array | string): Promise<{ data: Buffer; isBinary: boolean }> => new Promise(resolve => {
    ws.once('message', (data: Buffer, isBinary: boolean) => resolve({ data, isBinary }))
    ws.send(frame, { binary: typeof frame !== 'string' })
  })
  const json = (await ask('{"v":1,"id":1,"op":"context","checkpoint":1}')).data.toString()
  t.equal(json, '{"id":1,"ok":{"2":"two","10":"ten","big":4294967296,"max":18446744073709551615,"min":-9223372036854775808,' +
    '"safe":9007199254740991,"time":1764612000000,"half":0.5,"one":1,"blob":"AQID","nested":[{"b":"/w=="}],"s":"hé","n":null,"t":true,"a":"a"},' +
    '"bytes":["/ok/blob","/ok/nested/0/b"]}', 'JSON: exact integers, bytes named, no E_INTERNAL')
  const mp = await ask(client.pack({ v: 1, id: 2, op: 'context', checkpoint: 1 }))
  t.ok(mp.isBinary)
  const h = hex(mp.data)
  t.match(h, /a474696d65d30000019adb124900/, 'msgpack: time as int64')
  t.match(h, /a36d6178cfffffffffffffffff/, 'msgpack: uint64 as stored')
  t.match(h, /a4626c6f62c403010203/, 'msgpack: bin as stored')
  const memJson = (await ask('{"v":1,"id":3,"op":"memory_get","run":"r"}')).data.toString()
  t.equal(memJson, '{"id":3,"ok":{"entries":[{"count":1099511627776,"blob":"CQ=="}]},"bytes":["/ok/entries/0/blob"]}')
})

t.test('msgpack preparation keeps a __proto__ key a key when it widens an integer under it', async t => {
  const x = JSON.parse('{"__proto__": 5000000000, "n": [1, 6000000000]}') as Record<string, unknown>
  const y = toMsgpackValue(x) as Record<string, unknown>
  t.not(y, x, 'a copy: the input is left as it was')
  t.equal(Object.getPrototypeOf(y), Object.prototype, 'the prototype is not replaced')
  t.same(Object.keys(y), ['__proto__', 'n'])
  t.equal(Object.getOwnPropertyDescriptor(y, '__proto__')?.value, 5000000000n, 'own key, widened to an int64')
  t.same(y.n, [1, 6000000000n])
  t.equal(Object.getOwnPropertyDescriptor(x, '__proto__')?.value, 5000000000, 'the input keeps its number')
  const z = { a: [1, 'x', { b: 2 }] }
  t.equal(toMsgpackValue(z), z, 'nothing to widen: the same object back')
})
