/**
 * What the run page's tabs share: tab labels and links, a chart of one series, text with
 * `backticked` parts, a key–value table.
 */
import { Island } from "../../components/island.tsx";
import ChartPanel from "../../islands/ChartPanel.tsx";
import { runColor } from "../../islands/_format.ts";
import {
  CHART_POINTS,
  type ChartSeries,
  type RunDetail,
  type RunTab,
} from "../../server/console/run_detail.ts";

export const TAB_LABEL: Record<RunTab, string> = {
  overview: "Overview",
  metrics: "Metrics",
  checkpoints: "Checkpoints",
  evaluations: "Evaluations",
  events: "Events",
  code: "Code",
};

export const runHref = (id: string, tab?: RunTab) =>
  `/runs/${encodeURIComponent(id)}${tab && tab !== "overview" ? `?tab=${tab}` : ""}`;

export function Chart({ d, s, tall }: { d: RunDetail; s: ChartSeries; tall?: boolean }) {
  return (
    <Island
      component={ChartPanel}
      props={{
        metric: s.key,
        direction: s.direction,
        primary: s.key === d.run.primary_metric?.key,
        runs: [{
          id: d.run.id,
          label: d.run.name ?? d.run.id,
          color: runColor(d.run.id),
          live: d.live,
        }],
        series: [s.series],
        maxPoints: CHART_POINTS,
        tall: tall ?? false,
      }}
    />
  );
}

/** Text with `backticked` parts in monospace (as text, never markup). */
export function Ticks({ text }: { text: string }) {
  return <>{text.split("`").map((part, i) => i % 2 ? <code key={i}>{part}</code> : part)}</>;
}

export function Kv({ obj, empty }: { obj: Record<string, unknown>; empty: string }) {
  const entries = Object.entries(obj ?? {});
  if (!entries.length) return <p class="muted">{empty}</p>;
  return (
    <dl class="kv">
      {entries.map(([k, v]) => (
        <>
          <dt>{k}</dt>
          <dd>{typeof v === "string" ? v : JSON.stringify(v)}</dd>
        </>
      ))}
    </dl>
  );
}
