/**
 * A write action behind a confirmation: a form that posts to a console route. Clicking its
 * button asks first, in place ("Cancel job "x"? Yes, cancel · Keep it"); only the second
 * click sends the form, marked confirmed. Without JavaScript the same form lands on a
 * confirmation page, so nothing is ever changed by a single stray click.
 */
import { useState } from "preact/hooks";

export interface ConfirmActionProps {
  /** The console route the form posts to. */
  action: string;
  /** The button's text. */
  label: string;
  /** The question asked before sending. */
  question: string;
  /** The confirming button's text. */
  yes: string;
  /** Where to come back to. */
  next: string;
  danger?: boolean;
  small?: boolean;
}

export default function ConfirmAction(p: ConfirmActionProps) {
  const [asking, setAsking] = useState(false);
  const cls = [p.danger ? "danger" : "", p.small ? "small" : ""].join(" ").trim();
  return (
    <form
      method="post"
      action={p.action}
      class="inline-form confirm"
      onSubmit={(e) => {
        if (!asking) {
          e.preventDefault();
          setAsking(true);
        }
      }}
    >
      <input type="hidden" name="next" value={p.next} />
      {asking
        ? (
          <>
            <input type="hidden" name="confirmed" value="1" />
            <span class="confirm-q" role="alert">{p.question}</span>
            <button type="submit" class={`${cls} solid`} data-confirm="yes" autofocus>
              {p.yes}
            </button>
            <button type="button" class={p.small ? "small" : ""} onClick={() => setAsking(false)}>
              Keep it
            </button>
          </>
        )
        : <button type="submit" class={cls} data-action={p.label}>{p.label}</button>}
    </form>
  );
}
