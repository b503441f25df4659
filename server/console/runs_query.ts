/**
 * The Runs page's `query_runs` form: `where` (the JSON filter the REST API, MCP tool and
 * `gpuctl run list --where` take) and `order_by` from the URL, with the page's status, project
 * and experiment filters added to `where` where it does not name them. Pure.
 */
import { type RunQuery, runQuery } from "../../protocol/run_query.ts";

/** The longest `where` the page reads from its URL. */
export const MAX_WHERE_CHARS = 4000;

/** The query the page's fields ask for, or the first problem with them (naming the field). */
export function runsPageQuery(
  fields: {
    where?: string;
    order_by?: string;
    status?: string;
    project?: string;
    experiment?: string;
  },
  limit: number,
): { query: RunQuery } | { error: string } {
  let where: Record<string, unknown> = {};
  if (fields.where) {
    if (fields.where.length > MAX_WHERE_CHARS) {
      return { error: `where: longer than ${MAX_WHERE_CHARS} characters` };
    }
    try {
      where = JSON.parse(fields.where);
    } catch (err) {
      return { error: `where: is not JSON: ${(err as Error).message}` };
    }
    if (where === null || typeof where !== "object" || Array.isArray(where)) {
      return { error: 'where: must be a JSON object, e.g. {"config": {"lr": {"lt": 0.01}}}' };
    }
  }
  for (const f of ["status", "project", "experiment"] as const) {
    if (fields[f] && !(f in where)) where[f] = fields[f];
  }
  const parsed = runQuery.safeParse({
    where,
    ...(fields.order_by ? { order_by: fields.order_by } : {}),
    limit,
  });
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const path = issue.path.map(String).join(".");
    return { error: `${path || "where"}: ${issue.message}` };
  }
  return { query: parsed.data };
}
