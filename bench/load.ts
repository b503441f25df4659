// deno-lint-ignore-file no-console -- a benchmark reports on the console
/**
 * `deno task bench:load`: the real server under simulated agents (see `tests/_load.ts`;
 * each sends a metrics frame every 200 ms and a logs frame every 250 ms, as the SDK and the
 * agent do).
 *
 * 1. Steady: 50 agents × 200 points/s, 1,000 log lines/s in all, 5 SSE readers, for
 *    `--duration-s` (default 600): p50/p99 ingest-to-commit, SSE lag, server RSS, WAL size,
 *    nodes seen OFFLINE while connected, and each agent's ledger against the store.
 * 2. The knee, on a fresh server: from `--knee-from` points/s an agent (default 20), ×1.5 a
 *    step of `--step-s` (default 30) with the same agents and lines, each step once the last
 *    one's frames are acked, until p99 ingest-to-commit passes 1 s twice in a row at one rate
 *    (once may be a stall of the machine). `--duration-s 0` skips the steady part.
 *
 * Flags: --duration-s N, --step-s N, --agents N, --points N (per agent a second),
 * --lines N (a second, in all), --sse N, --knee-from N, --no-knee.
 */
import { parseArgs } from "node:util";
import { type LoadOptions, type PhaseResult, startLoad } from "../tests/_load.ts";

const { values } = parseArgs({
  options: {
    "duration-s": { type: "string", default: "600" },
    "step-s": { type: "string", default: "30" },
    agents: { type: "string", default: "50" },
    points: { type: "string", default: "200" },
    lines: { type: "string", default: "1000" },
    sse: { type: "string", default: "5" },
    "knee-from": { type: "string", default: "20" },
    "no-knee": { type: "boolean", default: false },
  },
});
const durationS = Number(values["duration-s"]);
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

const row = (name: string, r: PhaseResult) =>
  `${name}: ${r.agents} agents, ${r.targetPointsPerS.toFixed(0)} points/s asked, ${
    r.sentPointsPerS.toFixed(0)
  } sent, ${r.sentLinesPerS.toFixed(0)} lines/s; ingest-to-commit p50 ${
    r.ingestP50Ms.toFixed(0)
  } ms, p99 ${r.ingestP99Ms.toFixed(0)} ms; SSE lag p99 ${r.sseP99Ms.toFixed(0)} ms (${
    r.seconds.toFixed(0)
  } s, ${r.frames} frames, ${r.unacked} unacked at the end)`;

console.log(`machine: ${navigator.hardwareConcurrency} cores; ${new Date().toISOString()}`);
const steadyLoad = durationS > 0 ? await startLoad(options) : null;
if (steadyLoad) {
  try {
    const steady = await steadyLoad.phase(durationS, points);
    const s = steadyLoad.stats();
    console.log(row("steady", steady));
    console.log(
      `server RSS max ${s.rssMaxMb.toFixed(0)} MB (now ${s.rssNowMb.toFixed(0)} MB), WAL max ${
        s.walMaxMb.toFixed(1)
      } MB, nodes seen OFFLINE while connected: ${s.falseOffline}`,
    );
    const v = await steadyLoad.verify();
    console.log(
      `ledgers: ${v.points} points and ${v.lines} lines from ${v.agents} agents; ${
        v.lost.length === 0
          ? "every one stored once"
          : `${v.lost.length} differ (${v.unacked} frames still unacked)`
      }`,
    );
  } finally {
    await steadyLoad.stop();
  }
}

if (!values["no-knee"]) {
  const kneeLoad = await startLoad({ ...options, sseReaders: Number(values.sse) });
  try {
    let rate = Number(values["knee-from"]);
    let last: PhaseResult | null = null;
    let retried = false;
    for (;;) {
      const r = await kneeLoad.phase(stepS, rate);
      console.log(row(`step ${rate}/agent`, r));
      if (r.ingestP99Ms > 1000 && !retried) {
        // Once more at the same rate: a stall of this shared machine is not the knee.
        retried = true;
        continue;
      }
      if (r.ingestP99Ms > 1000) {
        console.log(
          `knee: p99 passed 1 s at ${
            r.sentPointsPerS.toFixed(0)
          } points/s from ${r.agents} agents; ` +
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
    const s = kneeLoad.stats();
    console.log(
      `knee search: server RSS max ${s.rssMaxMb.toFixed(0)} MB, WAL max ${
        s.walMaxMb.toFixed(1)
      } MB, nodes seen OFFLINE while connected: ${s.falseOffline}`,
    );
  } finally {
    await kneeLoad.stop();
  }
}
