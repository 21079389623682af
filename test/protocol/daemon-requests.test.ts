/**
 * Bad input against the real daemon: unauthenticated, malformed and unknown-checkpoint
 * requests change nothing, and no request path reaches outside the workspace.
 */
import t from 'tap'
import fs from 'node:fs'
import path from 'node:path'
import WebSocket from 'ws'
import { mountWorkspace } from '../helpers/mount.js'
import { CONNECTION_FILE } from '../../proto/messages.js'
import { smallTree, shellManifest } from '../helpers/small-tree.js'

t.test('protocol: unauthenticated, malformed and unknown-checkpoint requests change nothing', async t => {
  const m = await mountWorkspace(t, smallTree)
  const info = JSON.parse(fs.readFileSync(path.join(m.store, CONNECTION_FILE), 'utf8'))
  const token = fs.readFileSync(path.join(m.store, 'token'), 'utf8').trim()
  t.equal(fs.statSync(path.join(m.store, 'token')).mode & 0o777, 0o600, 'token file is 0600')
  const url = `ws://127.0.0.1:${info.port}/`
  const status = await new Promise<number>((resolve) => {
    const ws = new WebSocket(url)
    ws.on('unexpected-response', (_req, res) => { resolve(res.statusCode ?? 0); ws.terminate() })
    ws.on('open', () => { resolve(101); ws.close() })
    ws.on('error', () => {})
  })
  t.equal(status, 401, 'no token: 401 before anything is read')
  const ws = new WebSocket(url, { headers: { Authorization: `Bearer ${token}` } })
  await new Promise((resolve, reject) => { ws.once('open', resolve); ws.once('error', reject) })
  const ask = async (text: string): Promise<any> => await new Promise(resolve => {
    ws.once('message', (d) => resolve(JSON.parse(d.toString())))
    ws.send(text)
  })
  const before = await shellManifest(m.dir)
  const a = await ask('{"v":1,"id":1,"op":"restore"')
  t.equal(a.error?.code, 'E_BAD_REQUEST', 'malformed JSON')
  const b = await ask(JSON.stringify({ v: 1, id: 2, op: 'restore', checkpoint: 424242 }))
  t.equal(b.error?.code, 'E_UNKNOWN_CHECKPOINT', 'unknown checkpoint')
  const c = await ask(JSON.stringify({ v: 1, id: 3, op: 'read', path: '../etc/passwd' }))
  t.equal(c.error?.code, 'E_BAD_REQUEST', 'path escaping the workspace')
  const d = await ask(JSON.stringify({ v: 1, id: 4, op: 'read', path: 'src/lib/a.txt' }))
  t.equal(Buffer.from(d.ok, 'base64').toString(), 'alpha\n', 'read over JSON')
  t.equal(await shellManifest(m.dir), before, 'nothing changed')
  ws.close()
})

t.test('no request path reaches outside the workspace, not even through a symlink', async t => {
  const m = await mountWorkspace(t, dir => { smallTree(dir); fs.symlinkSync('/etc', path.join(dir, 'etc-link')); fs.symlinkSync('/etc/passwd', path.join(dir, 'passwd-link')) })
  const cp = await m.client.mark({})
  for (const id of [undefined, cp.id]) {
    const at = id === undefined ? 'live' : `checkpoint ${id}`
    t.equal(await m.client.stat({ id, path: 'etc-link/passwd' }), null, `${at}: a path through a symlink to /etc is not found`)
    await t.rejects(m.client.read({ id, path: 'etc-link/passwd' }), { code: 'E_NOT_FOUND' }, `${at}: read through it refused`)
    await t.rejects(m.client.read({ id, path: 'passwd-link' }), { code: 'E_BAD_REQUEST' }, `${at}: reading a symlink does not follow it`)
    await t.rejects(m.client.readdir({ id, path: 'etc-link' }), { code: 'E_BAD_REQUEST' }, `${at}: listing a symlink does not follow it`)
    const st = await m.client.stat({ id, path: 'passwd-link' })
    t.equal(st?.type, 'symlink', `${at}: stat describes the link itself`)
    t.equal(st?.target, '/etc/passwd')
  }
})
