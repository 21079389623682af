/**
 * The recovery gate's table (effects/gate.ts, PROTOCOL.md "Effects"),
 * decision by decision: every effect class against every kind of evidence
 * about the earlier occurrence of the same target and identity, and every
 * row of the compensation rule. Pure logic: no ledger, no daemon (the
 * ledger's own test, effects-ledger, drives the same decisions through
 * recorded occurrences).
 */
import t from 'tap'
import { decide, decideCompensation, REFUSAL_CODES, type PriorOccurrence } from '../../effects/gate.js'
import type { EffectClass, EffectStatus, ReconcileVerdict } from '../../proto/effects.js'

const CLASSES: EffectClass[] = ['replayable', 'idempotent', 'compensable', 'irreversible', 'unknown']

const prior = (cls: EffectClass, status: EffectStatus, more: Partial<PriorOccurrence> = {}): PriorOccurrence =>
  ({ occurrence: 9, class: cls, status, verdict: null, overridden: false, compensated: false, target: 'http://t/x', ...more })

/** [evidence name, the prior occurrence, expected rule for a class] */
const EVIDENCE: Array<[string, (c: EffectClass) => PriorOccurrence | null, (c: EffectClass) => string]> = [
  ['no earlier occurrence', () => null, () => 'new'],
  ['completed failed (proven absent)', c => prior(c, 'failed'), () => 'absent'],
  ['reconciled absent', c => prior(c, 'unknown', { verdict: 'absent' }), () => 'absent'],
  ['reconciled absent after confirmed', c => prior(c, 'confirmed', { verdict: 'absent' }), () => 'absent'],
  ['confirmed (present as intended)', c => prior(c, 'confirmed'), c => c === 'irreversible' || c === 'unknown' ? 'irreversible' : 'present'],
  ['reconciled present', c => prior(c, 'unknown', { verdict: 'present' }), c => c === 'irreversible' || c === 'unknown' ? 'irreversible' : 'present'],
  ['reconciled wrong', c => prior(c, 'confirmed', { verdict: 'wrong' as ReconcileVerdict }), c => c === 'compensable' ? 'compensate-only' : 'irreversible'],
  ['intent (in flight)', c => prior(c, 'intent'), () => 'in-flight'],
  ['pending (in flight)', c => prior(c, 'pending'), () => 'in-flight'],
  ['unknown', c => prior(c, 'unknown'), () => 'unknown'],
  ['unknown, overridden by a person', c => prior(c, 'unknown', { overridden: true }), () => 'overridden'],
  ['confirmed, then compensated', c => prior(c, 'confirmed', { compensated: true }), () => 'compensated'],
]

t.test('decide: every class against every kind of evidence', async tt => {
  for (const cls of CLASSES) {
    for (const [name, p, want] of EVIDENCE) {
      const before = p(cls)
      // the tool's class decides replayable; the earlier occurrence's class decides the rest
      const expect = before !== null && cls === 'replayable' ? 'replayable' : want(cls)
      const d = decide(cls, before)
      const allowed = ['new', 'replayable', 'absent', 'compensated', 'overridden'].includes(expect)
      tt.same([d.rule, d.allowed], [expect, allowed], `${cls}, ${name}: ${expect}`)
      tt.equal(d.code, allowed ? null : REFUSAL_CODES[expect as keyof typeof REFUSAL_CODES], `${cls}, ${name}: error code`)
      tt.equal(d.occurrence, before === null ? null : 9, `${cls}, ${name}: names the earlier occurrence`)
      tt.ok(d.message.length > 0 && d.message.length < 300, `${cls}, ${name}: a short message`)
      if (!allowed) tt.match(d.message, /^Refused: .*#9/, `${cls}, ${name}: the message says refused and names #9`)
    }
  }
})

t.test('the codes of refusals', async tt => {
  tt.same(REFUSAL_CODES, {
    present: 'E_EFFECT_DONE', 'compensate-only': 'E_EFFECT_COMPENSATE_ONLY', irreversible: 'E_EFFECT_IRREVERSIBLE',
    'in-flight': 'E_EFFECT_UNKNOWN', unknown: 'E_EFFECT_UNKNOWN', 'not-compensable': 'E_EFFECT_IRREVERSIBLE', 'nothing-to-compensate': 'E_EFFECT_DONE'
  })
})

t.test('decideCompensation: every row', async tt => {
  const rows: Array<[string, PriorOccurrence, PriorOccurrence | null, string, boolean]> = [
    ['compensable, confirmed, no earlier compensation', prior('compensable', 'confirmed'), null, 'new', true],
    ['compensable, reconciled wrong', prior('compensable', 'unknown', { verdict: 'wrong' }), null, 'new', true],
    ['compensable, reconciled present', prior('compensable', 'unknown', { verdict: 'present' }), null, 'new', true],
    ['irreversible', prior('irreversible', 'confirmed'), null, 'not-compensable', false],
    ['idempotent', prior('idempotent', 'confirmed'), null, 'not-compensable', false],
    ['compensable, in flight', prior('compensable', 'pending'), null, 'in-flight', false],
    ['compensable, unknown', prior('compensable', 'unknown'), null, 'unknown', false],
    ['compensable, failed (absent)', prior('compensable', 'failed'), null, 'nothing-to-compensate', false],
    ['compensable, reconciled absent', prior('compensable', 'confirmed', { verdict: 'absent' }), null, 'nothing-to-compensate', false],
    ['compensable, already compensated', prior('compensable', 'confirmed', { compensated: true }), null, 'nothing-to-compensate', false],
    ['an earlier compensation in flight', prior('compensable', 'confirmed'), prior('compensable', 'intent', { occurrence: 10 }), 'in-flight', false],
    ['an earlier compensation unknown', prior('compensable', 'confirmed'), prior('compensable', 'unknown', { occurrence: 10 }), 'unknown', false],
    ['an earlier compensation present', prior('compensable', 'confirmed'), prior('compensable', 'confirmed', { occurrence: 10 }), 'nothing-to-compensate', false],
    ['an earlier compensation failed', prior('compensable', 'confirmed'), prior('compensable', 'failed', { occurrence: 10 }), 'new', true],
  ]
  for (const [name, target, earlier, rule, allowed] of rows) {
    const d = decideCompensation(target, earlier)
    tt.same([d.rule, d.allowed], [rule, allowed], `${name}: ${rule}`)
  }
})
