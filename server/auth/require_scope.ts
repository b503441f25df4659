/**
 * The one scope check. Bearer tokens on the REST API, console sessions and MCP calls all pass
 * through it, so a read token gets the same `WriteScopeError` wherever it tries to change
 * something.
 */
import type { Scope } from "../../protocol/vocabulary.ts";
import { ScopeError, UnauthorizedError } from "../errors.ts";
import type { Principal } from "./service.ts";
import { scopeAllows } from "./tokens.ts";

/** Whether a scope lets a caller change things. */
export const isWriteScope = (scope: Scope | "public") => scope === "write" || scope === "admin";

/**
 * The principal, when it may do `action` (e.g. `POST /api/jobs`, `tool submit_job`) that needs
 * `needed`; otherwise an UnauthorizedError (no principal) or a ScopeError whose code is
 * `WriteScopeError` when a read credential tried to write.
 */
export function requireScope(
  principal: Principal | null,
  needed: Scope,
  action: string,
): Principal {
  if (!principal) {
    throw new UnauthorizedError(
      "A valid token is required: send Authorization: Bearer <token>",
    );
  }
  if (scopeAllows(principal.scope, needed)) return principal;
  if (needed === "write" && principal.scope === "read") {
    throw new ScopeError(
      "WriteScopeError",
      `Token "${principal.name}" has scope "read"; ${action} changes things and needs a ` +
        `token of scope "write" (create one with: gpuctl token create --scope write)`,
    );
  }
  throw new ScopeError(
    "ScopeError",
    `Token "${principal.name}" has scope "${principal.scope}"; ${action} needs "${needed}"`,
  );
}
