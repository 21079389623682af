/**
 * Standard base64 (RFC 4648 §4, with padding), without Node's Buffer: the
 * JSON form of bytes (proto/PROTOCOL.md "Values").
 */
const B64 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/'
const B64_INDEX = new Int16Array(128).fill(-1)
for (let i = 0; i < B64.length; i++) B64_INDEX[B64.charCodeAt(i)] = i

/** Standard base64 (RFC 4648 §4, with padding) of bytes. */
export function toBase64 (b: Uint8Array): string {
  let out = ''
  let i = 0
  const parts: string[] = []
  for (; i + 2 < b.length; i += 3) {
    const n = (b[i] << 16) | (b[i + 1] << 8) | b[i + 2]
    out += B64[n >> 18] + B64[(n >> 12) & 63] + B64[(n >> 6) & 63] + B64[n & 63]
    if (out.length >= 8192) { parts.push(out); out = '' }
  }
  if (i < b.length) {
    const n = (b[i] << 16) | ((i + 1 < b.length ? b[i + 1] : 0) << 8)
    out += B64[n >> 18] + B64[(n >> 12) & 63] + (i + 1 < b.length ? B64[(n >> 6) & 63] : '=') + '='
  }
  parts.push(out)
  return parts.join('')
}

/** Decode standard base64 (padding optional). Throws Error on a character outside the alphabet or a length no base64 text has. */
export function fromBase64 (s: string): Uint8Array {
  const clean = s.replace(/=+$/, '')
  if (clean.length % 4 === 1) throw new Error('invalid base64 length')
  const out = new Uint8Array(Math.floor(clean.length * 3 / 4))
  let o = 0
  let acc = 0
  let bits = 0
  for (let i = 0; i < clean.length; i++) {
    const c = clean.charCodeAt(i)
    const v = c < 128 ? B64_INDEX[c] : -1
    if (v < 0) throw new Error('invalid base64 character')
    acc = (acc << 6) | v
    bits += 6
    if (bits >= 8) { bits -= 8; out[o++] = (acc >> bits) & 255 }
  }
  return out
}

