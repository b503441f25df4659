import type { z } from "zod";

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
  if (!req.body) return "";
  let size = 0;
  let over = false;
  const capped = req.body.pipeThrough(
    new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, out) {
        size += chunk.length;
        if (size > MAX_FORM_BYTES) {
          over = true;
          out.terminate();
        } else out.enqueue(chunk);
      },
    }),
  );
  const text = await new Response(capped).text();
  return over ? null : text;
}
