/** A console form post read with a size cap and validated, each bad field named with why. */
import type { z } from "zod";
import { readCappedBytes } from "../read_body.ts";

/** The largest form a console page accepts (forms carry tokens and names, not data). */
export const MAX_FORM_BYTES = 64 * 1024;

/** A form post's fields, validated; `errors` names each bad field and what is wrong with it. */
export async function readForm<S extends z.ZodType>(
  req: Request,
  schema: S,
): Promise<{ ok: true; data: z.infer<S> } | { ok: false; errors: Record<string, string> }> {
  const text = await readCappedText(req);
  if (text === null) {
    return {
      ok: false,
      errors: { form: `is larger than ${MAX_FORM_BYTES} bytes` },
    };
  }
  const parsed = schema.safeParse(Object.fromEntries(new URLSearchParams(text)));
  if (parsed.success) return { ok: true, data: parsed.data };
  const errors: Record<string, string> = {};
  for (const i of parsed.error.issues) errors[String(i.path[0] ?? "form")] ??= i.message;
  return { ok: false, errors };
}

async function readCappedText(req: Request): Promise<string | null> {
  const bytes = await readCappedBytes(req, MAX_FORM_BYTES);
  return typeof bytes === "number" ? null : new TextDecoder().decode(bytes);
}
