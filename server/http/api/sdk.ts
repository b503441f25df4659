import { z } from "zod";
import { importRegistration, sdkRunRegistration } from "../../../protocol/rest.ts";
import { partitionSdkBatch } from "../../../protocol/sdk_batch.ts";
import { ingestBatch, registerImport, registerSdkRun } from "../../runs/service.ts";
import { readJson } from "../body.ts";
import { HttpError } from "../errors.ts";
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
      // The valid part of a batch is stored and the rest named: one bad item (an over-long
      // checkpoint path, a key the store cannot keep) must not cost the good ones.
      const body = partitionSdkBatch(await readJson(c.req.raw, z.unknown(), "log batch"));
      if (body === null) {
        throw new HttpError(400, "ValidationError", "Invalid log batch: a JSON object expected");
      }
      const accepted = ingestBatch(ctx, idParam(c), body.batch);
      return c.json(body.refused.count ? { accepted, refused: body.refused } : { accepted });
    },
  },
];
