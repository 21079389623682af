/**
 * Canonical JSON (proto/canonical.ts): RFC 8785 with integers of the value
 * model beyond 2^53 written exactly, and the request identities derived
 * from it (effects/identity.ts).
 */
import t from 'tap'
import { canonicalJson } from '../../proto/canonical.js'
import { deriveIdentity } from '../../effects/identity.js'

t.test('canonicalJson: RFC 8785 order and numbers, exact 64-bit integers', async tt => {
  tt.equal(canonicalJson({ b: 1, a: [2n ** 64n - 1n, 1.5, 'x', null, true], '\u00e9': 0 }), '{"a":[18446744073709551615,1.5,"x",null,true],"b":1,"\u00e9":0}', 'keys sorted, no whitespace, 2^64-1 exact')
  tt.equal(canonicalJson(-(2n ** 63n)), '-9223372036854775808', 'int64 minimum')
  tt.equal(canonicalJson(2 ** 60), '1152921504606846976', 'an integral number beyond 2^53 is written with its digits, as the wire does')
  tt.equal(canonicalJson(1e21), '1e+21', 'a float beyond the integer range keeps RFC 8785\'s form')
  tt.equal(canonicalJson(9007199254740991), '9007199254740991')
  tt.equal(canonicalJson('rewindfs-cint-0:1'), '"rewindfs-cint-0:1"', 'a string that looks like a placeholder stays a string')
  tt.throws(() => canonicalJson(2n ** 64n), RangeError, 'beyond uint64: refused')
  tt.throws(() => canonicalJson(NaN), /NaN/, 'NaN refused')
  tt.throws(() => canonicalJson('\ud800'), /surrogate/i, 'a lone surrogate refused')
})

t.test('identities: the same request is the same effect; excluded fields and key order do not count; 64-bit integers do', async tt => {
  const a = deriveIdentity('http://t/x', { method: 'POST', body: { amount: 18446744073709551615n, at: 1, title: 'x' } }, ['/at'])
  const b = deriveIdentity('http://t/x', { method: 'POST', body: { title: 'x', at: 2, amount: 18446744073709551615n } }, ['/at'])
  const c = deriveIdentity('http://t/x', { method: 'POST', body: { title: 'x', at: 2, amount: 18446744073709551614n } }, ['/at'])
  tt.equal(a, b, 'key order and an excluded field do not change the identity')
  tt.not(a, c, 'a difference in the 64th bit does')
  tt.match(a, /^sha256:[0-9a-f]{64}$/)
  tt.not(deriveIdentity('http://t/x', { method: 'PUT', body: { title: 'x' } }), deriveIdentity('http://t/x', { method: 'POST', body: { title: 'x' } }), 'the method counts')
  tt.not(deriveIdentity('http://t/y', { body: 'x' }), deriveIdentity('http://t/x', { body: 'x' }), 'the target counts')
})
