/**
 * Small pieces every page and island draws the same way: status badges, bars, sparklines,
 * relative times, run dots. Widths and colours go in SVG attributes, never inline styles (the
 * CSP allows styles from the stylesheet only).
 */
import type { MetricDirection } from "../protocol/vocabulary.ts";
import type { ComponentChildren } from "preact";
import {
  directionArrow,
  fmtAbsolute,
  fmtProgress,
  fmtRelative,
  progressFraction,
  runColor,
  statusTone,
} from "./_format.ts";

/** A status as a coloured badge that carries the word (colour is never the only signal). */
export function StatusBadge({ status }: { status: string }) {
  return <span class={`status status-${statusTone(status)}`}>{status}</span>;
}

/** A horizontal bar filled to `fraction` (0..1); `tone` picks the fill colour. */
export function Bar(
  { fraction, tone = "running", label }: {
    fraction: number | null;
    tone?: string;
    label?: string;
  },
) {
  const pct = fraction === null ? 0 : Math.round(Math.max(0, Math.min(1, fraction)) * 1000) / 10;
  return (
    <svg
      class={`bar bar-${tone}`}
      viewBox="0 0 100 6"
      preserveAspectRatio="none"
      role="img"
      aria-label={label ?? (fraction === null ? "unknown" : `${pct}%`)}
    >
      <rect class="bar-track" width="100" height="6" rx="1" />
      {fraction !== null && <rect class="bar-fill" width={pct} height="6" rx="1" />}
    </svg>
  );
}

/** A tiny line of the last values, in the run's colour. */
export function Sparkline(
  { values, color, width = 120, height = 24 }: {
    values: (number | null)[];
    color: string;
    width?: number;
    height?: number;
  },
) {
  const finite = values.filter((v): v is number => v !== null && Number.isFinite(v));
  if (finite.length < 2) {
    return <svg class="spark" width={width} height={height} aria-hidden="true" />;
  }
  const min = Math.min(...finite);
  const max = Math.max(...finite);
  const span = max - min || 1;
  const step = width / (values.length - 1);
  const points = values
    .map((v, i) =>
      v === null || !Number.isFinite(v)
        ? null
        : `${(i * step).toFixed(1)},${(height - 2 - ((v - min) / span) * (height - 4)).toFixed(1)}`
    )
    .filter(Boolean)
    .join(" ");
  return (
    <svg
      class="spark"
      width={width}
      height={height}
      viewBox={`0 0 ${width} ${height}`}
      aria-hidden="true"
    >
      <polyline points={points} fill="none" stroke={color} stroke-width="1.5" />
    </svg>
  );
}

/** `3 min ago`, with the absolute time on hover. */
export function RelTime({ at, now }: { at: string | null | undefined; now: number }) {
  if (!at) return <span class="muted">–</span>;
  return <time datetime={at} title={fmtAbsolute(at)}>{fmtRelative(at, now)}</time>;
}

/** A run's colour dot, beside its name. */
export function RunDot({ id }: { id: string }) {
  return (
    <svg class="run-dot" width="8" height="8" viewBox="0 0 8 8" aria-hidden="true">
      <circle cx="4" cy="4" r="4" fill={runColor(id)} />
    </svg>
  );
}

/** A runs table's name cell: the run's colour dot, its name linking to it, then its id. */
export function RunNameCell(
  { id, name, children }: { id: string; name: string; children?: ComponentChildren },
) {
  return (
    <td class="run-name">
      <RunDot id={id} /> <a href={`/runs/${encodeURIComponent(id)}`}>{name}</a>
      {children}
      <div class="muted small">
        <code class="id">{id}</code>
      </div>
    </td>
  );
}

/** A runs table's progress cell: a bar and `1,200 / 5,000`. */
export function ProgressCell(
  { step, maxSteps, status }: { step: number | null; maxSteps: number | null; status: string },
) {
  return (
    <td class="progress-cell">
      <Bar
        fraction={progressFraction(step, maxSteps)}
        tone={status === "SUCCEEDED" ? "util" : "running"}
      />
      <span class="small">{fmtProgress(step, maxSteps)}</span>
    </td>
  );
}

/** An id in monospace that one click selects whole (for copying). */
export function Id({ id, href }: { id: string | null; href?: string }) {
  if (!id) return <span class="muted">–</span>;
  return href ? <a class="id" href={href}>{id}</a> : <code class="id">{id}</code>;
}

/** An event as lists show it. */
export interface EventView {
  id: number;
  ts: string;
  type: string;
  severity: string;
  message: string;
  run_id: string | null;
  job_id?: string | null;
  node_id?: string | null;
}

/**
 * One event of a timeline: severity, type, message and time; `links` adds links to its run,
 * job and node (`all`), makes the message a link to its run (`message`), or neither.
 */
export function EventItem(
  { e, now, links }: { e: EventView; now: number; links: "all" | "message" | "none" },
) {
  const runHref = e.run_id ? `/runs/${encodeURIComponent(e.run_id)}` : null;
  const refs = [
    runHref && <a key="run" href={runHref}>run</a>,
    e.job_id && <a key="job" href={`/jobs#${e.job_id}`}>job</a>,
    e.node_id && <a key="node" href={`/nodes#node-${e.node_id}`}>node</a>,
  ].filter(Boolean);
  return (
    <li
      class={`ev-${e.severity}`}
      data-event={e.id}
      title={links === "message" ? e.message : undefined}
    >
      <span class={`sev sev-${e.severity}`}>{e.severity}</span>
      <code class="ev-type">{e.type}</code>
      <span class="ev-msg">
        {links === "message" && runHref ? <a href={runHref}>{e.message}</a> : e.message}
        {links === "all" && refs.length > 0 && (
          <span class="ev-links">{refs.map((r) => [" ", r])}</span>
        )}
      </span>
      <span class="ev-time">
        <RelTime at={e.ts} now={now} />
      </span>
    </li>
  );
}

/** A metric's key with which way is better (in words on hover), or a dash when there is none. */
export function MetricKey(
  { metric }: { metric: { key: string; direction: MetricDirection } | null | undefined },
) {
  if (!metric) return <span class="muted">–</span>;
  return (
    <code title={metric.direction === "min" ? "lower is better" : "higher is better"}>
      {metric.key} {directionArrow(metric.direction)}
    </code>
  );
}
