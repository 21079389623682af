/**
 * Parsers of the CLI's option values (commander's argParser). Each returns
 * the value or throws commander's InvalidArgumentError, which commander
 * prints as `error: option '--port <n>' argument 'abc' is invalid. <why>`
 * and exit status 1, before any command runs. parseId and envReserve read
 * arguments and the environment inside a command and throw CliError.
 */
import { InvalidArgumentError } from 'commander'
import bytes from 'bytes'
import ms from 'ms'
import { CliError } from './errors.js'

/** A TCP port: an integer 0..65535 (0 = any free port). */
export function parsePort (s: string): number {
  const t = s.trim()
  if (!/^\d+$/.test(t) || Number(t) > 65535) throw new InvalidArgumentError('a port is a whole number from 0 to 65535 (0 = any free port)')
  return Number(t)
}

/**
 * A size in bytes from "65536" (bytes), or a number with a unit: K, M, G, T
 * or P, any case, with or without "i" and "B" ("64M", "64MB", "64MiB", "1g"),
 * all powers of 1024 (the `bytes` package computes it; alone it would read
 * "5M" as 5 bytes). Anything else is refused.
 */
export function parseSize (s: string): number {
  const m = /^(\d+(?:\.\d+)?)\s*(?:([kmgtp])i?b?)?$/i.exec(s.trim())
  const n = m === null ? null : m[2] === undefined ? Number(m[1]) : bytes.parse(`${m[1]}${m[2]}b`)
  if (n === null || !Number.isSafeInteger(n) || n < 0) throw new InvalidArgumentError('give a size in bytes, or a number with a unit such as 64M, 64MB, 64MiB or 1G')
  return n
}

/** A count: a whole number >= `min`. */
export function parseCount (s: string, min = 0): number {
  const t = s.trim()
  if (!/^\d+$/.test(t) || !Number.isSafeInteger(Number(t)) || Number(t) < min) throw new InvalidArgumentError(`give a whole number${min > 0 ? ` of at least ${min}` : ''}, such as 20`)
  return Number(t)
}

/** A duration in ms from "7d", "12h", "30m", "45s", "0" (the `ms` package). A bare number other than 0 is refused (no unit). */
export function parseDuration (s: string): number {
  const t = s.trim()
  const n = t === '0' ? 0 : /^\d+(\.\d+)?$/.test(t) ? NaN : ms(t as ms.StringValue)
  if (typeof n !== 'number' || !Number.isFinite(n) || n < 0) throw new InvalidArgumentError('give a number with a unit such as 7d, 12h, 30m or 45s (0 for none)')
  return n
}

/**
 * A checkpoint id as the user typed it ("3" or "#3") as a number >= 1.
 * Throws CliError otherwise, also for blanks around it (" 2": a quoting
 * slip in a script is refused rather than guessed, since restore changes
 * the workspace).
 */
export function parseId (s: string): number {
  const m = /^#?(\d+)$/.exec(s)
  if (!m || !Number.isSafeInteger(Number(m[1])) || Number(m[1]) < 1) throw new CliError(`"${s}" is not a checkpoint id: ids are numbers from 1 (optionally after #, no blanks), as shown by rewindfs log`)
  return Number(m[1])
}

/** The reserve in bytes from $REWINDFS_RESERVE (a size, as parseSize reads it), or undefined for the default; throws CliError when it is not a size. */
export function envReserve (): number | undefined {
  const v = process.env.REWINDFS_RESERVE
  if (v === undefined || v === '') return undefined
  try { return parseSize(v) } catch (e) {
    throw new CliError(`REWINDFS_RESERVE="${v}" is not a size: ${(e as Error).message} (or unset it for the default 64MB)`)
  }
}
