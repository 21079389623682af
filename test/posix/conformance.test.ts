// POSIX conformance through a real rewindfs mount, compared call by call with
// the same call on a native directory (a plain directory on the host
// filesystem next to the mount). Organised like pjdfstest: one subtest per
// system call (or group of them), one file per area of POSIX in
// test/posix/conformance/, all on one mount (conformance/mount.ts);
// test/README-conformance.md maps each required case to its subtest. The
// last subtest prints `# conformance: N cases, P passed` (what a case is:
// test/helpers/conformance.ts).
import t from 'tap'
import { countCases } from '../helpers/conformance.js'
import './conformance/files.js'
import './conformance/namespace.js'
import './conformance/attributes.js'
import './conformance/unprivileged.js'
import './conformance/fifos-lower-restore.js'

countCases(t)
