// deno-lint-ignore-file no-console -- a benchmark reports on the console
/**
 * `deno task bench:load`: the real server under simulated agents (see `tests/_load.ts`;
 * each sends a metrics frame every 200 ms and a logs frame every 250 ms, as the SDK and the
 * agent do, and keeps at most 16 frames unacknowledged, as the agent does). The agents run in
 * a generator process of their own (`bench/load_generator.ts`), apart from the server and from
 * this process, which measures: each step's line gives, beside its results, the server's and
 * the generator's CPU (% of one core), the machine's load average at its start and end, and
 * `GET /api/status` answer times (p95, polled every 500 ms from here) with how far behind the
 * server said it was.
 *
 * 1. Steady: `--agents` (default 100) × `--points` (default 500) points/s, `--lines` (default
 *    2,000) log lines/s in all, `--sse` readers (default 5), for `--duration-s` (default 600),
 *    reported every `--report-s` (default 60) and in all; then the ledgers against the store.
 * 2. The knee, on a fresh server: from `--knee-from` points/s an agent (default 100), ×1.5 a
 *    step of `--step-s` (default 30) with the same agents and lines, each step once the last
 *    one's frames are acked, until p99 ingest-to-commit passes 1 s twice in a row at one rate
 *    (once may be a stall of the machine). `--duration-s 0` skips the steady part.
 *
 * `--busy`: a CPU hog (a busy loop) on one core beside the server throughout.
 * Flags: --duration-s N, --report-s N, --step-s N, --agents N, --points N, --lines N, --sse N,
 * --knee-from N, --no-knee, --busy.
 */
import { parseArgs } from "node:util";
import type { LoadOptions, PhaseResult } from "../tests/_load.ts";
import { percentile } from "../tests/_load.ts";

const { values } = parseArgs({
  options: {
    "duration-s": { type: "string", default: "600" },
    "report-s": { type: "string", default: "60" },
    "step-s": { type: "string", default: "30" },
    agents: { type: "string", default: "100" },
    points: { type: "string", default: "500" },
    lines: { type: "string", default: "2000" },
    sse: { type: "string", default: "5" },
    "knee-from": { type: "string", default: "100" },
    "no-knee": { type: "boolean", default: false },
    busy: { type: "boolean", default: false },
  },
});
const durationS = Number(values["duration-s"]);
const reportS = Math.max(1, Math.min(Number(values["report-s"]), durationS || Infinity));
const stepS = Number(values["step-s"]);
const points = Number(values.points);
const options: LoadOptions = {
  agents: Number(values.agents),
  pointsPerAgent: points,
  linesPerS: Number(values.lines),
  sseReaders: Number(values.sse),
  silentSse: 0,
  // What real agents and servers use: heartbeats every 10 s, OFFLINE after 90 s of silence.
  heartbeatS: 10,
  nodeTimeoutS: 90,
};
const TICKS_PER_S = 100; // USER_HZ on Linux

/** A process's CPU time so far (s), from /proc; NaN once it is gone. */
function cpuSeconds(pid: number): number {
  try {
    const stat = Deno.readTextFileSync(`/proc/${pid}/stat`);
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return (Number(fields[11]) + Number(fields[12])) / TICKS_PER_S;
  } catch {
    return NaN;
  }
}

/** A number of ms for a report line ("–" when there is none: NaN crosses JSON as null). */
const ms = (x: number | null) => (x === null || !Number.isFinite(x) ? "–" : x.toFixed(0));

const loadavg = () => Deno.loadavg().map((x) => x.toFixed(1)).join(" ");

/** The generator process: commands in, one JSON answer a line out. */
class Generator {
  #child: Deno.ChildProcess;
  #writer: WritableStreamDefaultWriter<Uint8Array>;
  #lines: AsyncIterator<string>;

  constructor(opts: LoadOptions) {
    this.#child = new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "-A",
        new URL("./load_generator.ts", import.meta.url).pathname,
        JSON.stringify(opts),
      ],
      stdin: "piped",
      stdout: "piped",
      stderr: "inherit",
    }).spawn();
    this.#writer = this.#child.stdin.getWriter();
    let buffer = "";
    this.#lines = this.#child.stdout.pipeThrough(new TextDecoderStream()).pipeThrough(
      new TransformStream<string, string>({
        transform(chunk, c) {
          buffer += chunk;
          let at: number;
          while ((at = buffer.indexOf("\n")) >= 0) {
            c.enqueue(buffer.slice(0, at));
            buffer = buffer.slice(at + 1);
          }
        },
      }),
    )[Symbol.asyncIterator]();
  }

  get pid(): number {
    return this.#child.pid;
  }

  // deno-lint-ignore no-explicit-any
  async ask(cmd: Record<string, unknown>): Promise<any> {
    await this.#writer.write(new TextEncoder().encode(JSON.stringify(cmd) + "\n"));
    const next = await this.#lines.next();
    if (next.done) throw new Error("the generator exited");
    const answer = JSON.parse(next.value);
    if (answer.error) throw new Error(`generator: ${answer.error}`);
    return answer;
  }

  async stop(): Promise<void> {
    try {
      await this.ask({ cmd: "stop" });
    } finally {
      await this.#writer.close().catch(() => {});
      await this.#child.status;
    }
  }
}

/** Polls GET /api/status every 500 ms while started: answer times and how far behind. */
function statusProbe(url: string, token: string) {
  const times: number[] = [];
  let behindMax = 0;
  let running = true;
  const loop = (async () => {
    while (running) {
      const t = performance.now();
      try {
        const res = await fetch(`${url}/api/status`, {
          headers: { authorization: `Bearer ${token}` },
        });
        const body = await res.json();
        times.push(performance.now() - t);
        behindMax = Math.max(behindMax, body.ingest?.behind_s ?? 0);
      } catch {
        times.push(performance.now() - t);
      }
      await new Promise((r) => setTimeout(r, 500));
    }
  })();
  return {
    async stop() {
      running = false;
      await loop;
      return { p95: percentile(times, 0.95), n: times.length, behindMax };
    },
  };
}

/** Runs one measured step and prints its line: results and the conditions they were had in. */
async function step(
  gen: Generator,
  ready: { server_pid: number; url: string; admin_token: string },
  hogPid: number | null,
  name: string,
  seconds: number,
  perAgent: number,
): Promise<PhaseResult> {
  const load0 = loadavg();
  const t0 = performance.now();
  const cpu0 = [cpuSeconds(ready.server_pid), cpuSeconds(gen.pid), hogPid ? cpuSeconds(hogPid) : 0];
  const probe = statusProbe(ready.url, ready.admin_token);
  const r: PhaseResult = await gen.ask({ cmd: "phase", seconds, points: perAgent });
  const status = await probe.stop();
  const wall = (performance.now() - t0) / 1000;
  const cpu1 = [cpuSeconds(ready.server_pid), cpuSeconds(gen.pid), hogPid ? cpuSeconds(hogPid) : 0];
  const pct = (i: number) => `${(((cpu1[i] - cpu0[i]) / wall) * 100).toFixed(0)}%`;
  const s = await gen.ask({ cmd: "stats" });
  console.log(
    `${name}: ${r.agents} agents, ${r.sentPointsPerS.toFixed(0)} points/s sent ` +
      `(${r.targetPointsPerS.toFixed(0)} asked), ${r.sentLinesPerS.toFixed(0)} lines/s, ` +
      `${r.seconds.toFixed(0)} s | ingest-to-commit p50 ${ms(r.ingestP50Ms)} ms ` +
      `p99 ${ms(r.ingestP99Ms)} ms | SSE lag p99 ${ms(r.sseP99Ms)} ms | ` +
      `status p95 ${ms(status.p95)} ms (${status.n}), behind ≤ ${status.behindMax} s | ` +
      `unacked at end ${r.unacked} | server CPU ${pct(0)}, RSS max ${s.rssMaxMb.toFixed(0)} MB | ` +
      `generator CPU ${pct(1)}${hogPid ? ` | hog CPU ${pct(2)}` : ""} | ` +
      `load avg ${load0} → ${loadavg()}`,
  );
  return r;
}

console.log(
  `machine: ${navigator.hardwareConcurrency} cores, load average ${loadavg()}; ` +
    `${new Date().toISOString()}${values.busy ? "; busy: a CPU hog on one core" : ""}`,
);
const hog = values.busy
  ? new Deno.Command(Deno.execPath(), {
    args: ["eval", "for (;;) {}"],
    stdout: "null",
    stderr: "null",
  })
    .spawn()
  : null;
try {
  if (durationS > 0) {
    const gen = new Generator(options);
    try {
      const ready = await gen.ask({ cmd: "ready" });
      const all: PhaseResult[] = [];
      for (let done = 0, i = 1; done < durationS; done += reportS, i++) {
        const seconds = Math.min(reportS, durationS - done);
        all.push(await step(gen, ready, hog?.pid ?? null, `steady ${i}`, seconds, points));
      }
      const worst = all.reduce((a, b) => (b.ingestP99Ms > a.ingestP99Ms ? b : a));
      console.log(
        `steady: ${durationS} s; worst report p99 ${ms(worst.ingestP99Ms)} ms, SSE p99 ` +
          `${ms(Math.max(...all.map((x) => x.sseP99Ms ?? NaN)))} ms`,
      );
      const v = await gen.ask({ cmd: "verify" });
      const s = await gen.ask({ cmd: "stats" });
      console.log(
        `ledgers: ${v.points} points and ${v.lines} lines from ${v.agents} agents; ${
          v.lost.length === 0
            ? "every one stored once"
            : `${v.lost.length} differ (${v.unacked} frames still unacked)`
        }; server RSS max ${s.rssMaxMb.toFixed(0)} MB, WAL max ${s.walMaxMb.toFixed(1)} MB, ` +
          `nodes seen OFFLINE while connected: ${s.falseOffline}`,
      );
    } finally {
      await gen.stop();
    }
  }

  if (!values["no-knee"]) {
    const gen = new Generator(options);
    try {
      const ready = await gen.ask({ cmd: "ready" });
      let rate = Number(values["knee-from"]);
      let last: PhaseResult | null = null;
      let retried = false;
      for (;;) {
        const r = await step(gen, ready, hog?.pid ?? null, `knee ${rate}/agent`, stepS, rate);
        if (r.ingestP99Ms > 1000 && !retried) {
          // Once more at the same rate: a stall of this shared machine is not the knee.
          retried = true;
          continue;
        }
        if (r.ingestP99Ms > 1000) {
          console.log(
            `knee: p99 passed 1 s at ${r.sentPointsPerS.toFixed(0)} points/s from ${r.agents} ` +
              `agents; ` +
              (last
                ? `the last step under it: ${last.sentPointsPerS.toFixed(0)} points/s (p99 ${
                  last.ingestP99Ms.toFixed(0)
                } ms)`
                : "no step was under it"),
          );
          break;
        }
        last = r;
        retried = false;
        rate = Math.round(rate * 1.5);
      }
      const s = await gen.ask({ cmd: "stats" });
      console.log(
        `knee search: server RSS max ${s.rssMaxMb.toFixed(0)} MB, WAL max ${
          s.walMaxMb.toFixed(1)
        } MB, nodes seen OFFLINE while connected: ${s.falseOffline}`,
      );
    } finally {
      await gen.stop();
    }
  }
} finally {
  if (hog) {
    hog.kill("SIGKILL");
    await hog.status;
  }
}
