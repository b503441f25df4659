/**
 * Console form posts: read with a size cap and validated, shaped into a service's input that
 * crosses the REST body's schema, and acted on; every refusal (the form's, the schema's, the
 * service's) comes back named by its field, with what was typed.
 */
import { z } from "zod";
import { BudgetExceededError, ValidationError } from "../errors.ts";
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

/** A form's fields as posted: names up to 64 characters, values up to 64 KiB. */
export const postedFields = z.record(z.string().max(64), z.string().max(65_536));

/** The form field a problem's path (`a.0.b`) belongs to: by default its first part. */
export type FieldOf = (path: string) => string;
const firstPart: FieldOf = (path) => path.split(".")[0] || "form";

/**
 * Shapes posted `values` into a service input and parses it with `schema` (the REST body's).
 * `input` may name problems itself in `errors` (a number that is not one); the schema's
 * problems are added for fields that have none yet.
 */
export function parseFormInput<S extends z.ZodType, V>(
  values: V,
  schema: S,
  input: (values: V, errors: Record<string, string>) => unknown,
  fieldOf: FieldOf = firstPart,
): { ok: true; data: z.output<S> } | { ok: false; errors: Record<string, string> } {
  const errors: Record<string, string> = {};
  const parsed = schema.safeParse(input(values, errors));
  if (!parsed.success) {
    for (const i of parsed.error.issues) {
      errors[fieldOf(i.path.map(String).join("."))] ??= i.message;
    }
  }
  if (Object.keys(errors).length || !parsed.success) return { ok: false, errors };
  return { ok: true, data: parsed.data };
}

/**
 * Reads a posted form (`fields`), shapes and parses it (parseFormInput) and acts; a service's
 * ValidationError comes back by field, a BudgetExceeded as the form's problem.
 */
export async function submitForm<S extends z.ZodType, V extends Record<string, string>, T>(
  req: Request,
  form: {
    fields: z.ZodType<V>;
    schema: S;
    input: (values: V, errors: Record<string, string>) => unknown;
    act: (data: z.output<S>, values: V) => T;
    fieldOf?: FieldOf;
  },
): Promise<
  | { ok: true; result: T; values: V }
  | { ok: false; errors: Record<string, string>; values: Partial<V> }
> {
  const read = await readForm(req, form.fields);
  if (!read.ok) return { ok: false, errors: read.errors, values: {} };
  const values = read.data as V;
  const fieldOf = form.fieldOf ?? firstPart;
  const parsed = parseFormInput(values, form.schema, form.input, fieldOf);
  if (!parsed.ok) return { ok: false, errors: parsed.errors, values };
  try {
    return { ok: true, result: form.act(parsed.data, values), values };
  } catch (err) {
    if (err instanceof BudgetExceededError) {
      return { ok: false, errors: { form: err.message }, values };
    }
    if (!(err instanceof ValidationError)) throw err;
    const errors: Record<string, string> = {};
    for (const d of err.details) errors[fieldOf(d.field)] ??= d.problem;
    return { ok: false, errors, values };
  }
}
