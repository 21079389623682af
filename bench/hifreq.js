/**
 * The high-frequency form: how many marks per second rewindfs sustains while
 * a writer writes through the mount, and what the writer keeps of its
 * throughput at 10, 100 and 1,000 marks per second. The writer is a separate
 * process (bench/hifreq-writer.ts: 64 KiB files rewritten round-robin); the
 * marks come from one connected client in this process.
 *
 * Phases, each `seconds` long, on one mount: the writer alone (the peer: no
 * marks), marks back to back (the sustained maximum), then marks paced at
 * each target rate (a mark that falls behind its slot runs at once, with no
 * burst to catch up, so `achieved` may fall short of the target).
 *
 *   node dist/bench/hifreq.js [--quick] [--seconds 10]
 */
import path from 'node:path';
import { execFile } from 'node:child_process';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Cleanup, mountRewind, now, sleep, fmt, table } from './lib.js';
import { summarize } from './helpers/stats.js';
const WRITER = path.join(path.dirname(fileURLToPath(import.meta.url)), 'hifreq-writer.js');
function runWriter(dir, ms) {
    return new Promise((resolve, reject) => {
        execFile(process.execPath, [WRITER, dir, String(ms)], { timeout: ms + 120000 }, (err, out, errOut) => {
            if (err)
                reject(new Error(`writer failed: ${String(errOut).slice(-500)}`));
            else
                resolve(JSON.parse(out.trim().split('\n').pop()));
        });
    });
}
async function markLoop(client, target, until) {
    const lat = [];
    if (target === 0) {
        while (!until())
            await sleep(20);
        return lat;
    }
    const interval = target === null ? 0 : 1000 / target;
    let next = now();
    let k = 0;
    while (!until()) {
        if (interval > 0) {
            const wait = next - now();
            if (wait > 1)
                await sleep(wait - 0.5);
            else if (wait > 0)
                await new Promise(resolve => setImmediate(resolve));
            if (now() < next)
                continue;
            next = Math.max(next + interval, now());
        }
        const t0 = now();
        await client.mark({ label: `hf ${k++}` });
        lat.push(now() - t0);
    }
    return lat;
}
/** Runs the phases on one fresh mount (registered on `cleanup`). */
export async function hifreqBench(cleanup, o) {
    const rates = o.rates ?? [10, 100, 1000];
    const m = await mountRewind(cleanup, 'hifreq');
    const phases = [];
    try {
        const targets = [0, null, ...rates];
        for (const target of targets) {
            const ms = o.seconds * 1000;
            let done = false;
            const w = runWriter(path.join(m.dir, 'w'), ms).finally(() => { done = true; });
            const t0 = now();
            const lat = await markLoop(m.client, target, () => done);
            const elapsed = (now() - t0) / 1000;
            const wr = await w;
            const p = {
                target, achieved: lat.length / elapsed, marks: lat.length, markMs: lat,
                writerMBps: wr.bytes / 1e6 / (wr.ms / 1000), writerFilesPerS: wr.files / (wr.ms / 1000)
            };
            phases.push(p);
            o.log(`hifreq: ${target === 0 ? 'writer alone' : target === null ? 'marks back to back' : `${target} marks/s`}: ${fmt(p.achieved)} marks/s, writer ${fmt(p.writerMBps)} MB/s`);
        }
    }
    finally {
        await m.close();
    }
    return { kind: 'hifreq', seconds: o.seconds, fileBytes: 65536, phases };
}
/** The table of a result: per phase the marks achieved, mark latency and the writer's share of its alone figure. */
export function hifreqText(r) {
    const alone = r.phases.find(p => p.target === 0);
    const rows = r.phases.map(p => {
        const s = summarize(p.markMs);
        return [p.target === 0 ? 'none (writer alone)' : p.target === null ? 'back to back' : String(p.target), fmt(p.achieved), String(p.marks),
            s.n ? fmt(s.median, 2) : '–', s.n ? fmt(Math.max(...p.markMs), 1) : '–', fmt(p.writerMBps), alone ? `${(100 * p.writerMBps / alone.writerMBps).toFixed(0)}%` : '–'];
    });
    return `High-frequency marks while a writer rewrites 64 KiB files through the mount (${r.seconds} s per phase)\n\n` +
        table(['marks/s asked', 'marks/s achieved', 'marks', 'mark median ms', 'mark max ms', 'writer MB/s', 'writer vs alone'], rows);
}
async function main() {
    const quick = process.argv.includes('--quick');
    const i = process.argv.indexOf('--seconds');
    const seconds = i > 0 ? Number(process.argv[i + 1]) : quick ? 3 : 10;
    if (!(seconds > 0))
        throw new Error('--seconds must be a positive number');
    const cleanup = new Cleanup();
    try {
        const r = await hifreqBench(cleanup, { seconds, log: l => console.log(l) });
        console.log('\n' + hifreqText(r));
    }
    finally {
        await cleanup.run();
    }
}
if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
    main().catch(e => { console.error(e instanceof Error ? e.message : e); process.exitCode = 1; });
}
//# sourceMappingURL=hifreq.js.map