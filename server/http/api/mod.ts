/** `apiRoutes`: every API route with its scope, in the order that lets the specific paths win. */
import type { RouteDef } from "../route.ts";
import { adminRoutes } from "./admin.ts";
import { agentRoutes } from "./agent.ts";
import { authRoutes } from "./auth.ts";
import { eventRoutes } from "./events.ts";
import { jobRoutes } from "./jobs.ts";
import { lineageRoutes } from "./lineage.ts";
import { runQueryRoutes } from "./run_query.ts";
import { nodeRoutes } from "./nodes.ts";
import { projectRoutes } from "./projects.ts";
import { runRoutes } from "./runs.ts";
import { sdkRoutes } from "./sdk.ts";
import { semanticRoutes } from "./semantic.ts";
import { sweepRoutes } from "./sweeps.ts";
import { tokenRoutes } from "./tokens.ts";
import { waitRoutes } from "./waits.ts";

/** Every API route with its scope; the app registers nothing else under /api. */
export const apiRoutes: RouteDef[] = [
  ...authRoutes,
  // Before the routes of each kind: `/api/runs/:id/wait` is a wait, never a run's sub-page.
  ...waitRoutes,
  ...tokenRoutes,
  ...nodeRoutes,
  ...jobRoutes,
  ...sweepRoutes,
  // Before the run routes: `/api/runs/compare` must not be taken for `/api/runs/:id`.
  ...semanticRoutes,
  ...runRoutes,
  ...lineageRoutes,
  ...runQueryRoutes,
  ...eventRoutes,
  ...projectRoutes,
  ...sdkRoutes,
  ...adminRoutes,
  ...agentRoutes,
];
