/**
 * Extended attributes on the backing filesystem, for the daemon (lower-layer
 * import, export, write-back). Only fuse/ may load the native binding, so the
 * daemon gets these functions from here: daemon/daemon.ts passes them into
 * LowerLayer, export and write-back, which never import fuse/.
 *
 * Plain synchronous syscalls on the JS thread; no symlink is followed (the
 * l* calls act on the link itself). Never point them at the mount this
 * process serves (the JS thread would wait for itself); the lower layer is
 * reached through /proc/self/fd/N, which resolves below the mount.
 */
import * as binding from './binding.js'

export type { XattrError } from './binding.js'

/**
 * All xattrs of `path`, name → value (one llistxattr, then one lgetxattr per
 * name only when the list is non-empty), or null when there are none or the
 * filesystem does not support xattrs (ENOTSUP). Throws an XattrError
 * (`code` 'ENOENT', 'EACCES', ...) otherwise.
 */
export function lxattrs (path: string): Record<string, Buffer> | null { return binding.lxattrs(path) }

/**
 * Sets xattr `name` of `path` to `value` (lsetxattr(2), flags 0: create or
 * replace). Throws an XattrError with the errno name in `code` on failure
 * (EPERM for trusted.* without CAP_SYS_ADMIN, ENOTSUP where the filesystem
 * or namespace has no xattrs, ...).
 */
export function lsetxattr (path: string, name: string, value: Uint8Array): void { binding.lsetxattr(path, name, value, 0) }

/** Removes xattr `name` of `path` (lremovexattr(2)); throws an XattrError ('ENODATA' when absent). */
export function lremovexattr (path: string, name: string): void { binding.lremovexattr(path, name) }

/** The three calls as the daemon takes them (fs/materialize.ts XattrIo). */
export const xattrIo = { read: lxattrs, set: lsetxattr, remove: lremovexattr }
