/**
 * Files generated from one definition, committed, and checked by the suite
 * to be up to date (test/repo/generated.test.ts):
 *
 * - proto/schema/protocol.schema.json: a JSON Schema (draft-07) of every
 *   wire message, generated from the TypeScript types of proto/messages.ts
 *   (OpArgs, OpResults, the result and event types) and proto/errors.ts by
 *   ts-json-schema-generator, then composed per operation: `Request_<op>`
 *   (v, id, op and exactly the op's fields; an optional field may be null),
 *   `Reply_<op>` (id and ok), `ErrorReply`, `CheckpointEvent`,
 *   `RestoreEvent`. It describes the JSON encoding (bytes inside values as
 *   base64 strings named by `bytes`; `read`'s reply as base64 with
 *   `encoding`). Shapes only: the field rules (ranges, paths, run names)
 *   are PROTOCOL.md's and proto/validate.ts's.
 * - client/python/rewindfs/backtrack_tools.json: the backtrack tool
 *   definitions of client/tools.ts (`tools`) and the localise tool of
 *   client/localise.ts (`localise`), for the Python package.
 * - client/python/rewindfs/constants.py: the protocol facts the Python
 *   package uses (file names, the runtime directory's environment
 *   variable, the protocol version, limits), from proto/, and the
 *   backtrack tools' limits, from client/.
 *
 * A new operation: add its arguments to OpArgs and its result to OpResults
 * (and OPS) in proto/messages.ts, then `npm run generate`.
 *
 * Usage: node dist/scripts/generate.js [--check]   (--check: exit 1 and
 * name the stale files instead of writing them)
 */
import fs from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { createGenerator, type Definition } from 'ts-json-schema-generator'
import { backtrackTools, MAX_CANDIDATE_FILES } from '../client/tools.js'
import { backtrackLocaliseSpec, DEFAULT_PROBE_TIMEOUT_MS } from '../client/localise.js'
import { CONNECTION_FILE, TOKEN_FILE } from '../proto/messages.js'
import { ROOT_RUNTIME_DIR, RUNTIME_DIR_ENV } from '../proto/discovery.js'
import { PROTOCOL_VERSION } from '../proto/version.js'
import { MAX_CANDIDATES, MAX_READ_LENGTH } from '../proto/validate.js'

/** The repository root (this file runs as dist/scripts/generate.js). */
export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..')
/** Where the protocol's JSON Schema is committed, relative to ROOT. */
export const SCHEMA_FILE = 'proto/schema/protocol.schema.json'
/** Where the Python package's copy of the backtrack tools is committed, relative to ROOT. */
export const TOOLS_FILE = 'client/python/rewindfs/backtrack_tools.json'
/** Where the Python package's protocol constants are committed, relative to ROOT. */
export const PY_CONSTANTS_FILE = 'client/python/rewindfs/constants.py'

type Defs = Record<string, Definition>

/** An optional request field may also be null ("not given", PROTOCOL.md §3). */
function orNull (d: Definition): Definition {
  return { anyOf: [d, { type: 'null' }] }
}

const BYTES_FIELD: Definition = {
  type: 'array',
  items: { type: 'string' },
  description: 'JSON encoding only: JSON Pointers (RFC 6901) from the message root to the base64 strings that stand for bytes (PROTOCOL.md "Values")',
}

/** The protocol's JSON Schema, as a value (see the module comment). */
export function protocolSchema (root: string = ROOT): Definition {
  const base = createGenerator({
    path: path.join(root, 'proto/messages.ts'),
    tsconfig: path.join(root, 'proto/tsconfig.json'),
    type: '*',
    expose: 'export',
    topRef: true,
    jsDoc: 'extended',
    skipTypeCheck: true,
    additionalProperties: false,
    sortProps: true,
  }).createSchema('*')
  const defs: Defs = {}
  for (const [name, d] of Object.entries(base.definitions ?? {})) {
    if (/^is[A-Z]/.test(name)) continue // type guards, not messages
    if (name === 'OpArgs' || name === 'OpResults') continue // composed below
    defs[name] = d as Definition
  }
  const args = (base.definitions?.OpArgs as Definition).properties as Defs
  const results = (base.definitions?.OpResults as Definition).properties as Defs
  const ops = ((base.definitions?.Op as Definition).enum ?? []) as string[]
  const missing = ops.filter(op => args[op] === undefined || results[op] === undefined)
  if (missing.length > 0) throw new Error(`proto/messages.ts: OpArgs and OpResults must have every op of OPS; missing: ${missing.join(', ')}`)
  const messages: Definition[] = []
  for (const op of ops) {
    const a = args[op]
    const required = new Set<string>(a.required ?? [])
    const props: Defs = { v: { $ref: '#/definitions/Integer' }, id: { $ref: '#/definitions/RequestId' }, op: { type: 'string', const: op } }
    for (const [k, d] of Object.entries((a.properties ?? {}) as Defs)) props[k] = required.has(k) ? d : orNull(d)
    props.bytes = BYTES_FIELD
    defs[`Request_${op}`] = {
      type: 'object',
      description: `A request of ${op} (PROTOCOL.md §4)${a.description !== undefined ? `: ${a.description}` : ''}`,
      properties: props,
      required: ['v', 'id', 'op', ...required],
      additionalProperties: false,
    }
    const reply: Definition = op === 'read'
      ? {
          type: 'object',
          description: 'The reply of read: in JSON frames the bytes as a base64 string (RFC 4648 §4) with encoding "base64"; in msgpack a bin',
          properties: { id: { $ref: '#/definitions/RequestId' }, ok: { type: 'string', contentEncoding: 'base64' }, encoding: { type: 'string', const: 'base64' } },
          required: ['id', 'ok', 'encoding'],
          additionalProperties: false,
        }
      : {
          type: 'object',
          description: `The reply of a successful ${op}`,
          properties: { id: { $ref: '#/definitions/RequestId' }, ok: results[op], bytes: BYTES_FIELD },
          required: ['id', 'ok'],
          additionalProperties: false,
        }
    defs[`Reply_${op}`] = reply
    messages.push({ $ref: `#/definitions/Request_${op}` }, { $ref: `#/definitions/Reply_${op}` })
  }
  messages.push({ $ref: '#/definitions/ErrorReply' }, { $ref: '#/definitions/CheckpointEvent' }, { $ref: '#/definitions/RestoreEvent' })
  return {
    $schema: 'http://json-schema.org/draft-07/schema#',
    $id: 'https://rewindfs.invalid/proto/schema/protocol.schema.json',
    title: 'rewindfs wire protocol, version 1 (JSON encoding)',
    description: 'Generated from proto/messages.ts by scripts/generate.ts: do not edit. Every message: Request_<op>, Reply_<op>, ErrorReply, CheckpointEvent, RestoreEvent. Shapes only; field rules are in proto/PROTOCOL.md.',
    anyOf: messages,
    definitions: Object.fromEntries(Object.entries(defs).sort(([a], [b]) => a < b ? -1 : a > b ? 1 : 0)),
  }
}

/** The Python package's constants module: each fact of proto/ it uses, with where it is defined. */
export function pythonConstants (): string {
  const facts: Array<[string, string | number, string]> = [
    ['PROTOCOL_VERSION', PROTOCOL_VERSION, 'the protocol version this client speaks (proto/version.ts)'],
    ['CONNECTION_FILE', CONNECTION_FILE, 'the connection file in a store directory (proto/messages.ts)'],
    ['TOKEN_FILE', TOKEN_FILE, 'the token file in a store directory, mode 0600 (proto/messages.ts)'],
    ['RUNTIME_DIR_ENV', RUNTIME_DIR_ENV, 'the environment variable naming the one runtime directory (proto/discovery.ts)'],
    ['ROOT_RUNTIME_DIR', ROOT_RUNTIME_DIR, 'the runtime directory of a daemon running as root (proto/discovery.ts)'],
    ['MAX_CANDIDATES', MAX_CANDIDATES, 'the most checkpoints `candidates` returns (proto/validate.ts)'],
    ['MAX_READ_LENGTH', MAX_READ_LENGTH, 'the most bytes one `read` returns (proto/validate.ts)'],
    ['MAX_CANDIDATE_FILES', MAX_CANDIDATE_FILES, 'the most files backtrack_candidates lists per candidate with `files` (client/tools.ts)'],
    ['DEFAULT_PROBE_TIMEOUT', DEFAULT_PROBE_TIMEOUT_MS / 1000, 'the default longest run of one backtrack_localise probe, seconds (client/localise.ts)'],
  ]
  const lines = ['"""Protocol facts, generated from proto/ (and the backtrack tools\' limits from client/) by scripts/generate.ts: do not edit (npm run generate)."""', '']
  for (const [name, value, what] of facts) lines.push(`#: ${what}`, `${name} = ${JSON.stringify(value)}`)
  return lines.join('\n') + '\n'
}

/** Every generated file: path relative to ROOT → its text. */
export function generatedFiles (root: string = ROOT): Map<string, string> {
  return new Map([
    [SCHEMA_FILE, JSON.stringify(protocolSchema(root), null, 2) + '\n'],
    [TOOLS_FILE, JSON.stringify({ $comment: 'Generated from client/tools.ts by scripts/generate.ts: do not edit.', tools: backtrackTools, localise: backtrackLocaliseSpec }, null, 2) + '\n'],
    [PY_CONSTANTS_FILE, pythonConstants()],
  ])
}

/** The generated files whose committed text differs from what generation gives now. */
export function staleFiles (root: string = ROOT): string[] {
  const out: string[] = []
  for (const [file, text] of generatedFiles(root)) {
    let now: string | null = null
    try { now = fs.readFileSync(path.join(root, file), 'utf8') } catch {}
    if (now !== text) out.push(file)
  }
  return out
}

if (process.argv[1] !== undefined && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  if (process.argv.includes('--check')) {
    const stale = staleFiles()
    if (stale.length > 0) {
      console.error(`out of date: ${stale.join(', ')} (run: npm run generate)`)
      process.exit(1)
    }
    console.log('generated files are up to date')
  } else {
    for (const [file, text] of generatedFiles()) {
      fs.mkdirSync(path.dirname(path.join(ROOT, file)), { recursive: true })
      fs.writeFileSync(path.join(ROOT, file), text)
      console.log(`wrote ${file}`)
    }
  }
}
