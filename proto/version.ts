/**
 * Protocol version. Every request carries it as `v`; the server answers a
 * version it does not speak with E_UNSUPPORTED_VERSION and
 * `details.supported`. Bump on any incompatible change to proto/messages.ts
 * and record it in proto/PROTOCOL.md "Changelog".
 */
export const PROTOCOL_VERSION = 1

/** Every protocol version this build speaks, newest first. */
export const SUPPORTED_VERSIONS: readonly number[] = [PROTOCOL_VERSION]
