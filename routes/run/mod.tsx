/**
 * `/runs/{id}`: one run, with tabs (`?tab=`). A running run's overview is live first
 * (progress, the primary metric, events, the log tail); a failed or lost run's is diagnosis
 * first (the failure card, and a retry that warns when the same configuration fails again);
 * any other run's is its summary, metrics, config and environment.
 */
import { Island } from "../../components/island.tsx";
import ConfirmAction from "../../islands/ConfirmAction.tsx";
import { fmtDuration, secondsBetween } from "../../islands/_format.ts";
import { Id, RelTime, RunDot, StatusBadge } from "../../islands/_ui.tsx";
import { confirmedAction, Notice } from "../../server/console/actions.tsx";
import type { PageRequest, PageRoute } from "../../server/console/page.tsx";
import {
  loadRunDetail,
  RUN_TABS,
  type RunDetail,
  type RunTab,
} from "../../server/console/run_detail.ts";
import { nowMs, pathSegment, shellPage } from "../../server/console/shell.tsx";
import { queueEvaluation } from "../../server/evaluations/mod.ts";
import { validationError } from "../../server/errors.ts";
import { setPrimaryMetric } from "../../server/projects/service.ts";
import { getRun } from "../../server/runs/service.ts";
import { evaluationRequest } from "../../protocol/rest/checkpoints.ts";
import { primaryMetricSet } from "../../protocol/rest/projects.ts";
import { CodeTab, lineagePageRoutes, LineagePanel } from "./lineage.tsx";

import { runHref, TAB_LABEL } from "./_parts.tsx";
import { Overview, RunEvents } from "./overview.tsx";
import { MetricsTab } from "./metrics.tsx";
import { CheckpointsTab } from "./checkpoints.tsx";
import { EvaluationsTab } from "./evaluations.tsx";

function Header({ d, now, canWrite, next }: {
  d: RunDetail;
  now: number;
  canWrite: boolean;
  next: string;
}) {
  const { run, job } = d;
  const expHref = `/runs?project=${encodeURIComponent(run.project)}${
    run.experiment ? `&experiment=${encodeURIComponent(run.experiment)}` : ""
  }`;
  return (
    <div class="run-head">
      <Id id={run.id} />
      <span>
        <a href={expHref}>{run.project}{run.experiment ? ` / ${run.experiment}` : ""}</a>
      </span>
      {job && (
        <span>
          job <a href={`/jobs#${job.id}`}>{job.name}</a>{" "}
          <span class="muted">attempt {run.attempt}/{job.max_attempts}</span>
        </span>
      )}
      {run.node_id && (
        <span>
          on <a href={`/nodes#node-${run.node_id}`}>{run.node_id}</a>
          {job?.gpu_indices.length ? ` GPU ${job.gpu_indices.join(",")}` : ""}
        </span>
      )}
      <span>source {run.source}</span>
      <span>
        started <RelTime at={run.started_at ?? run.created_at} now={now} />
      </span>
      <span>
        {fmtDuration(secondsBetween(run.started_at ?? run.created_at, run.finished_at, now))}
        {run.finished_at ? "" : " so far"}
      </span>
      {canWrite && job && <RunActions d={d} next={next} />}
    </div>
  );
}

function RunActions({ d, next }: { d: RunDetail; next: string }) {
  const job = d.job!;
  const active = ["QUEUED", "DISPATCHED", "RUNNING"].includes(job.status);
  const failsAgain = d.failure?.retry === "fails_again";
  return (
    <span class="actions run-actions">
      {active && (
        <Island
          component={ConfirmAction}
          props={{
            action: `/jobs/${encodeURIComponent(job.id)}/cancel`,
            label: "Cancel job",
            question: `Cancel "${job.name}"?`,
            yes: "Yes, cancel",
            next,
            danger: true,
            small: true,
          }}
        />
      )}
      {!active && job.status !== "SUCCEEDED" && (
        <Island
          component={ConfirmAction}
          props={{
            action: `/jobs/${encodeURIComponent(job.id)}/retry`,
            label: failsAgain ? "Retry (same config will fail the same way)" : "Retry",
            question: failsAgain
              ? "The diagnosis says this configuration fails the same way again. Requeue anyway?"
              : `Requeue "${job.name}" as attempt ${job.attempt + 1}?`,
            yes: "Yes, retry",
            next,
            small: true,
            danger: failsAgain,
          }}
        />
      )}
    </span>
  );
}

function Tabs({ d }: { d: RunDetail }) {
  const evals = d.checkpoints.reduce((n, c) => n + c.evaluations.length, 0);
  const count: Partial<Record<RunTab, number>> = {
    metrics: d.keys.length,
    checkpoints: d.checkpoints.length,
    evaluations: evals,
  };
  return (
    <nav class="tabs" aria-label="Run">
      {RUN_TABS.map((t) => (
        <a href={runHref(d.run.id, t)} aria-current={t === d.tab ? "page" : undefined}>
          {TAB_LABEL[t]}
          {count[t] !== undefined && <span class="count">{count[t]}</span>}
        </a>
      ))}
    </nav>
  );
}

async function runPage(p: PageRequest): Promise<Response> {
  const id = pathSegment(p, 1);
  const asked = p.url.searchParams.get("tab") ?? "overview";
  const tab = (RUN_TABS as readonly string[]).includes(asked) ? asked as RunTab : "overview";
  const d = await loadRunDetail(p.ctx, id, tab);
  const now = nowMs(p.ctx);
  const next = runHref(id, tab);
  return shellPage(
    p,
    {
      title: d.run.name,
      path: "/runs",
      heading: (
        <span class="title-status">
          <StatusBadge status={d.run.status} /> <RunDot id={d.run.id} />
          <span class="run-title">{d.run.name}</span>
        </span>
      ),
    },
    <>
      <Header d={d} now={now} canWrite={p.canWrite} next={next} />
      <Notice url={p.url} req={p.req} />
      <Tabs d={d} />
      {tab === "overview" && (
        <LineagePanel
          runId={d.run.id}
          parent={d.run.parent_run}
          mark={d.run.mark}
          notes={d.notes}
          canWrite={p.canWrite}
          next={next}
          now={now}
        />
      )}
      {tab === "overview" && <Overview d={d} now={now} />}
      {tab === "metrics" && <MetricsTab d={d} canWrite={p.canWrite} next={next} />}
      {tab === "checkpoints" && (
        <CheckpointsTab
          d={d}
          canWrite={p.canWrite}
          now={now}
          next={next}
        />
      )}
      {tab === "evaluations" && <EvaluationsTab d={d} now={now} />}
      {tab === "code" && <CodeTab code={d.code ?? null} runId={d.run.id} />}
      {tab === "events" && (
        <section class="panel">
          <RunEvents d={d} now={now} limit={500} />
        </section>
      )}
    </>,
  );
}

export const routes: PageRoute[] = [
  { method: "GET", path: "/runs/:id", scope: "read", handler: runPage },
  ...lineagePageRoutes,
  {
    method: "POST",
    path: "/runs/:id/primary",
    scope: "write",
    action: "setting a primary metric",
    handler: (p) => {
      const id = pathSegment(p, 1);
      return confirmedAction(p, {
        question: "",
        yes: "",
        fallback: runHref(id, "metrics"),
        confirm: false,
        run: (fields) => {
          const run = getRun(p.ctx, id);
          const input = primaryMetricSet.safeParse({
            scope: run.experiment ? "experiment" : "project",
            scope_id: run.experiment ? `${run.project}/${run.experiment}` : run.project,
            key: fields.key ?? "",
            direction: fields.direction,
          });
          if (!input.success) throw validationError("primary metric", input.error);
          const def = setPrimaryMetric(p.ctx, input.data);
          return `"${def.key}" (${def.direction === "min" ? "lower" : "higher"} is better) ` +
            `is now the primary metric of ${def.scope} ${def.scope_id}`;
        },
      });
    },
  },
  {
    method: "POST",
    path: "/checkpoints/:id/evaluate",
    scope: "write",
    action: "evaluating a checkpoint",
    handler: (p) => {
      const id = pathSegment(p, 1);
      return confirmedAction(p, {
        question: `Evaluate checkpoint ${id}?`,
        yes: "Yes, evaluate",
        fallback: "/runs",
        confirm: false,
        run: (fields) => {
          const suite = (fields.suite ?? "").trim() || "heldout";
          const command = (fields.command ?? "").trim() || undefined;
          const request = evaluationRequest.safeParse({ suite, command });
          if (!request.success) throw validationError("evaluation request", request.error);
          const { job } = queueEvaluation(p.ctx, id, request.data, p.principal?.token_id ?? null);
          return `Evaluation "${suite}" of checkpoint ${id} queued as job ${job.id}`;
        },
      });
    },
  },
];
