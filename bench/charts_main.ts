/**
 * `deno task bench:charts`: only the chart rows of `deno task bench` (20 runs × 2,000 points
 * drawn, a smoothing change, the Experiment workspace), printed as they come. Each row keeps
 * its baseline from the same run, so a change to the charts can be measured on its own.
 */
import { benchCharts } from "./charts.ts";
import { BenchReport } from "./report.ts";

const bench = new BenchReport();
await benchCharts(bench.add);
// deno-lint-ignore no-console -- a benchmark reports on the console
console.log(`\n${bench.table()}`);
