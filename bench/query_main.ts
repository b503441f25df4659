/**
 * `deno task bench:query [RESTARTS]`: only the `metrics:query` rows of `deno task bench`,
 * printed as they come, so a change to how series are read can be measured on its own; then
 * RESTARTS (default 5) more restarts, each timed with and without block summaries.
 */
import { benchQuery } from "./query.ts";
import { BenchReport } from "./report.ts";

const dir = await Deno.makeTempDir({ prefix: "gpuctl-bench-query-" });
const bench = new BenchReport();
try {
  await benchQuery(bench.add, dir, { restarts: Number(Deno.args[0] ?? 5) });
} finally {
  await Deno.remove(dir, { recursive: true });
}
// deno-lint-ignore no-console -- a benchmark reports on the console
console.log(`\n${bench.table()}`);
