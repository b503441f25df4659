/**
 * One labelled field of a console form: the input (or the control given as children), and the
 * server's problem with it, named and announced, or else its hint. What was typed comes back
 * in `value`, so a refused form keeps it.
 */
import type { ComponentChildren } from "preact";

export function FormField(
  { id, name, label, hint, value, error, wide, type, placeholder, children }: {
    id: string;
    name: string;
    label: string;
    hint?: string;
    value: string;
    error?: string;
    wide?: boolean;
    type?: string;
    placeholder?: string;
    children?: ComponentChildren;
  },
) {
  return (
    <div class={`field${wide ? " wide" : ""}`}>
      <label for={id}>{label}</label>
      {children ?? (
        <input
          id={id}
          name={name}
          type={type}
          value={value}
          placeholder={placeholder}
          aria-invalid={error ? "true" : undefined}
          aria-describedby={error ? `${id}-error` : hint ? `${id}-hint` : undefined}
          spellcheck={false}
          autocomplete="off"
        />
      )}
      {error && <p id={`${id}-error`} class="field-error" role="alert">{label} {error}</p>}
      {!error && hint && <span id={`${id}-hint`} class="hint">{hint}</span>}
    </div>
  );
}
