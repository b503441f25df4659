/**
 * The live part of the top bar: the fleet summary ("3/4 GPUs busy · 2 queued"), a small
 * marker while the connection to the server is lost, and the keyboard shortcuts (`/` focuses
 * the page's search, `g` then a page's key from islands/_nav.ts goes to it, `Esc` closes what is open).
 */
import { useEffect } from "preact/hooks";
import { type LiveEvent, useJson, useLiveState } from "./_live.ts";
import { navTarget } from "./_nav.ts";

export interface FleetSummary {
  gpus: { busy: number; total: number };
  jobs: { queued: number; running: number };
  alerts: { critical: number };
}

export interface TopBarProps {
  fleet: FleetSummary;
}

const changesFleet = (e: LiveEvent) => /^(JOB_|RUN_|NODE_)|^OOM$/.test(e.type);

export default function TopBar({ fleet }: TopBarProps) {
  const status = useJson<FleetSummary>("/api/status", fleet, {
    refreshOn: changesFleet,
    everyMs: 15_000,
  });
  const live = useLiveState();
  useEffect(() => {
    let pendingG = 0;
    const onKey = (e: KeyboardEvent) => {
      if (e.ctrlKey || e.metaKey || e.altKey) return;
      const t = e.target as HTMLElement | null;
      const typing = t && (t.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(t.tagName));
      if (e.key === "Escape") {
        for (
          const d of document.querySelectorAll<HTMLDetailsElement>("details[data-drawer][open]")
        ) {
          d.open = false;
        }
        if (typing) t!.blur();
        return;
      }
      if (typing) return;
      if (e.key === "/") {
        const search = document.querySelector<HTMLInputElement>("[data-search]");
        if (search) {
          e.preventDefault();
          search.focus();
          search.select();
        }
        return;
      }
      if (e.key === "g") {
        pendingG = Date.now();
        return;
      }
      const target = pendingG && Date.now() - pendingG < 1500 ? navTarget(e.key) : undefined;
      if (target) {
        pendingG = 0;
        location.assign(target);
      }
    };
    addEventListener("keydown", onKey);
    return () => removeEventListener("keydown", onKey);
  }, []);
  const { gpus, jobs, alerts } = status;
  return (
    <div class="fleet" data-live={live}>
      {live === "reconnecting" && <span class="reconnecting" role="status">reconnecting…</span>}
      <a href="/nodes" class="fleet-gpus" title="GPUs held by jobs, of the GPUs of online nodes">
        {gpus.busy}/{gpus.total} GPUs busy
      </a>
      <span aria-hidden="true">·</span>
      <a href="/jobs?status=QUEUED">{jobs.queued} queued</a>
      {alerts.critical > 0 && (
        <>
          <span aria-hidden="true">·</span>
          <a href="/events?severity=critical" class="fleet-critical">
            {alerts.critical} critical
          </a>
        </>
      )}
    </div>
  );
}
