/** Colours per series index (Okabe & Ito 2008 colour-blind-safe palette, then greys). */
export declare const PALETTE: string[];
/** Escapes text for XML content and attribute values. */
export declare function esc(s: string): string;
/** One bar of a bar chart: a value with an optional spread (lo..hi). */
export interface Bar {
    series: string;
    value: number;
    lo?: number;
    hi?: number;
    note?: string;
}
/**
 * Horizontal bar chart, one bar per series (e.g. session time per mode),
 * with the spread drawn as a whisker. `unit` labels the axis.
 */
export declare function barChart(title: string, unit: string, bars: Bar[]): string;
/** A line series over categorical x (e.g. steps) or numeric x (e.g. files). */
export interface Series {
    name: string;
    points: Array<{
        x: string | number;
        y: number;
    }>;
    dashed?: boolean;
}
/**
 * Line chart over categories (`categories` in order) with a log y axis
 * (ratios to native: 1 is drawn as a reference line).
 */
export declare function categoryLineChart(title: string, yLabel: string, categories: string[], series: Series[], reference?: number): string;
/** Line chart with log x and log y axes (latency against workspace size). */
export declare function logLogChart(title: string, xLabel: string, yLabel: string, series: Series[]): string;
