/**
 * The gpuctl agent, run on each GPU host:
 * `deno run --allow-run --allow-ffi --allow-net --allow-read --allow-write --allow-env --allow-sys agent.ts --server URL --token TOKEN`.
 * @module
 */
import { main } from "./agent/main.ts";

if (import.meta.main) Deno.exit(await main(Deno.args));
