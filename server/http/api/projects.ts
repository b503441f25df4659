/** Projects, experiments and metric definitions (the primary metric among them): list and set. */
import {
  experimentCreate,
  experimentsQuery,
  metricDefinitionsPut,
  primaryMetricSet,
  projectCreate,
} from "../../../protocol/rest/projects.ts";
import {
  createExperiment,
  createProject,
  getMetricDefinitions,
  listExperiments,
  listProjects,
  setMetricDefinitions,
  setPrimaryMetric,
} from "../../projects/service.ts";
import { readJson, readQuery } from "../body.ts";
import type { RouteDef } from "../route.ts";

export const projectRoutes: RouteDef[] = [
  {
    method: "GET",
    path: "/api/projects",
    scope: "read",
    handler: (c, ctx) => c.json(listProjects(ctx)),
  },
  {
    method: "POST",
    path: "/api/projects",
    scope: "write",
    handler: async (c, ctx) => {
      const { project, created } = createProject(
        ctx,
        await readJson(c.req.raw, projectCreate, "project"),
      );
      return c.json(project, created ? 201 : 200);
    },
  },
  {
    method: "GET",
    path: "/api/experiments",
    scope: "read",
    handler: (c, ctx) => c.json(listExperiments(ctx, readQuery(c.req.url, experimentsQuery))),
  },
  {
    method: "POST",
    path: "/api/experiments",
    scope: "write",
    handler: async (c, ctx) => {
      const { experiment, created } = createExperiment(
        ctx,
        await readJson(c.req.raw, experimentCreate, "experiment"),
      );
      return c.json(experiment, created ? 201 : 200);
    },
  },
  {
    method: "GET",
    path: "/api/metric-definitions",
    scope: "read",
    handler: (c, ctx) => c.json(getMetricDefinitions(ctx)),
  },
  {
    method: "PUT",
    path: "/api/metric-definitions",
    scope: "write",
    handler: async (c, ctx) =>
      c.json(
        setMetricDefinitions(
          ctx,
          await readJson(c.req.raw, metricDefinitionsPut, "metric definitions"),
        ),
      ),
  },
  {
    method: "PUT",
    path: "/api/metric-definitions/primary",
    scope: "write",
    handler: async (c, ctx) =>
      c.json(
        setPrimaryMetric(ctx, await readJson(c.req.raw, primaryMetricSet, "primary metric")),
      ),
  },
];
