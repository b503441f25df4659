/**
 * The console's write actions as form posts (on `write` page routes, whose scope the console
 * checks before the handler runs): each asks for confirmation when the form did not carry it (a browser without
 * JavaScript, a stray post), acts through one service function, and returns to the page it
 * came from.
 */
import { z } from "zod";
import { readForm } from "./form.ts";
import type { PageRequest } from "./page.tsx";
import { shellPage } from "./shell.tsx";
import { safeNext } from "../../routes/login.tsx";

const actionForm = z.object({
  next: z.string().max(2000).optional(),
  confirmed: z.string().max(10).optional(),
}).passthrough();

export interface ConfirmedAction {
  /** The question of the confirmation page. */
  question: string;
  yes: string;
  /** Does it; returns the notice shown after. */
  run(fields: Record<string, string>): string;
  /** Where to go when the form names nowhere. */
  fallback: string;
  /** Asks for confirmation first. @default true */
  confirm?: boolean;
}

/** Handles one write action's form post. */
export async function confirmedAction(p: PageRequest, a: ConfirmedAction): Promise<Response> {
  const form = await readForm(p.req, actionForm);
  const fields = form.ok ? form.data as Record<string, string> : {};
  const next = safeNext(fields.next ?? a.fallback);
  if ((a.confirm ?? true) && fields.confirmed !== "1") {
    return shellPage(
      p,
      { title: "Confirm", path: p.url.pathname },
      <section class="panel">
        <p>{a.question}</p>
        <form method="post" action={p.url.pathname} class="form-actions">
          {Object.entries(fields).filter(([k]) => k !== "confirmed").map(([k, v]) => (
            <input type="hidden" name={k} value={v} />
          ))}
          <input type="hidden" name="confirmed" value="1" />
          <button type="submit" class="primary">{a.yes}</button>
          <a href={next}>Keep it</a>
        </form>
      </section>,
    );
  }
  const notice = a.run(fields);
  const [path, hash] = next.split("#");
  const sep = path.includes("?") ? "&" : "?";
  return p.redirect(
    `${path}${sep}notice=${encodeURIComponent(notice)}${hash ? `#${hash}` : ""}`,
  );
}

/**
 * The notice a redirect after an action carries (shown as text, never markup). A browser says
 * where a navigation came from (`Sec-Fetch-Site`): a notice in a link from another site is not
 * shown, so no one can put words on a gpuctl page by sending a link.
 */
export function Notice({ url, req }: { url: URL; req: Request }) {
  const from = req.headers.get("sec-fetch-site");
  if (from !== null && from !== "same-origin") return null;
  const n = url.searchParams.get("notice");
  return n ? <p class="notice" role="status">{n.slice(0, 300)}</p> : null;
}
