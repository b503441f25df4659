// deno-lint-ignore-file no-console -- `deno task demo` talks to the person who started it
/**
 * `deno task demo [--port N] [--home DIR]`: gpuctl with four fake GPUs, filled like a small
 * lab's day, so every console page has something to show. Ctrl-C stops it.
 */
import { parseArgs } from "node:util";
import { startDemo } from "./server.ts";

if (import.meta.main) {
  const { values } = parseArgs({
    args: Deno.args,
    options: { port: { type: "string", default: "8600" }, home: { type: "string" } },
  });
  const home = values.home ?? await Deno.makeTempDir({ prefix: "gpuctl-demo-" });
  const demo = await startDemo({ home, port: Number(values.port), quiet: true });
  console.log(
    `\ngpuctl demo: ${demo.url}/\n  sign in with the admin token: ${demo.adminToken}\n` +
      `  GPUCTL_HOME=${home}\n  jobs: a finished baseline, an lr sweep (running), an OOM ` +
      "failure, a 2-GPU job waiting in the queue\nCtrl-C stops it.",
  );
  const stop = async () => {
    await demo.stop();
    Deno.exit(0);
  };
  Deno.addSignalListener("SIGINT", stop);
  Deno.addSignalListener("SIGTERM", stop);
}
