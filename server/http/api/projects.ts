import { z } from "zod";
import type { MetricDefinition } from "../../../protocol/objects.ts";
import { experimentCreate, metricDefinitionsPut, projectCreate } from "../../../protocol/rest.ts";
import { projects as projectsDb } from "../../db/mod.ts";
import { readJson, readQuery } from "../body.ts";
import { HttpError } from "../errors.ts";
import { notFound, quoted } from "../../errors.ts";
import type { RouteDef } from "../route.ts";

export const projectRoutes: RouteDef[] = [
  {
    method: "GET",
    path: "/api/projects",
    scope: "read",
    handler: (c, ctx) => c.json({ items: projectsDb.listProjects(ctx.db), next_cursor: null }),
  },
  {
    method: "POST",
    path: "/api/projects",
    scope: "write",
    handler: async (c, ctx) => {
      const body = await readJson(c.req.raw, projectCreate, "project");
      const at = ctx.now().toISOString();
      const created = ctx.db.tx(() => {
        const existed = projectsDb.getProject(ctx.db, body.name) !== null;
        projectsDb.upsertProject(ctx.db, body, at);
        return !existed;
      });
      return c.json(projectsDb.getProject(ctx.db, body.name), created ? 201 : 200);
    },
  },
  {
    method: "GET",
    path: "/api/experiments",
    scope: "read",
    handler: (c, ctx) => {
      const q = readQuery(c.req.url, z.object({ project: z.string().max(200).optional() }));
      return c.json({ items: projectsDb.listExperiments(ctx.db, q.project), next_cursor: null });
    },
  },
  {
    method: "POST",
    path: "/api/experiments",
    scope: "write",
    handler: async (c, ctx) => {
      const body = await readJson(c.req.raw, experimentCreate, "experiment");
      const at = ctx.now().toISOString();
      const created = ctx.db.tx(() => {
        if (!projectsDb.getProject(ctx.db, body.project)) throw notFound("Project", body.project);
        const made = projectsDb.ensureExperiment(ctx.db, { id: ctx.newId("e"), ...body }, at);
        if (!made) projectsDb.updateExperiment(ctx.db, body, at);
        return made;
      });
      return c.json(projectsDb.getExperiment(ctx.db, body.project, body.name), created ? 201 : 200);
    },
  },
  {
    method: "GET",
    path: "/api/metric-definitions",
    scope: "read",
    handler: (c, ctx) =>
      c.json({ items: projectsDb.listMetricDefinitions(ctx.db), next_cursor: null }),
  },
  {
    method: "PUT",
    path: "/api/metric-definitions",
    scope: "write",
    handler: async (c, ctx) => {
      const body = await readJson(c.req.raw, metricDefinitionsPut, "metric definitions");
      const at = ctx.now().toISOString();
      ctx.db.tx(() => {
        body.definitions.forEach((d, i) => {
          const def: MetricDefinition = {
            scope: d.scope,
            scope_id: d.scope === "global" ? "" : d.scope_id ?? "",
            key: d.key,
            direction: d.direction,
            primary: d.primary ?? false,
          };
          checkScopeExists(ctx.db, def, i);
          projectsDb.putMetricDefinition(ctx.db, def, at);
        });
      });
      return c.json({ items: projectsDb.listMetricDefinitions(ctx.db), next_cursor: null });
    },
  },
];

function checkScopeExists(
  db: Parameters<typeof projectsDb.getProject>[0],
  d: MetricDefinition,
  i: number,
) {
  const field = `definitions.${i}.scope_id`;
  const fail = (problem: string) =>
    new HttpError(400, "ValidationError", `Invalid metric definitions: ${field}: ${problem}`, {
      details: [{ field, problem }],
    });
  if (d.scope === "project" && !projectsDb.getProject(db, d.scope_id)) {
    throw fail(`project ${quoted(d.scope_id)} does not exist`);
  }
  if (d.scope === "experiment") {
    const slash = d.scope_id.indexOf("/");
    if (slash < 1) throw fail(`must be "<project>/<experiment>", got ${quoted(d.scope_id)}`);
    const [p, e] = [d.scope_id.slice(0, slash), d.scope_id.slice(slash + 1)];
    if (!projectsDb.getExperiment(db, p, e)) {
      throw fail(`experiment ${quoted(d.scope_id)} does not exist`);
    }
  }
}
