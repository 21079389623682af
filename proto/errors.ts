/**
 * Stable error codes of the wire protocol. Codes are the contract; messages
 * may change. Each code has one documented entry here and in
 * proto/PROTOCOL.md "Errors". No Node-only types (see STYLE.md "Shape").
 */

/** Every error code the server can send, with its meaning. */
export const ERROR_CODES = {
  /** The message could not be decoded, or a field is missing, of the wrong type, out of range, or unknown. Nothing was changed. */
  E_BAD_REQUEST: 'the request is malformed or a field is invalid; nothing was changed',
  /** The request's `v` is not a version the server speaks; `details.supported` lists those it does. */
  E_UNSUPPORTED_VERSION: 'protocol version not supported; details.supported lists the versions spoken',
  /** The `op` is a string but not an operation the server knows; `details.ops` lists those it does. */
  E_UNKNOWN_OP: 'unknown operation',
  /** The connection did not present the right token. Sent as HTTP 401 at upgrade; never as a reply. */
  E_UNAUTHORIZED: 'missing or wrong token',
  /** A message or a reply exceeds the size limit. An incoming frame over maxPayload closes the websocket with code 1009. */
  E_TOO_LARGE: 'message exceeds the size limit',
  /** The checkpoint id names no checkpoint. Nothing was changed. */
  E_UNKNOWN_CHECKPOINT: 'no such checkpoint',
  /** A path that must exist does not (readdir of a missing directory, read of a missing file). `stat` answers null instead. */
  E_NOT_FOUND: 'no such path',
  /** A restore or a mark is in progress; retry later. Nothing was changed. */
  E_BUSY: 'a restore or mark is in progress',
  /** The store or the export target is out of space. */
  E_NO_SPACE: 'no space left',
  /** An I/O error in the store or the export target; `details` may carry the errno name. */
  E_IO: 'input/output error',
  /** The store is inconsistent (a referenced block or record is missing or fails verification). */
  E_CORRUPT: 'store corruption detected',
  /** A bug or unexpected failure in the daemon; `message` carries the original message. */
  E_INTERNAL: 'internal error',
  /** The workspace is not mounted (after unmount, or before mount finished). */
  E_NOT_MOUNTED: 'workspace not mounted',
  /** effect_begin/effect_compensate/effect_gate name a tool never registered with effect_register. Nothing was recorded. */
  E_EFFECT_UNREGISTERED: 'the tool is not registered: register its effect class first',
  /** effect_register gives a registered tool another class or other exclusions; a class never changes. Nothing was recorded. */
  E_EFFECT_CLASS_CONFLICT: 'the tool is registered with another class or other exclusions',
  /** The occurrence id names no occurrence in the ledger. */
  E_UNKNOWN_EFFECT: 'no such occurrence',
  /** The occurrence's status does not allow this (complete after an outcome, reconcile while in flight); details.status says which it is. */
  E_EFFECT_STATE: 'the occurrence is not in a status that allows this',
  /** Gate: the same effect already happened as intended; do not repeat it, accept the fact. details.gate carries the decision. */
  E_EFFECT_DONE: 'the effect already happened',
  /** Gate: the same effect happened but not as intended; only its compensation (effect_compensate) is allowed. */
  E_EFFECT_COMPENSATE_ONLY: 'only the compensation of the earlier occurrence is allowed',
  /** Gate: the same effect happened and cannot be undone (irreversible, or wrong and not compensable); continue from the fact. */
  E_EFFECT_IRREVERSIBLE: 'the effect happened and cannot be undone',
  /** Gate: the earlier occurrence is in flight or its outcome is unknown; reconcile it (or a person overrides) first. Fail closed. */
  E_EFFECT_UNKNOWN: 'the outcome of the earlier occurrence is unknown',
  /** The effect ledger's hash chain does not verify (or the ledger is missing): no effect may begin; rewindfs verify names the entry. */
  E_LEDGER_CORRUPT: 'the effect ledger is damaged',
} as const

/** A stable error code. */
export type ErrorCode = keyof typeof ERROR_CODES

/** True when `x` is one of the documented error codes. */
export function isErrorCode (x: unknown): x is ErrorCode {
  return typeof x === 'string' && Object.prototype.hasOwnProperty.call(ERROR_CODES, x)
}

/** The error object inside an error reply: `{code, message, details?}`. */
export interface WireError {
  code: ErrorCode
  message: string
  details?: unknown
}

/**
 * An error with a stable code, thrown by the daemon's operations (daemon/api.ts)
 * and turned by the server into an error reply carrying the same code,
 * message and details.
 */
export class ApiError extends Error {
  /** stable code, see ERROR_CODES */
  readonly code: ErrorCode
  /** any JSON-compatible value giving context (field name, checkpoint id, errno) */
  readonly details: unknown

  constructor (code: ErrorCode, message: string, details?: unknown) {
    super(message)
    this.name = 'ApiError'
    this.code = code
    this.details = details
  }

  /** The wire form of this error. */
  toWire (): WireError {
    const w: WireError = { code: this.code, message: this.message }
    if (this.details !== undefined) w.details = this.details
    return w
  }
}

/**
 * A request that failed decoding or validation (code E_BAD_REQUEST, or
 * E_UNSUPPORTED_VERSION / E_UNKNOWN_OP). `id` is the request's id when it
 * could be read, else null.
 */
export class ProtoError extends ApiError {
  readonly id: string | number | null

  constructor (code: ErrorCode, message: string, id: string | number | null = null, details?: unknown) {
    super(code, message, details)
    this.name = 'ProtoError'
    this.id = id
  }
}
