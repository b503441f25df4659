import type { z } from "zod";
import { pageQuery } from "../../../protocol/rest.ts";
import { readQuery } from "../body.ts";
import type { RequestContext } from "../route.ts";

/** Validates the query string with the given fields plus `limit` and `cursor`. */
export function listQuery<T extends z.ZodRawShape>(c: RequestContext, shape: T) {
  return readQuery(c.req.url, pageQuery.extend(shape));
}
