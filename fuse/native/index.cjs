const os = require('os')
const fs = require('fs')
const path = require('path')
const { exec } = require('child_process')

// Vendored from fuse-native 2.2.6 (MIT, Mathias Buus) with rewindfs patches;
// every change is marked "rewindfs:". See fuse/binding.ts for the typed API.
const Nanoresource = require('nanoresource')
// rewindfs: fuse-shared-library dropped (macOS only); we link the system libfuse2.

const binding = require('node-gyp-build')(__dirname)

const IS_OSX = os.platform() === 'darwin'
const OSX_FOLDER_ICON = '/System/Library/CoreServices/CoreTypes.bundle/Contents/Resources/GenericFolderIcon.icns'
const HAS_FOLDER_ICON = IS_OSX && fs.existsSync(OSX_FOLDER_ICON)
const DEFAULT_TIMEOUT = 15 * 1000
// rewindfs: libfuse/fuse-native copy the -o string into a 1024-byte buffer
const MAX_OPTIONS_BYTES = 1023
const ENOTCONN_LINUX = -107
const TIMEOUT_ERRNO = IS_OSX ? -60 : -110
const ENOTCONN = IS_OSX ? -57 : -107

const OpcodesAndDefaults = new Map([
  ['init', {
    op: binding.op_init
  }],
  ['error', {
    op: binding.op_error
  }],
  ['access', {
    op: binding.op_access,
    defaults: [0]
  }],
  ['statfs', {
    op: binding.op_statfs,
    defaults: [getStatfsArray()]
  }],
  ['fgetattr', {
    op: binding.op_fgetattr,
    defaults: [getStatArray()]
  }],
  ['getattr', {
    op: binding.op_getattr,
    defaults: [getStatArray()]
  }],
  ['flush', {
    op: binding.op_flush
  }],
  ['fsync', {
    op: binding.op_fsync
  }],
  ['fsyncdir', {
    op: binding.op_fsyncdir
  }],
  ['readdir', {
    op: binding.op_readdir,
    defaults: [[], []]
  }],
  ['truncate', {
    op: binding.op_truncate
  }],
  ['ftruncate', {
    op: binding.op_ftruncate
  }],
  ['utimens', {
    op: binding.op_utimens
  }],
  ['readlink', {
    op: binding.op_readlink,
    defaults: ['']
  }],
  ['chown', {
    op: binding.op_chown
  }],
  ['chmod', {
    op: binding.op_chmod
  }],
  ['mknod', {
    op: binding.op_mknod
  }],
  ['setxattr', {
    op: binding.op_setxattr
  }],
  ['getxattr', {
    op: binding.op_getxattr
  }],
  ['listxattr', {
    op: binding.op_listxattr
  }],
  ['removexattr', {
    op: binding.op_removexattr
  }],
  ['open', {
    op: binding.op_open,
    defaults: [0]
  }],
  ['opendir', {
    op: binding.op_opendir,
    defaults: [0]
  }],
  ['read', {
    op: binding.op_read,
    defaults: [0]
  }],
  ['write', {
    op: binding.op_write,
    defaults: [0]
  }],
  ['release', {
    op: binding.op_release
  }],
  ['releasedir', {
    op: binding.op_releasedir
  }],
  ['create', {
    op: binding.op_create,
    defaults: [0]
  }],
  ['unlink', {
    op: binding.op_unlink
  }],
  ['rename', {
    op: binding.op_rename
  }],
  ['link', {
    op: binding.op_link
  }],
  ['symlink', {
    op: binding.op_symlink
  }],
  ['mkdir', {
    op: binding.op_mkdir
  }],
  ['rmdir', {
    op: binding.op_rmdir
  }]
])

class Fuse extends Nanoresource {
  constructor (mnt, ops, opts = {}) {
    super()

    this.opts = opts
    this.mnt = path.resolve(mnt)
    this.ops = ops
    this.timeout = opts.timeout === false ? 0 : (opts.timeout || DEFAULT_TIMEOUT)

    // rewindfs: fail early (and clearly) on a bad extraOptions list or an
    // over-long -o string instead of silently truncating it in C.
    this._fuseOptions()
    if (Buffer.byteLength(this.mnt) > 1023) throw new Error('Mountpoint path longer than 1023 bytes')

    this._force = !!opts.force
    this._mkdir = !!opts.mkdir
    this._thread = null
    this._handlers = this._makeHandlerArray()
    this._threads = new Set()
    // rewindfs: thread-locals buffer of the request being dispatched (context())
    this._current = null
    // rewindfs: invalidation batches run one at a time
    this._invalQueue = []
    this._invalBusy = false
    this._mounted = false

    const implemented = [binding.op_init, binding.op_error, binding.op_getattr]
    if (ops) {
      for (const [name, { op }] of OpcodesAndDefaults) {
        if (ops[name]) implemented.push(op)
      }
    }
    this._implemented = new Set(implemented)

    // Used to determine if the user-defined callback needs to be nextTick'd.
    this._sync = true
  }

  _getImplementedArray () {
    const implemented = new Uint32Array(35)
    for (const impl of this._implemented) {
      implemented[impl] = 1
    }
    return implemented
  }

  _fuseOptions () {
    const options = []

    if ((/\*|(^,)fuse-bindings(,$)/.test(process.env.DEBUG)) || this.opts.debug) options.push('debug')
    if (this.opts.allowOther) options.push('allow_other')
    if (this.opts.allowRoot) options.push('allow_root')
    if (this.opts.autoUnmount) options.push('auto_unmount')
    if (this.opts.defaultPermissions) options.push('default_permissions')
    if (this.opts.blkdev) options.push('blkdev')
    if (this.opts.blksize) options.push('blksize=' + this.opts.blksize)
    if (this.opts.maxRead) options.push('max_read=' + this.opts.maxRead)
    if (this.opts.fd) options.push('fd=' + this.opts.fd)
    if (this.opts.userId) options.push('user_id=', this.opts.userId)
    if (this.opts.fsname) options.push('fsname=' + this.opts.fsname)
    if (this.opts.subtype) options.push('subtype=' + this.opts.subtype)
    if (this.opts.kernelCache) options.push('kernel_cache')
    if (this.opts.autoCache) options.push('auto_cache')
    if (this.opts.umask) options.push('umask=' + this.opts.umask)
    if (this.opts.uid) options.push('uid=' + this.opts.uid)
    if (this.opts.gid) options.push('gid=' + this.opts.gid)
    if (this.opts.entryTimeout) options.push('entry_timeout=' + this.opts.entryTimeout)
    if (this.opts.attrTimeout) options.push('attr_timeout=' + this.opts.attrTimeout)
    if (this.opts.acAttrTimeout) options.push('ac_attr_timeout=' + this.opts.acAttrTimeout)
    if (this.opts.noforget) options.push('noforget')
    if (this.opts.remember) options.push('remember=' + this.opts.remember)
    if (this.opts.modules) options.push('modules=' + this.opts.modules)

    if (this.opts.displayFolder && IS_OSX) { // only works on osx
      options.push('volname=' + path.basename(this.opts.name || this.mnt))
      if (HAS_FOLDER_ICON) options.push('volicon=' + OSX_FOLDER_ICON)
    }

    // rewindfs: raw libfuse options (big_writes, max_write=131072, use_ino,
    // hard_remove, entry_timeout=60, negative_timeout=0, ...), appended as-is.
    const extra = this.opts.extraOptions
    if (extra !== undefined && extra !== null) {
      if (!Array.isArray(extra)) throw new TypeError('extraOptions must be an array of strings')
      for (const o of extra) {
        if (typeof o !== 'string' || o.length === 0 || o.includes(',') || /[\s\0]/.test(o)) {
          throw new TypeError('extraOptions: each entry must be one non-empty option without commas or whitespace, got ' + JSON.stringify(o))
        }
        options.push(o)
      }
    }

    const str = options.length ? '-o' + options.join(',') : ''
    if (Buffer.byteLength(str) > MAX_OPTIONS_BYTES) {
      throw new Error('FUSE option string is ' + Buffer.byteLength(str) + ' bytes; libfuse/fuse-native accept at most ' + MAX_OPTIONS_BYTES + ': ' + str.slice(0, 80) + '...')
    }
    return str
  }

  _malloc (size) {
    const buf = Buffer.alloc(size)
    this._threads.add(buf)
    return buf
  }

  _makeHandlerArray () {
    const self = this
    const handlers = new Array(OpcodesAndDefaults.size)

    for (const [name, { op, defaults }] of OpcodesAndDefaults) {
      const nativeSignal = binding[`fuse_native_signal_${name}`]
      if (!nativeSignal) continue

      handlers[op] = makeHandler(name, op, defaults, nativeSignal)
    }

    return handlers

    function makeHandler (name, op, defaults, nativeSignal) {
      let to = self.timeout
      if (typeof to === 'object' && to) {
        const defaultTimeout = to.default || DEFAULT_TIMEOUT
        to = to[name]
        if (!to && to !== false) to = defaultTimeout
      }

      return function (nativeHandler, opCode, ...args) {
        const sig = signal.bind(null, nativeHandler)
        const input = [...args]
        const boundSignal = to ? autoTimeout(sig, input) : sig
        const funcName = `_op_${name}`
        if (!self[funcName] || !self._implemented.has(op)) return boundSignal(-1, ...defaults)
        // rewindfs: make fuse.context() valid synchronously inside the handler
        const prev = self._current
        self._current = nativeHandler
        try {
          return self[funcName].apply(self, [boundSignal, ...args])
        } finally {
          self._current = prev
        }
      }

      function signal (nativeHandler, err, ...args) {
        var arr = [nativeHandler, err, ...args]

        if (defaults) {
          while (arr.length > 2 && arr[arr.length - 1] === undefined) arr.pop()
          if (arr.length === 2) arr = arr.concat(defaults)
        }

        return process.nextTick(nativeSignal, ...arr)
      }

      function autoTimeout (cb, input) {
        let called = false
        const timeout = setTimeout(timeoutWrap, to, TIMEOUT_ERRNO)
        return timeoutWrap

        function timeoutWrap (err, ...args) {
          if (called) return
          called = true

          clearTimeout(timeout)

          if (err === TIMEOUT_ERRNO) {
            switch (name) {
              case 'write':
              case 'read':
                return cb(TIMEOUT_ERRNO, 0, input[2].buffer)
              case 'setxattr':
                return cb(TIMEOUT_ERRNO, input[2].buffer)
              case 'getxattr':
                return cb(TIMEOUT_ERRNO, input[2].buffer)
              case 'listxattr':
                return cb(TIMEOUT_ERRNO, input[1].buffer)
            }
          }

          cb(err, ...args)
        }
      }
    }
  }

  // Static methods

  static unmount (mnt, cb) {
    mnt = JSON.stringify(mnt)
    const cmd = IS_OSX ? `diskutil unmount force ${mnt}` : `fusermount -uz ${mnt}`
    exec(cmd, err => {
      if (err) return cb(err)
      return cb(null)
    })
  }

  // Debugging methods

  // Lifecycle methods

  _open (cb) {
    const self = this

    if (this._force) {
      return fs.stat(path.join(this.mnt, 'test'), (err, st) => {
        if (err && (err.errno === ENOTCONN || err.errno === Fuse.ENXIO)) return Fuse.unmount(this.mnt, open)
        return open()
      })
    }
    return open()

    function open () {
      // If there was an unmount error, continue attempting to mount (this is the best we can do)
      self._thread = Buffer.alloc(binding.sizeof_fuse_thread_t)
      self._openCallback = cb

      let opts
      try {
        opts = self._fuseOptions()
      } catch (err) {
        return cb(err)
      }
      const implemented = self._getImplementedArray()

      return fs.stat(self.mnt, (err, stat) => {
        if (err && err.errno !== -2) return cb(err)
        if (err) {
          if (!self._mkdir) return cb(new Error('Mountpoint does not exist'))
          return fs.mkdir(self.mnt, { recursive: true }, err => {
            if (err) return cb(err)
            fs.stat(self.mnt, (err, stat) => {
              if (err) return cb(err)
              return onexists(stat)
            })
          })
        }
        if (!stat.isDirectory()) return cb(new Error('Mountpoint is not a directory'))
        return onexists(stat)
      })

      function onexists (stat) {
        fs.stat(path.join(self.mnt, '..'), (_, parent) => {
          if (parent && parent.dev !== stat.dev) return cb(new Error('Mountpoint in use'))
          try {
            // TODO: asyncify
            binding.fuse_native_mount(self.mnt, opts, self._thread, self, self._malloc, self._handlers, implemented)
            self._mounted = true
          } catch (err) {
            return cb(err)
          }
        })
      }
    }
  }

  _close (cb) {
    const self = this

    Fuse.unmount(this.mnt, err => {
      if (err) {
        err.unmountFailure = true
        return cb(err)
      }
      nativeUnmount()
    })

    function nativeUnmount () {
      try {
        self._mounted = false
        binding.fuse_native_unmount(self.mnt, self._thread)
      } catch (err) {
        return cb(err)
      }
      return cb(null)
    }
  }

  // Handlers

  _op_init (signal) {
    if (this._openCallback) {
      process.nextTick(this._openCallback, null)
      this._openCallback = null
    }
    if (!this.ops.init) {
      signal(0)
      return
    }
    this.ops.init(err => {
      return signal(err)
    })
  }

  _op_error (signal) {
    if (!this.ops.error) {
      signal(0)
      return
    }
    this.ops.error(err => {
      return signal(err)
    })
  }

  _op_statfs (signal, path) {
    this.ops.statfs(path, (err, statfs) => {
      if (err) return signal(err)
      const arr = getStatfsArray(statfs)
      return signal(0, arr)
    })
  }

  _op_getattr (signal, path) {
    if (!this.ops.getattr) {
      if (path !== '/') {
        signal(Fuse.EPERM)
      } else {
        signal(0, getStatArray({ mtime: new Date(0), atime: new Date(0), ctime: new Date(0), mode: 16877, size: 4096 }))
      }
      return
    }

    this.ops.getattr(path, (err, stat) => {
      if (err) return signal(err, getStatArray())
      return signal(0, getStatArray(stat))
    })
  }

  _op_fgetattr (signal, path, fd) {
    if (!this.ops.fgetattr) {
      if (path !== '/') {
        signal(Fuse.EPERM)
      } else {
        signal(0, getStatArray({ mtime: new Date(0), atime: new Date(0), ctime: new Date(0), mode: 16877, size: 4096 }))
      }
      return
    }
    // rewindfs: upstream called ops.getattr(path, cb) here and lost the fd
    this.ops.fgetattr(path, fd, (err, stat) => {
      if (err) return signal(err, getStatArray())
      return signal(0, getStatArray(stat))
    })
  }

  _op_access (signal, path, mode) {
    this.ops.access(path, mode, err => {
      return signal(err)
    })
  }

  _op_open (signal, path, flags) {
    this.ops.open(path, flags, (err, fd) => {
      return signal(err, fd)
    })
  }

  // rewindfs: the C side passes (fh, flags); upstream delivered fh as flags
  _op_opendir (signal, path, fh, flags) {
    this.ops.opendir(path, flags, (err, fd) => {
      return signal(err, fd)
    })
  }

  // rewindfs: create(path, mode, flags, cb): flags are the open(2) flags
  _op_create (signal, path, mode, flags) {
    this.ops.create(path, mode, flags, (err, fd) => {
      return signal(err, fd)
    })
  }

  // rewindfs: atime/mtime are BigInt ns since the epoch, or null (UTIME_OMIT)
  _op_utimens (signal, path, atime, mtime) {
    this.ops.utimens(path, atime, mtime, err => {
      return signal(err)
    })
  }

  _op_release (signal, path, fd) {
    this.ops.release(path, fd, err => {
      return signal(err)
    })
  }

  _op_releasedir (signal, path, fd) {
    this.ops.releasedir(path, fd, err => {
      return signal(err)
    })
  }

  _op_read (signal, path, fd, buf, len, offsetLow, offsetHigh) {
    this.ops.read(path, fd, buf, len, getDoubleArg(offsetLow, offsetHigh), (err, bytesRead) => {
      return signal(err, bytesRead || 0, buf.buffer)
    })
  }

  _op_write (signal, path, fd, buf, len, offsetLow, offsetHigh) {
    this.ops.write(path, fd, buf, len, getDoubleArg(offsetLow, offsetHigh), (err, bytesWritten) => {
      return signal(err, bytesWritten || 0, buf.buffer)
    })
  }

  _op_readdir (signal, path) {
    this.ops.readdir(path, (err, names, stats) => {
      if (err) return signal(err)
      if (stats) stats = stats.map(getStatArray)
      return signal(0, names, stats || [])
    })
  }

  _op_setxattr (signal, path, name, value, position, flags) {
    this.ops.setxattr(path, name, value, position, flags, err => {
      return signal(err, value.buffer)
    })
  }

  // rewindfs: honour the caller's buffer size. Upstream copied a value or list
  // longer than the buffer (the kernel turned that into EIO) and never
  // answered a size probe for getxattr. A zero-length buffer is a size probe;
  // a buffer too small gets ERANGE, as getxattr(2) and listxattr(2) say.
  _op_getxattr (signal, path, name, valueBuf, position) {
    this.ops.getxattr(path, name, position, (err, value) => {
      if (err) return signal(err, valueBuf.buffer)
      if (!value) return signal(IS_OSX ? -93 : -61, valueBuf.buffer)
      if (valueBuf.length === 0) return signal(value.length, valueBuf.buffer)
      if (value.length > valueBuf.length) return signal(-34, valueBuf.buffer)
      value.copy(valueBuf)
      return signal(value.length, valueBuf.buffer)
    })
  }

  _op_listxattr (signal, path, listBuf) {
    this.ops.listxattr(path, (err, list) => {
      if (err || !list) return signal(err || 0, listBuf.buffer)
      let size = 0
      for (const name of list) size += Buffer.byteLength(name) + 1
      if (listBuf.length === 0) return signal(size, listBuf.buffer)
      if (size > listBuf.length) return signal(-34, listBuf.buffer)
      let ptr = 0
      for (const name of list) { ptr += listBuf.write(name, ptr); listBuf[ptr++] = 0 }
      return signal(ptr, listBuf.buffer)
    })
  }


  _op_removexattr (signal, path, name) {
    this.ops.removexattr(path, name, err => {
      return signal(err)
    })
  }

  _op_flush (signal, path, fd) {
    this.ops.flush(path, fd, err => {
      return signal(err)
    })
  }

  _op_fsync (signal, path, datasync, fd) {
    this.ops.fsync(path, datasync, fd, err => {
      return signal(err)
    })
  }

  _op_fsyncdir (signal, path, datasync, fd) {
    this.ops.fsyncdir(path, datasync, fd, err => {
      return signal(err)
    })
  }

  _op_truncate (signal, path, sizeLow, sizeHigh) {
    const size = getDoubleArg(sizeLow, sizeHigh)
    this.ops.truncate(path, size, err => {
      return signal(err)
    })
  }

  _op_ftruncate (signal, path, fd, sizeLow, sizeHigh) {
    const size = getDoubleArg(sizeLow, sizeHigh)
    this.ops.ftruncate(path, fd, size, err => {
      return signal(err)
    })
  }

  _op_readlink (signal, path) {
    this.ops.readlink(path, (err, linkname) => {
      return signal(err, linkname)
    })
  }

  _op_chown (signal, path, uid, gid) {
    this.ops.chown(path, uid, gid, err => {
      return signal(err)
    })
  }

  _op_chmod (signal, path, mode) {
    this.ops.chmod(path, mode, err => {
      return signal(err)
    })
  }

  _op_mknod (signal, path, mode, dev) {
    this.ops.mknod(path, mode, dev, err => {
      return signal(err)
    })
  }

  _op_unlink (signal, path) {
    this.ops.unlink(path, err => {
      return signal(err)
    })
  }

  _op_rename (signal, src, dest) {
    this.ops.rename(src, dest, err => {
      return signal(err)
    })
  }

  _op_link (signal, src, dest) {
    this.ops.link(src, dest, err => {
      return signal(err)
    })
  }

  _op_symlink (signal, src, dest) {
    this.ops.symlink(src, dest, err => {
      return signal(err)
    })
  }

  _op_mkdir (signal, path, mode) {
    this.ops.mkdir(path, mode, err => {
      return signal(err)
    })
  }

  _op_rmdir (signal, path) {
    this.ops.rmdir(path, err => {
      return signal(err)
    })
  }

  // Public API

  mount (cb) {
    return this.open(cb)
  }

  unmount (cb) {
    return this.close(cb)
  }

  errno (code) {
    return (code && Fuse[code.toUpperCase()]) || -1
  }

  // rewindfs: caller identity of the request whose handler is running now.
  // Only valid synchronously inside a handler; null elsewhere.
  context () {
    const l = this._current
    if (!l) return null
    const ints = new Uint32Array(l.buffer, l.byteOffset, 4)
    return { uid: ints[0], gid: ints[1], pid: ints[2], umask: ints[3] }
  }

  // rewindfs: kernel cache invalidation. items: [0,parent,name] [1,nodeid,off,len]
  // [2,parent,child,name] [3,path] [4,path,off,len] [5,path] (new node generation) [6] (nameless nodes). Runs on a native notify
  // thread; batches are serialised. Resolves {results, ms}: per item 0,
  // 1 (skipped: nothing cached) or -errno. Never await it inside a FUSE handler.
  invalidate (items, cb) {
    const p = new Promise((resolve, reject) => {
      if (!Array.isArray(items)) return reject(new TypeError('items must be an array'))
      this._invalQueue.push({ items, resolve, reject })
      this._invalPump()
    })
    if (typeof cb === 'function') p.then((r) => cb(null, r), (err) => cb(err))
    return p
  }

  _invalPump () {
    if (this._invalBusy || this._invalQueue.length === 0) return
    const job = this._invalQueue.shift()
    this._invalBusy = true
    const self = this
    let finished = false
    function done (results, ms) {
      if (finished) return
      finished = true
      self._invalBusy = false
      job.resolve({ results: Array.from(results), ms })
      self._invalPump()
    }
    const notConnected = () => done(job.items.map(() => ENOTCONN_LINUX), 0)
    if (!this._thread || !this._mounted) return notConnected()
    let queued
    try {
      queued = binding.fuse_native_invalidate(this._thread, job.items, done)
    } catch (err) {
      this._invalBusy = false
      job.reject(err)
      return this._invalPump()
    }
    if (!queued) notConnected()
  }

  // rewindfs: libfuse node id for an absolute path: >0, 0 if libfuse has no
  // node for it (nothing cached), or -errno (-ENOSYS layout mismatch,
  // -ENOTCONN not mounted).
  nodeid (p) {
    if (!this._thread || !this._mounted) return ENOTCONN_LINUX
    return binding.fuse_native_nodeid(this._thread, p)
  }

  // rewindfs: snapshot of libfuse's node table: [nodeid, parentId, name, nlookup][]
  listNodes () {
    if (!this._thread || !this._mounted) return []
    return binding.fuse_native_list_nodes(this._thread)
  }

  // rewindfs: true when the libfuse 2.9.9 struct mirror matched at mount
  layoutOk () {
    if (!this._thread || !this._mounted) return false
    return binding.fuse_native_layout_ok(this._thread)
  }
}

Fuse.EPERM = -1
Fuse.ENOENT = -2
Fuse.ESRCH = -3
Fuse.EINTR = -4
Fuse.EIO = -5
Fuse.ENXIO = -6
Fuse.E2BIG = -7
Fuse.ENOEXEC = -8
Fuse.EBADF = -9
Fuse.ECHILD = -10
Fuse.EAGAIN = -11
Fuse.ENOMEM = -12
Fuse.EACCES = -13
Fuse.EFAULT = -14
Fuse.ENOTBLK = -15
Fuse.EBUSY = -16
Fuse.EEXIST = -17
Fuse.EXDEV = -18
Fuse.ENODEV = -19
Fuse.ENOTDIR = -20
Fuse.EISDIR = -21
Fuse.EINVAL = -22
Fuse.ENFILE = -23
Fuse.EMFILE = -24
Fuse.ENOTTY = -25
Fuse.ETXTBSY = -26
Fuse.EFBIG = -27
Fuse.ENOSPC = -28
Fuse.ESPIPE = -29
Fuse.EROFS = -30
Fuse.EMLINK = -31
Fuse.EPIPE = -32
Fuse.EDOM = -33
Fuse.ERANGE = -34
Fuse.EDEADLK = -35
Fuse.ENAMETOOLONG = -36
Fuse.ENOLCK = -37
Fuse.ENOSYS = -38
Fuse.ENOTEMPTY = -39
Fuse.ELOOP = -40
Fuse.EWOULDBLOCK = -11
Fuse.ENOMSG = -42
Fuse.EIDRM = -43
Fuse.ECHRNG = -44
Fuse.EL2NSYNC = -45
Fuse.EL3HLT = -46
Fuse.EL3RST = -47
Fuse.ELNRNG = -48
Fuse.EUNATCH = -49
Fuse.ENOCSI = -50
Fuse.EL2HLT = -51
Fuse.EBADE = -52
Fuse.EBADR = -53
Fuse.EXFULL = -54
Fuse.ENOANO = -55
Fuse.EBADRQC = -56
Fuse.EBADSLT = -57
Fuse.EDEADLOCK = -35
Fuse.EBFONT = -59
Fuse.ENOSTR = -60
Fuse.ENODATA = -61
Fuse.ETIME = -62
Fuse.ENOSR = -63
Fuse.ENONET = -64
Fuse.ENOPKG = -65
Fuse.EREMOTE = -66
Fuse.ENOLINK = -67
Fuse.EADV = -68
Fuse.ESRMNT = -69
Fuse.ECOMM = -70
Fuse.EPROTO = -71
Fuse.EMULTIHOP = -72
Fuse.EDOTDOT = -73
Fuse.EBADMSG = -74
Fuse.EOVERFLOW = -75
Fuse.ENOTUNIQ = -76
Fuse.EBADFD = -77
Fuse.EREMCHG = -78
Fuse.ELIBACC = -79
Fuse.ELIBBAD = -80
Fuse.ELIBSCN = -81
Fuse.ELIBMAX = -82
Fuse.ELIBEXEC = -83
Fuse.EILSEQ = -84
Fuse.ERESTART = -85
Fuse.ESTRPIPE = -86
Fuse.EUSERS = -87
Fuse.ENOTSOCK = -88
Fuse.EDESTADDRREQ = -89
Fuse.EMSGSIZE = -90
Fuse.EPROTOTYPE = -91
Fuse.ENOPROTOOPT = -92
Fuse.EPROTONOSUPPORT = -93
Fuse.ESOCKTNOSUPPORT = -94
Fuse.EOPNOTSUPP = -95
Fuse.EPFNOSUPPORT = -96
Fuse.EAFNOSUPPORT = -97
Fuse.EADDRINUSE = -98
Fuse.EADDRNOTAVAIL = -99
Fuse.ENETDOWN = -100
Fuse.ENETUNREACH = -101
Fuse.ENETRESET = -102
Fuse.ECONNABORTED = -103
Fuse.ECONNRESET = -104
Fuse.ENOBUFS = -105
Fuse.EISCONN = -106
Fuse.ENOTCONN = -107
Fuse.ESHUTDOWN = -108
Fuse.ETOOMANYREFS = -109
Fuse.ETIMEDOUT = -110
Fuse.ECONNREFUSED = -111
Fuse.EHOSTDOWN = -112
Fuse.EHOSTUNREACH = -113
Fuse.EALREADY = -114
Fuse.EINPROGRESS = -115
Fuse.ESTALE = -116
Fuse.EUCLEAN = -117
Fuse.ENOTNAM = -118
Fuse.ENAVAIL = -119
Fuse.EISNAM = -120
Fuse.EREMOTEIO = -121
Fuse.EDQUOT = -122
Fuse.ENOMEDIUM = -123
Fuse.EMEDIUMTYPE = -124

// rewindfs: the fuse-shared-library configuration hooks are macOS-only; on
// Linux they are no-ops (the system libfuse2 + fusermount are used).
Fuse.beforeMount = (cb) => cb && process.nextTick(cb, null)
Fuse.beforeUnmount = (cb) => cb && process.nextTick(cb, null)
Fuse.configure = (cb) => cb && process.nextTick(cb, null)
Fuse.unconfigure = (cb) => cb && process.nextTick(cb, null)
Fuse.isConfigured = (cb) => cb && process.nextTick(cb, null, true)

// rewindfs: synchronous xattr syscalls on the backing filesystem (never the
// mount: they block the JS thread that serves it). Errors carry .code
// ('ENOTSUP', 'EPERM', ...), .errno (negative, as Node's), .syscall, .path.
const ERRNO_NAMES = new Map(Object.entries(os.constants.errno).map(([k, v]) => [v, k]))
function xattrError (syscall, r, p, name) {
  const code = ERRNO_NAMES.get(-r) || 'EUNKNOWN'
  const err = new Error(`${code}: ${syscall} ${p}${name === undefined ? '' : ' ' + name} failed (errno ${-r})`)
  err.code = code
  err.errno = r
  err.syscall = syscall
  err.path = p
  return err
}
Fuse.lxattrs = function lxattrs (p) {
  const r = binding.fuse_native_lxattrs(String(p))
  if (typeof r !== 'number') return r
  if (r === -os.constants.errno.ENOTSUP || r === -os.constants.errno.EOPNOTSUPP) return null
  throw xattrError('llistxattr', r, p)
}
Fuse.lsetxattr = function lsetxattr (p, name, value, flags = 0) {
  const buf = Buffer.isBuffer(value) ? value : Buffer.from(value.buffer, value.byteOffset, value.byteLength)
  const r = binding.fuse_native_lsetxattr(String(p), String(name), buf, flags | 0)
  if (r !== 0) throw xattrError('lsetxattr', r, p, name)
}
Fuse.lremovexattr = function lremovexattr (p, name) {
  const r = binding.fuse_native_lremovexattr(String(p), String(name))
  if (r !== 0) throw xattrError('lremovexattr', r, p, name)
}
// rewindfs: FUSE requests served since the addon was loaded in this process,
// by operation name ({ getattr: 1234, ... }; operations never called are
// left out). Counted in C on the libfuse thread (issue 10).
Fuse.requestCounts = function requestCounts () {
  const raw = binding.fuse_native_request_counts()
  const out = {}
  for (const [name, { op }] of OpcodesAndDefaults) {
    if (raw[op] > 0) out[name] = raw[op]
  }
  return out
}

module.exports = Fuse

function getStatfsArray (statfs) {
  const ints = new Uint32Array(11)

  ints[0] = (statfs && statfs.bsize) || 0
  ints[1] = (statfs && statfs.frsize) || 0
  ints[2] = (statfs && statfs.blocks) || 0
  ints[3] = (statfs && statfs.bfree) || 0
  ints[4] = (statfs && statfs.bavail) || 0
  ints[5] = (statfs && statfs.files) || 0
  ints[6] = (statfs && statfs.ffree) || 0
  ints[7] = (statfs && statfs.favail) || 0
  ints[8] = (statfs && statfs.fsid) || 0
  ints[9] = (statfs && statfs.flag) || 0
  ints[10] = (statfs && statfs.namemax) || 0

  return ints
}

function setDoubleInt (arr, idx, num) {
  arr[idx] = num % 4294967296
  arr[idx + 1] = (num - arr[idx]) / 4294967296
}

function getDoubleArg (a, b) {
  return a + b * 4294967296
}

function toDateMS (st) {
  if (typeof st === 'number') return st
  if (!st) return Date.now()
  return st.getTime()
}

// rewindfs: a stat time is a BigInt (ns since the epoch), a Date or a number
// (ms since the epoch, fractions kept to the ns); written as
// (sec low, sec high [int64], nsec) so ns precision reaches the kernel.
function setTime (ints, idx, t) {
  let ns
  if (typeof t === 'bigint') {
    ns = t
  } else {
    const ms = toDateMS(t)
    if (!Number.isFinite(ms)) {
      ns = 0n
    } else {
      const whole = Math.floor(ms)
      ns = BigInt(whole) * 1000000n + BigInt(Math.round((ms - whole) * 1e6))
    }
  }
  let sec = ns / 1000000000n
  let nsec = ns % 1000000000n
  if (nsec < 0n) {
    nsec += 1000000000n
    sec -= 1n
  }
  const u = BigInt.asUintN(64, sec)
  ints[idx] = Number(u & 0xffffffffn)
  ints[idx + 1] = Number(u >> 32n)
  ints[idx + 2] = Number(nsec)
}

function getStatArray (stat) {
  const ints = new Uint32Array(21)

  ints[0] = (stat && stat.mode) || 0
  ints[1] = (stat && stat.uid) || 0
  ints[2] = (stat && stat.gid) || 0
  setDoubleInt(ints, 3, (stat && stat.size) || 0)
  ints[5] = (stat && stat.dev) || 0
  // rewindfs: nlink 0 is a real value (a file unlinked while open); 1 only when none is given
  ints[6] = (stat && typeof stat.nlink === 'number') ? stat.nlink : 1
  ints[7] = (stat && stat.ino) || 0
  ints[8] = (stat && stat.rdev) || 0
  ints[9] = (stat && stat.blksize) || 0
  setDoubleInt(ints, 10, (stat && stat.blocks) || 0)
  setTime(ints, 12, stat && stat.atime)
  setTime(ints, 15, stat && stat.mtime)
  setTime(ints, 18, stat && stat.ctime)

  return ints
}
