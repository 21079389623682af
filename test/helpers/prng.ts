/** A small seeded PRNG (mulberry32) and helpers for property tests. Deterministic for a given seed. */
export class Prng {
  private s: number
  constructor (readonly seed: number) { this.s = seed >>> 0 }
  /** uniform in [0, 1) */
  next (): number {
    let t = (this.s = (this.s + 0x6d2b79f5) >>> 0)
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }

  /** integer in [0, n) */
  int (n: number): number { return Math.floor(this.next() * n) }
  /** integer in [lo, hi] */
  range (lo: number, hi: number): number { return lo + this.int(hi - lo + 1) }
  pick<T> (xs: readonly T[]): T { return xs[this.int(xs.length)] }
  chance (p: number): boolean { return this.next() < p }
  /** n bytes: random, a repeated pattern, or zeros (so holes and dedup get exercised too) */
  bytes (n: number): Buffer {
    const b = Buffer.alloc(n)
    const kind = this.int(6)
    if (kind === 0) return b
    if (kind === 1) { const v = this.int(256); b.fill(v); return b }
    for (let i = 0; i < n; i += 4) {
      const v = (this.next() * 4294967296) >>> 0
      b[i] = v & 255
      if (i + 1 < n) b[i + 1] = (v >>> 8) & 255
      if (i + 2 < n) b[i + 2] = (v >>> 16) & 255
      if (i + 3 < n) b[i + 3] = v >>> 24
    }
    return b
  }
}
