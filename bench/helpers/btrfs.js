/**
 * A btrfs filesystem on a loop device for the benchmarks' kernel
 * copy-on-write peer: a sparse image file under a temporary directory,
 * attached with losetup, formatted and mounted. Needs root and btrfs-progs
 * (scripts/setup.sh installs it). Teardown (registered on the caller's
 * cleanup stack, so it runs on failure and on SIGINT/SIGTERM too) deletes
 * every subvolume, unmounts, detaches the loop device and removes the image.
 */
import fs from 'node:fs';
import path from 'node:path';
import { spawnSync, execFileSync } from 'node:child_process';
import { tempRoot, isMounted } from './mount.js';
function run(cmd, args) {
    return execFileSync(cmd, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
}
/**
 * Sets up a btrfs of `size` (truncate(1) syntax, default 8G, sparse) or
 * returns the reason it cannot (not root, no btrfs-progs, no loop device,
 * no btrfs in the kernel), having undone what it did.
 */
export function setupBtrfs(cleanup, size = '8G') {
    if (process.getuid?.() !== 0)
        return { skipped: 'needs root (losetup, mount)' };
    if (spawnSync('bash', ['-c', 'command -v mkfs.btrfs && command -v btrfs'], { stdio: 'ignore' }).status !== 0)
        return { skipped: 'btrfs-progs is not installed (scripts/setup.sh installs it)' };
    const steps = [];
    const undo = async () => { while (steps.length > 0)
        await steps.pop()(); };
    try {
        const root = tempRoot('btrfs');
        steps.push(cleanup.push(`btrfs temp ${root}`, () => fs.rmSync(root, { recursive: true, force: true })));
        const img = path.join(root, 'btrfs.img');
        const mnt = path.join(root, 'mnt');
        fs.mkdirSync(mnt);
        run('truncate', ['-s', size, img]);
        const loop = run('losetup', ['--find', '--show', img]).trim();
        steps.push(cleanup.push(`loop device ${loop}`, () => { spawnSync('losetup', ['-d', loop], { stdio: 'ignore' }); }));
        run('mkfs.btrfs', ['-q', '-f', loop]);
        run('mount', ['-t', 'btrfs', loop, mnt]);
        steps.push(cleanup.push(`btrfs mount ${mnt}`, () => {
            spawnSync('bash', ['-c', `btrfs subvolume list -o ${JSON.stringify(mnt)} 2>/dev/null | awk '{print $NF}' | sort -r | while read -r s; do btrfs -q subvolume delete "${mnt}/$s" >/dev/null 2>&1; done`], { stdio: 'ignore' });
            if (spawnSync('umount', [mnt], { stdio: 'ignore' }).status !== 0 && isMounted(mnt))
                spawnSync('umount', ['-l', mnt], { stdio: 'ignore' });
        }));
        return { mnt, close: undo };
    }
    catch (e) {
        void undo();
        const msg = String(e.stderr ?? e).trim().split('\n')[0];
        return { skipped: `could not be set up: ${msg}` };
    }
}
//# sourceMappingURL=btrfs.js.map