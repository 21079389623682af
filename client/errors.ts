/**
 * Errors of the client library. Wire errors are not local errors (STYLE.md
 * "Errors"): RewindError is what the daemon answered; TimeoutError and
 * ConnectionError happened on this side.
 */
import type { ErrorCode } from '../proto/errors.js'

/** An error reply from the daemon, with its stable code (proto/errors.ts), message and details. */
export class RewindError extends Error {
  /** the stable code; branch on this, not on the message */
  readonly code: ErrorCode
  /** whatever context the daemon attached, or undefined */
  readonly details: unknown
  /** the operation that failed */
  readonly op: string | undefined

  constructor (code: ErrorCode, message: string, details?: unknown, op?: string) {
    super(message)
    this.name = 'RewindError'
    this.code = code
    this.details = details
    this.op = op
  }
}

/** A call got no reply within its timeout. The request may still take effect in the daemon. */
export class TimeoutError extends Error {
  readonly op: string
  readonly timeoutMs: number

  constructor (op: string, timeoutMs: number) {
    super(`${op}: no reply within ${timeoutMs} ms`)
    this.name = 'TimeoutError'
    this.op = op
    this.timeoutMs = timeoutMs
  }
}

/**
 * The connection could not be opened, or was lost while a call was waiting
 * (the request may or may not have taken effect). The next call reconnects.
 */
export class ConnectionError extends Error {
  /** websocket close code when the connection closed, HTTP status when the upgrade was refused */
  readonly status: number | undefined

  constructor (message: string, status?: number, options?: { cause?: unknown }) {
    super(message, options)
    this.name = 'ConnectionError'
    this.status = status
  }
}
