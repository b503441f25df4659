/**
 * Tokens as callers meet them: a presented token made a `Principal` (or refused), tokens
 * created, listed and deleted, and the tokens of server.yaml installed at start.
 */
import type { Page, TokenInfo } from "../../protocol/objects.ts";
import type { TokenCreate } from "../../protocol/rest/tokens.ts";
import type { Scope } from "../../protocol/vocabulary.ts";
import { budgets as budgetsDb, tokens as tokensDb } from "../db/mod.ts";
import type { BudgetStatus } from "../../protocol/budgets.ts";
import { budgetOf, setBudgetAtCreate } from "../budgets/service.ts";
import type { Context } from "../context.ts";
import { conflict, invalidField, notFound } from "../errors.ts";
import { generateToken, hashSecret, parseToken, secretMatches } from "./tokens.ts";

/** Who is calling: the token's id, name and scope. */
export interface Principal {
  token_id: string;
  name: string;
  scope: Scope;
  /** For an agent token bound to one node: the only node it may speak for. */
  node_id: string | null;
}

/** Finds the principal of a presented token; null when it is unknown, wrong or expired. */
export function authenticate(ctx: Context, token: string): Principal | null {
  const parsed = parseToken(token);
  if (!parsed) return null;
  const row = tokensDb.getToken(ctx.db, parsed.id);
  if (!row || !secretMatches(parsed.secret, row.secret_hash)) return null;
  const now = ctx.now();
  if (row.expires_at && Date.parse(row.expires_at) <= now.getTime()) return null;
  // last_used_at is advisory: refresh it at most once a minute to keep reads read-only.
  if (!row.last_used_at || now.getTime() - Date.parse(row.last_used_at) > 60_000) {
    tokensDb.touchToken(ctx.db, row.id, now.toISOString());
  }
  return { token_id: row.id, name: row.name, scope: row.scope, node_id: row.node_id ?? null };
}

/**
 * `GET /api/auth/whoami`: who the caller is, whether it may change things, and its budget
 * (each limit, what its jobs use and what is left; null: no budget).
 */
export function whoami(p: Principal, ctx: Context): {
  name: string;
  scope: Scope;
  token_id: string;
  can_write: boolean;
  budget: BudgetStatus | null;
} {
  return {
    name: p.name,
    scope: p.scope,
    token_id: p.token_id,
    can_write: p.scope === "write" || p.scope === "admin",
    budget: budgetOf(ctx, p.token_id),
  };
}

/** Creates a token; the only time the token itself is ever returned. */
export function createToken(ctx: Context, t: TokenCreate): TokenInfo & { token: string } {
  const at = ctx.now().toISOString();
  if (t.expires_at && Date.parse(t.expires_at) <= ctx.now().getTime()) {
    throw invalidField("token", "expires_at", `"${t.expires_at}" is in the past`);
  }
  const { token, id, hash } = generateToken();
  tokensDb.insertToken(ctx.db, {
    id,
    name: t.name,
    scope: t.scope,
    secret_hash: hash,
    created_at: at,
    expires_at: t.expires_at ?? null,
    node_id: t.node_id ?? null,
  });
  if (t.budget) setBudgetAtCreate(ctx, id, t.budget);
  return {
    id,
    name: t.name,
    scope: t.scope,
    node_id: t.node_id ?? null,
    created_at: at,
    expires_at: t.expires_at ?? null,
    last_used_at: null,
    budget: budgetsDb.getBudget(ctx.db, id),
    token,
  };
}

/** `GET /api/tokens`: every token, never a secret. */
export function listTokens(ctx: Context): Page<TokenInfo> {
  return { items: tokensDb.listTokens(ctx.db), next_cursor: null };
}

/** Deletes a token; a caller cannot delete the token it is calling with. */
export function deleteToken(ctx: Context, id: string, caller: Principal): void {
  if (id === caller.token_id) {
    throw conflict(`Cannot delete token "${id}": it is the token making this request`);
  }
  const at = ctx.now().toISOString();
  if (!ctx.db.tx(() => tokensDb.deleteToken(ctx.db, id, at))) throw notFound("Token", id);
}

/** A token kept in a config file (server.yaml's `admin_token`, `agent_token`). */
export interface ConfiguredToken {
  token: string;
  name: string;
  scope: Scope;
}

/**
 * Makes sure the tokens kept in a config file are known to the store (first start, or
 * edited), in one transaction. A token deleted through the API stays deleted: it is not
 * installed again, and its name is returned so the caller can say so.
 */
export function installConfiguredTokens(
  ctx: Context,
  configured: ConfiguredToken[],
): { installed: string[]; skipped: { name: string; deleted_at: string }[] } {
  const installed: string[] = [];
  const skipped: { name: string; deleted_at: string }[] = [];
  ctx.db.tx(() => {
    for (const { token, name, scope } of configured) {
      const parsed = parseToken(token);
      if (!parsed) {
        throw new Error(`Cannot use the ${name} token from the config: it is not a gpuctl token`);
      }
      const deletedAt = tokensDb.tokenDeletedAt(ctx.db, parsed.id);
      if (deletedAt !== null) {
        skipped.push({ name, deleted_at: deletedAt });
        continue;
      }
      tokensDb.upsertToken(ctx.db, {
        id: parsed.id,
        name,
        scope,
        secret_hash: hashSecret(parsed.secret),
        created_at: ctx.now().toISOString(),
      });
      installed.push(name);
    }
  });
  return { installed, skipped };
}
