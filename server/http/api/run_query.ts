/** `POST /api/runs:query`: the runs matching a JSON filter, in the order asked. */
import { runQuery } from "../../../protocol/run_query.ts";
import { queryRuns } from "../../runs/query.ts";
import { readJson } from "../body.ts";
import type { RouteDef } from "../route.ts";

/** `query_runs` over REST: a read, so a read token may ask it (POST for its JSON body). */
export const runQueryRoutes: RouteDef[] = [
  {
    method: "POST",
    path: "/api/runs:query",
    scope: "read",
    handler: async (c, ctx) =>
      c.json(queryRuns(ctx, await readJson(c.req.raw, runQuery, "run query"))),
  },
];
