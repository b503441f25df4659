/** What `POST /api/tokens` accepts: a token's name, scope, expiry, node and budget. */
import { z } from "zod";
import { tokenBudget } from "../budgets.ts";
import { SCOPES } from "../vocabulary.ts";
import { name } from "./fields.ts";

export const tokenCreate = z.strictObject({
  name,
  scope: z.enum(SCOPES),
  expires_at: z.iso.datetime({ offset: true }).optional(),
  /** Binds an agent token to one node id: it can speak only for that node. */
  node_id: name.optional(),
  /** What the jobs and sweeps it submits may use (protocol/budgets.ts). */
  budget: tokenBudget.optional(),
}).superRefine((t, ctx) => {
  if (t.node_id !== undefined && t.scope !== "agent") {
    ctx.addIssue({
      code: "custom",
      path: ["node_id"],
      message: `only an agent token is bound to a node; scope is "${t.scope}"`,
    });
  }
});
export type TokenCreate = z.infer<typeof tokenCreate>;
