/**
 * The external-command pattern list (effects/patterns.ts): what the defaults
 * catch and let through, the store's config file, and a malformed file
 * failing closed with an error naming the field.
 */
import t from 'tap'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { DEFAULT_EXTERNAL_PATTERNS, EXTERNAL_COMMANDS_FILE, loadExternalPatterns, matchExternalCommand, PatternFileError, writeDefaultPatterns } from '../../effects/patterns.js'

const external = [
  ['git push origin main', 'git push'],
  ['cd app && git -C sub push --force', 'git push'],
  ['curl -X POST https://api.example/tickets', 'curl (not GET)'],
  ['curl -XDELETE https://api.example/t/1', 'curl (not GET)'],
  ['curl -sd @body.json https://api.example/t', 'curl (not GET)'],
  ['curl --json \'{"a":1}\' https://api.example/t', 'curl (not GET)'],
  ['curl --request PUT https://x', 'curl (not GET)'],
  ['wget --post-data=a=1 https://x', 'wget (not GET)'],
  ['npm publish --access public', 'package publish'],
  ['ssh host ls', 'ssh/scp/sftp'],
  ['scp a.txt host:/tmp/', 'ssh/scp/sftp'],
  ['rsync -a dist/ host:/srv/www', 'rsync to a host'],
  ['docker push registry/app:1', 'docker push'],
  ['gh pr create --fill', 'gh write'],
  ['terraform apply -auto-approve', 'cloud and cluster'],
] as const
const local = [
  'git status', 'git commit -m fix', 'git log --oneline', 'curl https://example.org/', 'curl -X GET https://x', 'curl -I https://x',
  'wget https://x/file.tgz', 'npm test', 'npm install', 'rsync -a src/ dst/', 'ls -la', 'echo pushd', 'gh pr list',
]

t.test('the defaults catch the external commands and let local ones through', async tt => {
  for (const [cmd, name] of external) tt.equal(matchExternalCommand(cmd, DEFAULT_EXTERNAL_PATTERNS)?.name, name, cmd)
  for (const cmd of local) tt.equal(matchExternalCommand(cmd, DEFAULT_EXTERNAL_PATTERNS), null, cmd)
  tt.equal(matchExternalCommand(['git', 'push', 'origin'], DEFAULT_EXTERNAL_PATTERNS)?.name, 'git push', 'an argv is joined')
})

t.test('the store config file: defaults when absent, written once, edited, malformed fails closed', async tt => {
  const store = fs.mkdtempSync(path.join(os.tmpdir(), 'rwfs-pat-'))
  tt.teardown(() => fs.rmSync(store, { recursive: true, force: true }))
  tt.same(loadExternalPatterns(store), DEFAULT_EXTERNAL_PATTERNS, 'no file: the defaults')
  tt.equal(writeDefaultPatterns(store), true)
  tt.equal(writeDefaultPatterns(store), false, 'an existing file is kept')
  const file = path.join(store, EXTERNAL_COMMANDS_FILE)
  tt.same(loadExternalPatterns(store), DEFAULT_EXTERNAL_PATTERNS, 'the written file reads back as the defaults')
  fs.writeFileSync(file, JSON.stringify({ version: 1, patterns: [{ name: 'deploy', regex: '(^|\\s)make\\s+deploy\\b', class: 'irreversible', description: 'our deploy' }] }))
  const mine = loadExternalPatterns(store)
  tt.equal(matchExternalCommand('make deploy', mine)?.name, 'deploy')
  tt.equal(matchExternalCommand('git push', mine), null, 'the file replaces the defaults')
  for (const [body, field] of [
    ['{not json', 'not valid JSON'],
    [JSON.stringify({ version: 2, patterns: [] }), 'version'],
    [JSON.stringify({ version: 1, patterns: [{ name: 'x', regex: '(', class: 'unknown' }] }), 'patterns[0].regex'],
    [JSON.stringify({ version: 1, patterns: [{ name: 'x', regex: 'x', class: 'sometimes' }] }), 'patterns[0].class'],
    [JSON.stringify({ version: 1, patterns: [{ name: 'x', regex: 'x', class: 'unknown', extra: 1 }] }), 'patterns[0].extra'],
  ] as const) {
    fs.writeFileSync(file, body)
    let err: unknown = null
    try { loadExternalPatterns(store) } catch (e) { err = e }
    tt.ok(err instanceof PatternFileError && err.message.includes(field), `refused, naming ${field}: ${String(err)}`)
  }
})
