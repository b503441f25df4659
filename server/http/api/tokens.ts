/** `/api/tokens`: create, list and delete tokens, for an admin token. */
import { tokenCreate } from "../../../protocol/rest/tokens.ts";
import { tokenBudget } from "../../../protocol/budgets.ts";
import { createToken, deleteToken, listTokens } from "../../auth/service.ts";
import { changeBudget } from "../../budgets/service.ts";
import { readJson } from "../body.ts";
import { idParam, principalOf, type RouteDef } from "../route.ts";

export const tokenRoutes: RouteDef[] = [
  {
    method: "POST",
    path: "/api/tokens",
    scope: "admin",
    handler: async (c, ctx) => {
      const body = await readJson(c.req.raw, tokenCreate, "token");
      return c.json(createToken(ctx, body), 201);
    },
  },
  {
    method: "GET",
    path: "/api/tokens",
    scope: "admin",
    handler: (c, ctx) => c.json(listTokens(ctx)),
  },
  {
    method: "PUT",
    path: "/api/tokens/:id/budget",
    scope: "admin",
    handler: async (c, ctx) => {
      const body = await readJson(c.req.raw, tokenBudget, "budget");
      return c.json(changeBudget(ctx, idParam(c), body));
    },
  },
  {
    method: "DELETE",
    path: "/api/tokens/:id",
    scope: "admin",
    handler: (c, ctx) => {
      deleteToken(ctx, idParam(c), principalOf(c));
      return c.json({ deleted: idParam(c) });
    },
  },
];
