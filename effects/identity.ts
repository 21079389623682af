/**
 * Request identity (the idempotency key of an effect): derived from the
 * request by default, or given by the caller. Derived:
 *
 *     "sha256:" + hex SHA-256 of RFC 8785 canonical JSON of
 *         {"method": <method or "">, "target": <target>, "body": <body>}
 *
 * where a JSON body (any value but bytes) is first stripped of the fields
 * the tool's registration excludes (RFC 6901 JSON Pointers such as
 * "/timestamp" or "/meta/nonce": values that make a retry look new), and a
 * bytes body becomes {"sha256": <hex of the bytes>} (bytes are compared as
 * bytes). A given identity is used as it is. The same identity on the same
 * target is "the same effect" for the recovery gate (effects/gate.ts).
 */
import { createHash } from 'node:crypto'
import { canonicalJson } from '../proto/canonical.js'

/** Longest identity a caller may give, UTF-16 code units. */
export const MAX_IDENTITY_LENGTH = 512

/** The request an identity is derived from. `body` absent: no body. */
export interface EffectRequest { method?: string, body?: unknown }

/** A JSON Pointer that is not valid (RFC 6901 §3: empty, or starting with "/"). */
export function isJsonPointer (p: unknown): p is string {
  return typeof p === 'string' && p.length > 0 && p.startsWith('/') && !/~[^01]/.test(p) && !p.endsWith('~')
}

function unescapeToken (t: string): string {
  return t.replace(/~1/g, '/').replace(/~0/g, '~')
}

/** A deep copy of JSON value `v` without the fields the pointers name (absent fields are ignored). */
export function withoutFields (v: unknown, pointers: readonly string[]): unknown {
  const copy = structuredClone(v)
  for (const p of pointers) {
    const tokens = p.slice(1).split('/').map(unescapeToken)
    let at: unknown = copy
    for (let i = 0; i < tokens.length - 1 && at !== null && typeof at === 'object'; i++) at = (at as Record<string, unknown>)[tokens[i]]
    const last = tokens[tokens.length - 1]
    if (Array.isArray(at) && /^(0|[1-9]\d*)$/.test(last) && Number(last) < at.length) at.splice(Number(last), 1)
    else if (at !== null && typeof at === 'object' && !Array.isArray(at)) delete (at as Record<string, unknown>)[last]
  }
  return copy
}

/**
 * The derived identity of a request on `target`. Throws TypeError when the
 * body is not a JSON value (NaN, Infinity, a lone surrogate, a cycle).
 */
export function deriveIdentity (target: string, req: EffectRequest, exclude: readonly string[] = []): string {
  let body: unknown = null
  if (req.body instanceof Uint8Array) body = { sha256: createHash('sha256').update(req.body).digest('hex') }
  else if (req.body !== undefined) body = withoutFields(req.body, exclude)
  let text: string
  try { text = canonicalJson({ method: req.method ?? '', target, body }) } catch (e) {
    throw new TypeError(`request.body is not a JSON value: ${(e as Error).message}`)
  }
  return 'sha256:' + createHash('sha256').update(text).digest('hex')
}
