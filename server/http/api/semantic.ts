/**
 * The semantic layer (diagnosis, comparisons, checkpoint recommendation, failure explanation)
 * and checkpoint evaluations. Listed before the run routes: `/api/runs/compare` must win over
 * `/api/runs/:id`.
 */
import { evaluationRequest, recommendQuery } from "../../../protocol/rest/checkpoints.ts";
import { compareRunsQuery } from "../../../protocol/rest/runs.ts";
import { getEvaluation, listEvaluations, queueEvaluation } from "../../evaluations/mod.ts";
import {
  compareCheckpointsOfRun,
  compareRunsByIds,
  diagnoseRunById,
  explainRunFailure,
  recommendCheckpoint,
} from "../../semantic/mod.ts";
import { readJson, readQuery } from "../body.ts";
import { idParam, principalOf, type RouteDef } from "../route.ts";

export const semanticRoutes: RouteDef[] = [
  {
    method: "GET",
    path: "/api/runs/compare",
    scope: "read",
    handler: (c, ctx) => {
      const q = readQuery(c.req.url, compareRunsQuery);
      return c.json(compareRunsByIds(ctx, q.runs, q.metric));
    },
  },
  {
    method: "GET",
    path: "/api/runs/:id/diagnosis",
    scope: "read",
    handler: (c, ctx) => c.json(diagnoseRunById(ctx, idParam(c))),
  },
  {
    method: "GET",
    path: "/api/runs/:id/failure",
    scope: "read",
    handler: (c, ctx) => c.json(explainRunFailure(ctx, idParam(c))),
  },
  {
    method: "GET",
    path: "/api/runs/:id/checkpoints:compare",
    scope: "read",
    handler: (c, ctx) => c.json(compareCheckpointsOfRun(ctx, idParam(c))),
  },
  {
    method: "GET",
    path: "/api/checkpoints:recommend",
    scope: "read",
    handler: (c, ctx) => c.json(recommendCheckpoint(ctx, readQuery(c.req.url, recommendQuery))),
  },
  {
    method: "POST",
    path: "/api/checkpoints/:id/evaluations",
    scope: "write",
    handler: async (c, ctx) => {
      const body = await readJson(c.req.raw, evaluationRequest, "evaluation request");
      return c.json(queueEvaluation(ctx, idParam(c), body, principalOf(c).token_id), 201);
    },
  },
  {
    method: "GET",
    path: "/api/checkpoints/:id/evaluations",
    scope: "read",
    handler: (c, ctx) => c.json(listEvaluations(ctx, idParam(c))),
  },
  {
    method: "GET",
    path: "/api/evaluations/:id",
    scope: "read",
    handler: (c, ctx) => c.json(getEvaluation(ctx, idParam(c))),
  },
];
