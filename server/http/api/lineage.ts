/** Lineage routes: the tree, a run's code and code comparisons, forks, marks and notes. */
import {
  codeCompareQuery,
  forkRequest,
  lineageQuery,
  markRequest,
  noteRequest,
} from "../../../protocol/lineage.ts";
import {
  addNote,
  compareRunCode,
  forkRun,
  getLineage,
  getRunCode,
  markRun,
} from "../../lineage/service.ts";
import { readJson, readQuery } from "../body.ts";
import { idParam, principalOf, type RouteDef } from "../route.ts";

/** Provenance and lineage: a run's code, forks, marks, notes and the tree. */
export const lineageRoutes: RouteDef[] = [
  {
    method: "GET",
    path: "/api/lineage",
    scope: "read",
    handler: (c, ctx) => c.json(getLineage(ctx, readQuery(c.req.url, lineageQuery))),
  },
  {
    method: "GET",
    path: "/api/code/compare",
    scope: "read",
    handler: (c, ctx) => {
      const [a, b] = readQuery(c.req.url, codeCompareQuery).runs;
      return c.json(compareRunCode(ctx, a, b));
    },
  },
  {
    method: "GET",
    path: "/api/runs/:id/code",
    scope: "read",
    handler: (c, ctx) => {
      const id = idParam(c);
      return c.json({ run_id: id, code: getRunCode(ctx, id) });
    },
  },
  {
    method: "POST",
    path: "/api/runs/:id/fork",
    scope: "write",
    handler: async (c, ctx) => {
      const body = await readJson(c.req.raw, forkRequest, "fork");
      return c.json(forkRun(ctx, idParam(c), body, principalOf(c).token_id), 201);
    },
  },
  {
    method: "POST",
    path: "/api/runs/:id/mark",
    scope: "write",
    handler: async (c, ctx) => {
      const body = await readJson(c.req.raw, markRequest, "mark");
      return c.json(markRun(ctx, idParam(c), body, principalOf(c).name));
    },
  },
  {
    method: "POST",
    path: "/api/notes",
    scope: "write",
    handler: async (c, ctx) => {
      const body = await readJson(c.req.raw, noteRequest, "note");
      return c.json(addNote(ctx, body, principalOf(c).name), 201);
    },
  },
];
