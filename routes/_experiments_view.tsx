/** What the Experiments page's parts share: its URL state and its form fields. */
import type { ComponentChildren } from "preact";
import { FormField } from "../components/form_field.tsx";

/** The page's URL state: the project chip, the search, the experiment the resolution is for. */
export const VIEW_KEYS = ["project", "q", "resolve"] as const;
export type View = Partial<Record<typeof VIEW_KEYS[number], string>>;

/** `/experiments` with `view` and `extra` in its query (empty values left out). */
export function href(
  view: View,
  extra: Record<string, string | undefined> = {},
  hash = "",
): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries({ ...view, ...extra })) if (v) q.set(k, v);
  const s = q.toString();
  return `/experiments${s ? `?${s}` : ""}${hash}`;
}

/** Which of the page's forms was posted, what was typed and what was wrong, by field. */
export interface FormState {
  form: "project" | "experiment" | "definition";
  values: Record<string, string>;
  errors: Record<string, string>;
}

export function Field(
  { state, ...rest }: {
    id: string;
    name: string;
    label: string;
    hint?: string;
    state: FormState | null;
    placeholder?: string;
    children?: ComponentChildren;
  },
) {
  return (
    <FormField value={state?.values[rest.name] ?? ""} error={state?.errors[rest.name]} {...rest} />
  );
}
