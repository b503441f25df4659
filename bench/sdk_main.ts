/**
 * `deno run -A bench/sdk_main.ts`: only the Python SDK rows of `deno task bench` (a training
 * loop of 50,000 steps logging 2 metrics with the server down, next to the same loop without
 * the SDK; 200,000 `run.log()` calls in a tight loop), printed as they come.
 */
import { benchSdkOverhead } from "./cluster.ts";
import { BenchReport } from "./report.ts";

const bench = new BenchReport();
await benchSdkOverhead(bench.add);
// deno-lint-ignore no-console -- a benchmark reports on the console
console.log(`\n${bench.table()}`);
