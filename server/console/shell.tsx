/**
 * Pages inside the shell: the layout with the live fleet summary, and the one mapping from
 * the domain's errors to a page (the console's face of server/errors.ts).
 */
import type { ComponentChildren } from "preact";
import { Layout } from "../../components/layout.tsx";
import type { FleetSummary } from "../../islands/TopBar.tsx";
import { ServiceError } from "../errors.ts";
import { STATUS_OF_KIND } from "../http/errors.ts";
import type { Context } from "../context.ts";
import { getStatus, type StatusOverview } from "../status/service.ts";
import type { PageRequest } from "./page.tsx";

/** What the top bar shows, from the status overview. */
export function fleetOf(s: StatusOverview): FleetSummary {
  return {
    gpus: s.gpus,
    jobs: { queued: s.jobs.queued, running: s.jobs.running },
    alerts: { critical: s.alerts.critical },
  };
}

export interface ShellOptions {
  /** The document's title. */
  title: string;
  /** The page's path, for the navigation. */
  path: string;
  /** The title line (defaults to `title`). */
  heading?: ComponentChildren;
  /** The main action (rendered for write sessions only). */
  action?: ComponentChildren;
  status?: number;
  /** The status overview when the page already has it. */
  overview?: StatusOverview;
}

/** Renders `body` inside the shell. */
export function shellPage(p: PageRequest, o: ShellOptions, body: ComponentChildren): Response {
  return p.render(
    o.title,
    <Layout
      principal={p.principal!}
      canWrite={p.canWrite}
      path={o.path}
      title={o.heading ?? o.title}
      action={o.action}
      fleet={fleetOf(o.overview ?? getStatus(p.ctx))}
    >
      {body}
    </Layout>,
    { status: o.status },
  );
}

const HEADING: Record<ServiceError["kind"], string> = {
  validation: "That request is not valid",
  unauthorized: "Sign in again",
  scope: "This session cannot do that",
  not_found: "Not found",
  conflict: "Not possible right now",
  too_many: "Too much at once",
  storage_full: "The server's disk is full",
};

/** A domain error as a page inside the shell; null for anything else (a 500 upstream). */
export function errorPage(p: PageRequest, err: unknown): Response | null {
  if (!(err instanceof ServiceError)) return null;
  const status = STATUS_OF_KIND[err.kind];
  return shellPage(
    p,
    { title: HEADING[err.kind], path: p.url.pathname, status },
    <section class="panel error-panel" role="alert">
      <p>{err.message}</p>
      <p>
        <a href={safeBack(p)}>Back</a> · <a href="/">Dashboard</a>
      </p>
    </section>,
  );
}

/** Where "back" goes: the page the form came from when it is one of ours, else the dashboard. */
function safeBack(p: PageRequest): string {
  const ref = p.req.headers.get("referer");
  if (!ref) return "/";
  try {
    const u = new URL(ref);
    return u.origin === p.url.origin ? u.pathname + u.search : "/";
  } catch {
    return "/";
  }
}

/** The context's clock in ms, for relative times the server renders. */
export const nowMs = (ctx: Context) => ctx.now().getTime();

/** The `i`-th segment of the page's path, decoded (`/runs/r-1` → 1: `r-1`). */
export function pathSegment(p: PageRequest, i: number): string {
  const raw = p.url.pathname.split("/").filter(Boolean)[i] ?? "";
  try {
    return decodeURIComponent(raw);
  } catch {
    return raw;
  }
}

/** The non-empty values of `names` in the page's query string (trimmed, at most 200 chars). */
export function queryFilters(p: PageRequest, names: readonly string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const n of names) {
    const v = p.url.searchParams.get(n)?.trim();
    if (v) out[n] = v.slice(0, 200);
  }
  return out;
}
