/**
 * A running run's progress, large: step / max_steps with a bar, the rate and time left as the
 * diagnosis estimates them, and its status, read again as the run moves.
 */
import { fmtDuration, fmtProgress, progressFraction } from "./_format.ts";
import { type LiveEvent, useJson } from "./_live.ts";
import { Bar, StatusBadge } from "./_ui.tsx";

export interface RunProgressView {
  status: string;
  progress: { step: number | null; max_steps: number | null };
  rate: { steps_per_s: number } | null;
  eta: { seconds: number; at: string } | null;
}

export interface RunProgressProps {
  runId: string;
  initial: RunProgressView;
}

export default function RunProgress({ runId, initial }: RunProgressProps) {
  const d = useJson<RunProgressView>(
    `/api/runs/${encodeURIComponent(runId)}/diagnosis`,
    initial,
    { refreshOn: (e: LiveEvent) => e.run_id === runId, everyMs: 3_000 },
  );
  const { step, max_steps } = d.progress;
  const fraction = progressFraction(step, max_steps);
  return (
    <div class="big-progress" data-status={d.status}>
      <Bar fraction={fraction} />
      <span class="nums">{fmtProgress(step, max_steps)}</span>
      <span class="muted small">
        <StatusBadge status={d.status} />
        {fraction !== null && ` ${Math.round(fraction * 100)}%`}
        {d.rate && ` · ${d.rate.steps_per_s.toFixed(2)} steps/s`}
        {d.eta && ` · about ${fmtDuration(d.eta.seconds)} left`}
      </span>
    </div>
  );
}
