/**
 * The run log: JSON lines of every LLM call, tool call, checkpoint and
 * rewind of one run, in files `<dir>/<run>.<n>.jsonl` (run name
 * percent-encoded). Each file starts with a header line. A rewind ends the
 * current file with its `rewind` record and starts file n+1, whose header
 * names the run and the checkpoint it forked from; the abandoned file is
 * kept as it was, so its records stay readable. Reopening a run that already
 * has files starts the next file (header `forkedFrom: null`).
 *
 * Keep `dir` outside the workspace: a restore would rewind a log inside it.
 * Writes are synchronous appends (one write per record, in call order).
 */
import fs from 'node:fs'
import path from 'node:path'
import type { CheckpointId } from '../proto/messages.js'

/** First line of every log file. */
export interface RunLogHeader {
  type: 'header'
  /** format of the file */
  format: 'rewindfs.runlog/1'
  run: string
  /** n of `<run>.<n>.jsonl`, 0 for the first file of the run */
  file: number
  /** for a file started by a rewind: the checkpoint restored, the file abandoned and how many records it holds; null otherwise */
  forkedFrom: { checkpoint: CheckpointId; file: string; records: number } | null
  /** ms since the Unix epoch */
  time: number
}

/** One LLM call. `input` holds the context from index `inputStart` on (earlier messages are in earlier records of the same file). */
export interface LlmCallRecord { type: 'llm_call'; time: number; inputStart: number; inputLength: number; input: unknown; output: unknown }
/** One tool call with its result and exit status (0 success). */
export interface ToolCallRecord { type: 'tool_call'; time: number; name: string; args: unknown; result: unknown; exitStatus: number }
/** A checkpoint marked at a decision boundary, with its segment metadata. */
export interface CheckpointRecord { type: 'checkpoint'; time: number; id: CheckpointId; label: string | null; branch: string; meta: unknown }
/** A committed backtrack: from the head checkpoint to `to`, with the memory entry added; `depth` (absent in logs written before issue 16: both) says what went back: both, context (files kept) or workspace (conversation kept). */
export interface RewindRecord { type: 'rewind'; time: number; from: CheckpointId | null; to: CheckpointId; reason: string; memory: unknown; memoryCount: number; restart: boolean; depth?: 'both' | 'context' | 'workspace' }

export type RunLogRecord = LlmCallRecord | ToolCallRecord | CheckpointRecord | RewindRecord
/** A record as given to append: `time` is filled in when absent. */
export type NewRecord = RunLogRecord extends infer R ? R extends { time: number } ? Omit<R, 'time'> & { time?: number } : never : never

/** One log file read back. */
export interface RunLogFile {
  /** absolute path */
  path: string
  header: RunLogHeader
  records: RunLogRecord[]
}

/** File name of log file `n` of `run`. */
export function runLogFileName (run: string, n: number): string {
  return `${encodeURIComponent(run)}.${n}.jsonl`
}

/** The file numbers `run` already has in `dir`, ascending. */
function existingFiles (dir: string, run: string): number[] {
  const prefix = `${encodeURIComponent(run)}.`
  let names: string[]
  try { names = fs.readdirSync(dir) } catch { return [] }
  return names
    .filter(n => n.startsWith(prefix) && n.endsWith('.jsonl'))
    .map(n => n.slice(prefix.length, -'.jsonl'.length))
    .filter(s => /^(0|[1-9][0-9]*)$/.test(s))
    .map(Number)
    .sort((a, b) => a - b)
}

/** An open run log. */
export class RunLog {
  readonly dir: string
  readonly run: string
  private n: number
  private count = 0

  private constructor (dir: string, run: string, n: number) {
    this.dir = dir
    this.run = run
    this.n = n
  }

  /** Open the log of `run` in `dir` (created if needed): a new file after any existing ones. */
  static open (dir: string, run: string): RunLog {
    fs.mkdirSync(dir, { recursive: true })
    const have = existingFiles(dir, run)
    const log = new RunLog(path.resolve(dir), run, have.length === 0 ? 0 : have[have.length - 1] + 1)
    log.start(null)
    return log
  }

  /** Absolute path of the current file. */
  get path (): string {
    return path.join(this.dir, runLogFileName(this.run, this.n))
  }

  /** n of the current file. */
  get file (): number {
    return this.n
  }

  /** Records in the current file, header excluded. */
  get records (): number {
    return this.count
  }

  /** Append one record to the current file. */
  append (rec: NewRecord): void {
    const line = JSON.stringify({ ...rec, time: rec.time ?? Date.now() })
    fs.appendFileSync(this.path, line + '\n')
    this.count++
  }

  /** After a rewind to `checkpoint`: keep the current file as it is and continue in the next one. */
  fork (checkpoint: CheckpointId): void {
    const forkedFrom = { checkpoint, file: runLogFileName(this.run, this.n), records: this.count }
    this.n++
    this.count = 0
    this.start(forkedFrom)
  }

  private start (forkedFrom: RunLogHeader['forkedFrom']): void {
    const header: RunLogHeader = { type: 'header', format: 'rewindfs.runlog/1', run: this.run, file: this.n, forkedFrom, time: Date.now() }
    fs.writeFileSync(this.path, JSON.stringify(header) + '\n', { flag: 'wx' })
  }
}

/**
 * Every log file of `run` in `dir`, in order. A last line cut short by a
 * crash is skipped; any other unreadable line throws.
 */
export function readRunLog (dir: string, run: string): RunLogFile[] {
  return existingFiles(dir, run).map(n => {
    const file = path.resolve(dir, runLogFileName(run, n))
    const lines = fs.readFileSync(file, 'utf8').split('\n')
    lines.pop() // '' after the last '\n', or a last line cut short by a crash
    const parsed = lines.map((l, i) => {
      try { return JSON.parse(l) as unknown } catch (err) { throw new Error(`${file}:${i + 1}: not JSON: ${(err as Error).message}`) }
    })
    const [header, ...records] = parsed as [RunLogHeader, ...RunLogRecord[]]
    if (header?.type !== 'header') throw new Error(`${file}: no header line`)
    return { path: file, header, records }
  })
}
