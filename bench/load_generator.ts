/**
 * The load bench's generator, in a process of its own (so that its CPU is measured apart from
 * the server's and the bench's): `deno run -A bench/load_generator.ts '<LoadOptions JSON>'`
 * starts the server and the simulated agents (`tests/_load.ts`), then answers commands read
 * from stdin, one JSON object a line, with one JSON line each on stdout:
 *
 * - `{"cmd": "ready"}` → `{server_pid, url, admin_token}`
 * - `{"cmd": "phase", "seconds": N, "points": N}` → the phase's `PhaseResult`
 * - `{"cmd": "verify"}` → the ledgers; `{"cmd": "stats"}` → RSS, WAL, OFFLINE counts
 * - `{"cmd": "stop"}` → `{}` once the server is stopped, then exits.
 */
import { type LoadOptions, startLoad } from "../tests/_load.ts";

const options = JSON.parse(Deno.args[0]) as LoadOptions;
const load = await startLoad(options);
const encoder = new TextEncoder();
const answer = (x: unknown) => Deno.stdout.writeSync(encoder.encode(JSON.stringify(x) + "\n"));

let buffer = "";
const decoder = new TextDecoder();
outer: for await (const chunk of Deno.stdin.readable) {
  buffer += decoder.decode(chunk, { stream: true });
  let at: number;
  while ((at = buffer.indexOf("\n")) >= 0) {
    const line = buffer.slice(0, at);
    buffer = buffer.slice(at + 1);
    const c = JSON.parse(line);
    try {
      if (c.cmd === "ready") {
        answer({ server_pid: load.serverPid, url: load.url, admin_token: load.adminToken });
      } else if (c.cmd === "phase") answer(await load.phase(c.seconds, c.points));
      else if (c.cmd === "verify") answer(await load.verify());
      else if (c.cmd === "stats") answer(load.stats());
      else if (c.cmd === "stop") {
        await load.stop();
        answer({});
        break outer;
      }
    } catch (err) {
      answer({ error: String((err as Error)?.stack ?? err) });
    }
  }
}
Deno.exit(0);
