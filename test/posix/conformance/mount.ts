/**
 * The conformance suite's one mount (test/helpers/conformance.ts
 * `conformanceMount`): every area file imports it, so it is made once, before
 * any of them registers a subtest (top-level await of a shared module), and
 * unmounted in the suite's teardown. A mount is most of a small test file's
 * cost, which is why the areas are modules of one test file, not files of
 * their own.
 */
import t from 'tap'
import { conformanceMount } from '../../helpers/conformance.js'

export const { m, trees } = await conformanceMount(t)
