// deno-lint-ignore-file no-console -- a benchmark reports on the console
/**
 * `deno task bench:load`: the real server under simulated agents (see `tests/_load.ts`).
 *
 * 1. Steady: 50 agents × 200 points/s, 1,000 log lines/s in all, 5 SSE readers, for
 *    `--duration-s` (default 600): p50/p99 ingest-to-commit, SSE lag, server RSS, WAL size,
 *    nodes seen OFFLINE while connected, and each agent's ledger against the store.
 * 2. The knee: the points rate raised ×1.5 a step (`--step-s` each, default 30) until p99
 *    ingest-to-commit passes 1 s, or the load generator itself falls behind.
 *
 * Flags: --duration-s N, --step-s N, --agents N, --points N (per agent a second),
 * --lines N (a second, in all), --sse N, --no-knee.
 */
import { parseArgs } from "node:util";
import { type PhaseResult, startLoad } from "../tests/_load.ts";

const { values } = parseArgs({
  options: {
    "duration-s": { type: "string", default: "600" },
    "step-s": { type: "string", default: "30" },
    agents: { type: "string", default: "50" },
    points: { type: "string", default: "200" },
    lines: { type: "string", default: "1000" },
    sse: { type: "string", default: "5" },
    "no-knee": { type: "boolean", default: false },
  },
});
const durationS = Number(values["duration-s"]);
const stepS = Number(values["step-s"]);
const agents = Number(values.agents);
const points = Number(values.points);

const row = (name: string, r: PhaseResult) =>
  `${name}: ${r.agents} agents, ${r.targetPointsPerS.toFixed(0)} points/s asked, ${
    r.sentPointsPerS.toFixed(0)
  } sent, ${r.sentLinesPerS.toFixed(0)} lines/s; ingest-to-commit p50 ${
    r.ingestP50Ms.toFixed(0)
  } ms, p99 ${r.ingestP99Ms.toFixed(0)} ms; SSE lag p99 ${r.sseP99Ms.toFixed(0)} ms (${
    r.seconds.toFixed(0)
  } s, ${r.frames} frames)`;

const load = await startLoad({
  agents,
  pointsPerAgent: points,
  linesPerS: Number(values.lines),
  sseReaders: Number(values.sse),
  silentSse: 0,
  // What real agents and servers use: heartbeats every 10 s, OFFLINE after 90 s of silence.
  heartbeatS: 10,
  nodeTimeoutS: 90,
});
try {
  console.log(`machine: ${navigator.hardwareConcurrency} cores; ${new Date().toISOString()}`);
  const steady = await load.phase(durationS, points);
  const s = load.stats();
  console.log(row("steady", steady));
  console.log(
    `server RSS max ${s.rssMaxMb.toFixed(0)} MB (now ${s.rssNowMb.toFixed(0)} MB), WAL max ${
      s.walMaxMb.toFixed(1)
    } MB, nodes seen OFFLINE while connected: ${s.falseOffline}`,
  );
  const v = await load.verify();
  console.log(
    `ledgers: ${v.points} points and ${v.lines} lines from ${v.agents} agents; ${
      v.lost.length === 0 ? "every one stored once" : `MISMATCH: ${v.lost.join("; ")}`
    }; ${v.unacked} frames unacked`,
  );

  if (!values["no-knee"]) {
    let rate = points;
    let last: PhaseResult | null = steady.ingestP99Ms <= 1000 ? steady : null;
    for (;;) {
      rate = Math.round(rate * 1.5);
      const r = await load.phase(stepS, rate);
      console.log(row(`step ${rate}/agent`, r));
      if (r.ingestP99Ms > 1000) {
        console.log(
          `knee: p99 passed 1 s at ${
            r.sentPointsPerS.toFixed(0)
          } points/s from ${agents} agents; ` +
            (last
              ? `the last step under it: ${last.sentPointsPerS.toFixed(0)} points/s (p99 ${
                last.ingestP99Ms.toFixed(0)
              } ms)`
              : "no step was under it"),
        );
        break;
      }
      if (r.sentPointsPerS < 0.8 * r.targetPointsPerS) {
        console.log(
          `stopped: the load generator sent ${r.sentPointsPerS.toFixed(0)} of ${
            r.targetPointsPerS.toFixed(0)
          } points/s asked (it shares the machine); p99 was still ${r.ingestP99Ms.toFixed(0)} ms`,
        );
        break;
      }
      last = r;
    }
    const after = load.stats();
    console.log(
      `after the knee search: server RSS max ${after.rssMaxMb.toFixed(0)} MB, WAL max ${
        after.walMaxMb.toFixed(1)
      } MB, nodes seen OFFLINE while connected: ${after.falseOffline}`,
    );
    const end = await load.verify();
    console.log(
      `ledgers at the end: ${end.points} points, ${end.lines} lines; ${
        end.lost.length === 0 ? "every one stored once" : `MISMATCH: ${end.lost.join("; ")}`
      }`,
    );
  }
} finally {
  await load.stop();
}
