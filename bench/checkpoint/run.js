/**
 * The checkpoint benchmark's runner (bench/checkpoint.ts is its command
 * line): for each size and peer, a fresh populated tree (bench/checkpoint/
 * tree.ts), the base checkpoint, then for each count of changed files
 * `reps` times: change, checkpoint (timed), restore to the base (timed).
 * The first restore of each peer at the first size is judged against the
 * base's independent manifest (scripts/manifest.sh); every restore is
 * checked for the changed files. Raw samples only; summaries are made by
 * bench/report/checkpoint.ts.
 */
import { now } from '../lib.js';
import { manifest } from '../../scripts/manifest.js';
import { checkRestore, verdict } from '../helpers/compare.js';
import { change, notRestored, GITIGNORE } from './tree.js';
/** Runs the benchmark; a peer that fails at a size has the error recorded and the run goes on. */
export async function runCheckpoint(o) {
    const res = { kind: 'checkpoint', sizes: o.sizes, changed: o.changed, reps: {}, peers: [], cells: [], correctness: {}, rss: {}, setupMs: {}, errors: [] };
    const ready = [];
    for (const p of o.peers) {
        const why = await p.prepare();
        res.peers.push({ name: p.name, label: p.label, ...(why ? { skipped: why } : {}) });
        if (why)
            o.log(`note: checkpoint peer ${p.name} skipped: ${why}`);
        else
            ready.push(p);
    }
    for (const n of o.sizes) {
        const reps = o.reps(n);
        res.reps[String(n)] = reps;
        for (const p of ready) {
            const t0 = now();
            let tree = null;
            try {
                tree = await p.tree(n);
                await tree.base();
                (res.setupMs[p.name] ??= {})[String(n)] = now() - t0;
                if (tree.rss)
                    res.rss[String(n)] = { afterBase: tree.rss(), afterReps: NaN };
                const judge = n === o.sizes[0];
                const baseLines = judge ? (await manifest(tree.dir)).lines : [];
                for (const c of o.changed.filter(c => c <= n)) {
                    const cell = { peer: p.name, files: n, changed: c, ckptMs: [], restoreMs: [], missed: 0, ...(tree.inside ? { insideCkptMs: [], insideRestoreMs: [] } : {}) };
                    for (let r = 0; r < reps; r++) {
                        const set = change(tree.dir, n, c, r);
                        let t = now();
                        await tree.checkpoint();
                        cell.ckptMs.push(now() - t);
                        t = now();
                        await tree.restore();
                        cell.restoreMs.push(now() - t);
                        if (tree.inside) {
                            const i = tree.inside();
                            cell.insideCkptMs.push(i.mark);
                            cell.insideRestoreMs.push(i.restore);
                        }
                        if (notRestored(tree.dir, set) !== null)
                            cell.missed++;
                        if (judge && !res.correctness[p.name]) {
                            const check = checkRestore(baseLines, (await manifest(tree.dir)).lines, GITIGNORE);
                            res.correctness[p.name] = { verdict: verdict(check), check };
                            o.log(`checkpoint: ${p.name} restore: ${verdict(check)}`);
                        }
                    }
                    res.cells.push(cell);
                    const med = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
                    o.log(`checkpoint: ${String(n).padStart(6)} files, ${String(c).padStart(4)} changed, ${p.name.padEnd(8)} checkpoint ${med(cell.ckptMs).toFixed(1)} ms, restore ${med(cell.restoreMs).toFixed(1)} ms`);
                }
                if (tree.rss)
                    res.rss[String(n)].afterReps = tree.rss();
            }
            catch (e) {
                const msg = `${p.name} at ${n} files: ${e.message.split('\n').slice(0, 3).join(' ')}`;
                res.errors.push(msg);
                o.log(`checkpoint: FAILED ${msg}`);
            }
            finally {
                if (tree)
                    await tree.close();
            }
        }
    }
    return res;
}
//# sourceMappingURL=run.js.map