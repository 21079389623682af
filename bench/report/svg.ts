/**
 * Plain SVG charts for the benchmark report (no browser, no canvas): scales
 * and ticks from d3-scale, the markup written here. Every series is one
 * `<g class="series" data-series="NAME">` so a reader (and test/bench-report)
 * can find each mode's data; every value also appears in a `<title>`.
 */
import { scaleBand, scaleLinear, scaleLog, scalePoint } from 'd3-scale'

/** Colours per series index (Okabe & Ito 2008 colour-blind-safe palette, then greys). */
export const PALETTE = ['#000000', '#E69F00', '#56B4E9', '#009E73', '#D55E00', '#0072B2', '#CC79A7', '#F0E442', '#777777', '#BBBBBB']

/** Escapes text for XML content and attribute values. */
export function esc (s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;')
}

const num = (x: number): string => Number.isFinite(x) ? (Math.abs(x) >= 100 ? x.toFixed(0) : Math.abs(x) >= 10 ? x.toFixed(1) : x.toFixed(2)) : '–'

function frame (w: number, h: number, title: string, body: string): string {
  return `<?xml version="1.0" encoding="UTF-8"?>\n<svg xmlns="http://www.w3.org/2000/svg" width="${w}" height="${h}" viewBox="0 0 ${w} ${h}" font-family="sans-serif" font-size="12">\n` +
    `<rect width="${w}" height="${h}" fill="#ffffff"/>\n<text x="${w / 2}" y="20" text-anchor="middle" font-size="14" font-weight="bold">${esc(title)}</text>\n${body}</svg>\n`
}

/** One bar of a bar chart: a value with an optional spread (lo..hi). */
export interface Bar { series: string, value: number, lo?: number, hi?: number, note?: string }

/**
 * Horizontal bar chart, one bar per series (e.g. session time per mode),
 * with the spread drawn as a whisker. `unit` labels the axis.
 */
export function barChart (title: string, unit: string, bars: Bar[]): string {
  const w = 760; const rowH = 28; const left = 150; const right = 90; const top = 40
  const h = top + bars.length * rowH + 50
  const max = Math.max(1e-9, ...bars.map(b => Math.max(b.value, b.hi ?? 0)).filter(Number.isFinite))
  const x = scaleLinear().domain([0, max]).nice().range([left, w - right])
  const y = scaleBand<string>().domain(bars.map(b => b.series)).range([top, top + bars.length * rowH]).padding(0.25)
  let body = `<g class="axis">` + x.ticks(6).map(t => `<line x1="${x(t)}" x2="${x(t)}" y1="${top}" y2="${top + bars.length * rowH}" stroke="#dddddd"/><text x="${x(t)}" y="${top + bars.length * rowH + 16}" text-anchor="middle">${t}</text>`).join('') +
    `<text x="${(left + w - right) / 2}" y="${h - 10}" text-anchor="middle">${esc(unit)}</text></g>\n`
  bars.forEach((b, i) => {
    const yy = y(b.series)!; const bh = y.bandwidth()
    const colour = PALETTE[i % PALETTE.length]
    const v = Number.isFinite(b.value) ? b.value : 0
    body += `<g class="series" data-series="${esc(b.series)}"><title>${esc(b.series)}: ${num(b.value)} ${esc(unit)}${b.lo !== undefined ? ` (IQR ${num(b.lo)}–${num(b.hi ?? NaN)})` : ''}</title>` +
      `<text x="${left - 6}" y="${yy + bh / 2 + 4}" text-anchor="end">${esc(b.series)}</text>` +
      `<rect x="${left}" y="${yy}" width="${Math.max(0, x(v) - left)}" height="${bh}" fill="${colour}" fill-opacity="0.8"/>` +
      (b.lo !== undefined && b.hi !== undefined && Number.isFinite(b.lo) && Number.isFinite(b.hi)
        ? `<line x1="${x(b.lo)}" x2="${x(b.hi)}" y1="${yy + bh / 2}" y2="${yy + bh / 2}" stroke="#333333" stroke-width="2"/>`
        : '') +
      `<text x="${x(v) + 6}" y="${yy + bh / 2 + 4}">${Number.isFinite(b.value) ? num(b.value) : (b.note ?? 'n/a')}</text></g>\n`
  })
  return frame(w, h, title, body)
}

/** A line series over categorical x (e.g. steps) or numeric x (e.g. files). */
export interface Series { name: string, points: Array<{ x: string | number, y: number }>, dashed?: boolean }

/**
 * Line chart over categories (`categories` in order) with a log y axis
 * (ratios to native: 1 is drawn as a reference line).
 */
export function categoryLineChart (title: string, yLabel: string, categories: string[], series: Series[], reference = 1): string {
  const w = 900; const left = 60; const right = 140; const top = 40; const bottom = 150
  const h = 520
  const ys = series.flatMap(s => s.points.map(p => p.y)).filter(v => Number.isFinite(v) && v > 0)
  const lo = Math.min(reference, ...ys) * 0.8; const hi = Math.max(reference, ...ys) * 1.25
  const x = scalePoint<string>().domain(categories).range([left, w - right]).padding(0.5)
  const y = scaleLog().domain([lo, hi]).range([h - bottom, top]).nice()
  let body = `<g class="axis">` + y.ticks(8).map(t => `<line x1="${left}" x2="${w - right}" y1="${y(t)}" y2="${y(t)}" stroke="#eeeeee"/><text x="${left - 6}" y="${y(t) + 4}" text-anchor="end">${num(t)}</text>`).join('') +
    `<line x1="${left}" x2="${w - right}" y1="${y(reference)}" y2="${y(reference)}" stroke="#999999" stroke-dasharray="4 3"/>` +
    categories.map(c => `<text transform="translate(${x(c)},${h - bottom + 12}) rotate(50)" text-anchor="start" font-size="11">${esc(c)}</text>`).join('') +
    `<text transform="translate(16,${(top + h - bottom) / 2}) rotate(-90)" text-anchor="middle">${esc(yLabel)}</text></g>\n`
  series.forEach((s, i) => {
    const colour = PALETTE[(i + 1) % PALETTE.length]
    const pts = s.points.filter(p => Number.isFinite(p.y) && p.y > 0 && x(String(p.x)) !== undefined)
    body += `<g class="series" data-series="${esc(s.name)}">` +
      `<polyline fill="none" stroke="${colour}" stroke-width="2" points="${pts.map(p => `${x(String(p.x))},${y(p.y)}`).join(' ')}"/>` +
      pts.map(p => `<circle cx="${x(String(p.x))}" cy="${y(p.y)}" r="3" fill="${colour}"><title>${esc(s.name)}, ${esc(String(p.x))}: ${num(p.y)}</title></circle>`).join('') +
      `<text x="${w - right + 10}" y="${top + 16 * i + 10}" fill="${colour}">${esc(s.name)}</text></g>\n`
  })
  return frame(w, h, title, body)
}

/** Line chart with log x and log y axes (latency against workspace size). */
export function logLogChart (title: string, xLabel: string, yLabel: string, series: Series[]): string {
  const w = 760; const left = 70; const right = 170; const top = 40; const bottom = 50
  const h = 440
  const xs = series.flatMap(s => s.points.map(p => Number(p.x))).filter(v => v > 0)
  const ys = series.flatMap(s => s.points.map(p => p.y)).filter(v => Number.isFinite(v) && v > 0)
  const x = scaleLog().domain([Math.min(...xs, 1), Math.max(...xs, 10)]).range([left, w - right])
  const y = scaleLog().domain([Math.min(...ys, 1) * 0.8, Math.max(...ys, 10) * 1.25]).range([h - bottom, top]).nice()
  let body = `<g class="axis">` +
    y.ticks(6).map(t => `<line x1="${left}" x2="${w - right}" y1="${y(t)}" y2="${y(t)}" stroke="#eeeeee"/><text x="${left - 6}" y="${y(t) + 4}" text-anchor="end">${num(t)}</text>`).join('') +
    [...new Set(xs)].sort((a, b) => a - b).map(t => `<text x="${x(t)}" y="${h - bottom + 16}" text-anchor="middle">${t.toLocaleString('en-US')}</text>`).join('') +
    `<text x="${(left + w - right) / 2}" y="${h - 10}" text-anchor="middle">${esc(xLabel)}</text>` +
    `<text transform="translate(16,${(top + h - bottom) / 2}) rotate(-90)" text-anchor="middle">${esc(yLabel)}</text></g>\n`
  series.forEach((s, i) => {
    const colour = PALETTE[i % PALETTE.length]
    const pts = s.points.filter(p => Number(p.x) > 0 && Number.isFinite(p.y) && p.y > 0)
    body += `<g class="series" data-series="${esc(s.name)}">` +
      `<polyline fill="none" stroke="${colour}" stroke-width="2"${s.dashed ? ' stroke-dasharray="5 4"' : ''} points="${pts.map(p => `${x(Number(p.x))},${y(p.y)}`).join(' ')}"/>` +
      pts.map(p => `<circle cx="${x(Number(p.x))}" cy="${y(p.y)}" r="3" fill="${colour}"><title>${esc(s.name)}, ${Number(p.x).toLocaleString('en-US')}: ${num(p.y)}</title></circle>`).join('') +
      `<text x="${w - right + 10}" y="${top + 16 * i + 10}" fill="${colour}">${esc(s.name)}</text></g>\n`
  })
  return frame(w, h, title, body)
}
