/**
 * A learning-rate sweep of five runs logged through the SDK ingest API, for the workspace and
 * compare tests (in-process and in Chromium): `train/loss` whose level depends on `lr` (best
 * at 0.03) with a wiggle smoothing visibly flattens, `eval/accuracy` every 10 steps, and the
 * config `{lr, batch_size}` where only `lr` differs; `sys/gpu0/util` telemetry too.
 */

/** Calls the API as the admin; answers the JSON body, failing on a status of 300 or more. */
export type Call = (method: string, path: string, body?: unknown) => Promise<unknown>;

export const SWEEP_PROJECT = "vision";
export const SWEEP_EXPERIMENT = "lr-sweep";
/** The sweep's learning rates, in the order the runs are created. */
export const LRS = [0.3, 0.1, 0.03, 0.01, 0.001] as const;
/** Steps each run logs. */
export const STEPS = 100;
export const T0 = Date.parse("2026-03-01T09:00:00.000Z") / 1000;

/** Where a run's loss settles: the further `lr` is from 0.03 (in decades), the higher. */
export const lossFloor = (lr: number) => 0.2 + Math.abs(Math.log10(lr) - Math.log10(0.03));

/** The points of steps `from` up to `to` (excluded) of the run with `lr` started at `start`. */
export function points(lr: number, start: number, from = 0, to = STEPS) {
  const out: { key: string; step: number; value: number; wall_time: number }[] = [];
  for (let step = from; step < to; step++) {
    const loss = lossFloor(lr) + 2 * Math.exp(-step / 25) + 0.08 * Math.sin(step * 1.9);
    // Runs started at different times, one point every 2 s: the relative axis lines them up.
    const wall_time = start + step * 2;
    out.push({ key: "train/loss", step, value: loss, wall_time });
    if (step % 10 === 9) {
      out.push({ key: "eval/accuracy", step, value: 1 - loss / 4, wall_time });
      // Telemetry: not a panel by default, one "+ add metric panel" away.
      out.push({ key: "sys/gpu0/util", step, value: 90 + (step % 7), wall_time });
    }
  }
  return out;
}

/** When the `i`-th run of the sweep started (Unix seconds): ten minutes apart. */
export const startOf = (i: number) => T0 + i * 600;

export interface SweepSeed {
  /** The experiment's id (`/experiments/{id}`). */
  experimentId: string;
  /** Run ids in the order of `LRS`. */
  runs: string[];
  /** Run ids best first by `train/loss`. */
  ranked: string[];
}

/**
 * Logs the sweep; the last `running` runs stay RUNNING (live), the others succeed. Answers
 * the experiment's id and the runs.
 */
export async function seedSweep(call: Call, running = 1): Promise<SweepSeed> {
  const runs: string[] = [];
  for (const [i, lr] of LRS.entries()) {
    const live = i >= LRS.length - running;
    const run = await call("POST", "/api/sdk/runs", {
      project: SWEEP_PROJECT,
      experiment: SWEEP_EXPERIMENT,
      name: `lr=${lr}`,
      config: { lr, batch_size: 64 },
      // A running run is half way.
      max_steps: live ? 2 * STEPS : STEPS,
    }) as { id: string };
    await call("POST", `/api/sdk/runs/${run.id}/log`, {
      points: points(lr, startOf(i)),
      step: STEPS - 1,
      ...(live ? {} : { status: "SUCCEEDED" }),
    });
    runs.push(run.id);
  }
  const experiments = await call("GET", `/api/experiments?project=${SWEEP_PROJECT}`) as {
    items: { id: string; name: string }[];
  };
  const experimentId = experiments.items.find((e) => e.name === SWEEP_EXPERIMENT)!.id;
  const ranked = runs.map((id, i) => ({ id, floor: lossFloor(LRS[i]) }))
    .sort((a, b) => a.floor - b.floor).map((r) => r.id);
  return { experimentId, runs, ranked };
}
