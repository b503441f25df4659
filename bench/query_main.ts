/**
 * `deno task bench:query`: only the `metrics:query` rows of `deno task bench`, printed as they
 * come, so a change to how series are read can be measured on its own.
 */
import { benchQuery } from "./query.ts";
import { BenchReport } from "./report.ts";

const dir = await Deno.makeTempDir({ prefix: "gpuctl-bench-query-" });
const bench = new BenchReport();
try {
  await benchQuery(bench.add, dir);
} finally {
  await Deno.remove(dir, { recursive: true });
}
// deno-lint-ignore no-console -- a benchmark reports on the console
console.log(`\n${bench.table()}`);
