/**
 * What the Python SDK and `gpuctl import` write: a run registered (an id registered again
 * answers its run), a batch of the run's metrics, logs and checkpoints, and an imported folder.
 */
import { z } from "zod";
import { importRegistration, sdkRunRegistration } from "../../../protocol/rest/sdk.ts";
import { ingestSdkBatch, registerImport, registerSdkRun } from "../../runs/service.ts";
import { readJson } from "../body.ts";
import { idParam, type RouteDef } from "../route.ts";

export const sdkRoutes: RouteDef[] = [
  {
    method: "POST",
    path: "/api/imports",
    scope: "write",
    handler: async (c, ctx) => {
      const body = await readJson(c.req.raw, importRegistration, "import");
      const result = registerImport(ctx, body);
      return c.json(result, result.created ? 201 : 200);
    },
  },
  {
    method: "POST",
    path: "/api/sdk/runs",
    scope: "write",
    handler: async (c, ctx) => {
      const body = await readJson(c.req.raw, sdkRunRegistration, "run registration");
      const { run, created } = registerSdkRun(ctx, body);
      return c.json(run, created ? 201 : 200);
    },
  },
  {
    method: "POST",
    path: "/api/sdk/runs/:id/log",
    scope: "write",
    handler: async (c, ctx) => {
      // Items are validated one by one in the service (a bad one must not cost the good ones).
      const body = await readJson(c.req.raw, z.unknown(), "log batch");
      return c.json(ingestSdkBatch(ctx, idParam(c), body));
    },
  },
];
