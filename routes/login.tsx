/** `/login`: a token in, a session cookie out. The token is never echoed back into the page. */
import { z } from "zod";
import { authenticate } from "../server/auth/service.ts";
import { parseToken } from "../server/auth/tokens.ts";
import type { Context } from "../server/context.ts";
import { readForm } from "../server/console/form.ts";
import type { PageRequest, PageRoute } from "../server/console/page.tsx";

const loginForm = z.object({
  token: z.string().trim().min(1, "is empty: paste a token").max(400, "is too long for a token"),
  next: z.string().max(2000).optional(),
});

/** Where to go after signing in: a path on this server, never another site (`//x`, `/\x`). */
export function safeNext(next: string | null | undefined): string {
  // Printable ASCII only: a Location header cannot hold other characters (a 500 once).
  return next && /^\/(?![/\\])[!-[\]-~]*$/.test(next) ? next : "/";
}

function LoginPage(
  { next, error, status }: { next: string; error?: string; status?: string },
) {
  return (
    <main class="narrow login">
      <h1>
        <span class="brand">gpuctl</span> console
      </h1>
      <form method="post" action="/login" class="stack">
        <input type="hidden" name="next" value={next} />
        <label for="token">Token</label>
        <input
          id="token"
          name="token"
          type="password"
          autocomplete="off"
          spellcheck={false}
          required
          autofocus
          aria-invalid={error ? "true" : undefined}
          aria-describedby={error ? "token-error" : "token-help"}
        />
        {error && <p id="token-error" class="field-error" role="alert">Token {error}</p>}
        <p id="token-help" class="muted">
          The admin token is in <code>~/.gpuctl/server.yaml</code>; make others with{" "}
          <code>POST /api/tokens</code>. A read token signs in to a console that changes nothing.
        </p>
        <button type="submit" class="primary">Sign in</button>
      </form>
      {status && <p class="muted">{status}</p>}
    </main>
  );
}

function showLogin(p: PageRequest, next: string, error?: string, status = 200): Response {
  return p.render("Sign in", <LoginPage next={next} error={error} />, { status });
}

/** Failed sign-ins the server takes in a minute; past it every sign-in waits (429). */
export const MAX_FAILED_SIGNINS_PER_MINUTE = 30;

/** The times (ms) of the failed sign-ins of the last minute, per server. */
const failedSignIns = new WeakMap<Context, number[]>();

/** Seconds until a sign-in is taken again, or 0 when it is now. */
function signInWait(ctx: Context): number {
  const now = ctx.now().getTime();
  const recent = (failedSignIns.get(ctx) ?? []).filter((t) => now - t < 60_000);
  failedSignIns.set(ctx, recent);
  if (recent.length < MAX_FAILED_SIGNINS_PER_MINUTE) return 0;
  return Math.max(1, Math.ceil((recent[0] + 60_000 - now) / 1000));
}

/** Notes and logs a failed sign-in: the token's id when it has one, never its secret. */
function signInFailed(ctx: Context, token: string, why: string): void {
  const times = failedSignIns.get(ctx) ?? [];
  times.push(ctx.now().getTime());
  failedSignIns.set(ctx, times);
  ctx.log.warn("console sign-in failed", { why, token_id: parseToken(token)?.id ?? null });
}

export const routes: PageRoute[] = [
  {
    method: "GET",
    path: "/login",
    scope: "public",
    handler: (p) => {
      const next = safeNext(p.url.searchParams.get("next"));
      return p.principal ? p.redirect(next) : showLogin(p, next);
    },
  },
  {
    method: "POST",
    path: "/login",
    scope: "public",
    handler: async (p) => {
      const form = await readForm(p.req, loginForm);
      if (!form.ok) return showLogin(p, "/", form.errors.token ?? form.errors.form, 400);
      const next = safeNext(form.data.next);
      // Guessing is slowed server-wide (tokens are long random secrets; this also keeps the
      // log readable): past the budget, every sign-in waits out the minute.
      const wait = signInWait(p.ctx);
      if (wait > 0) {
        return showLogin(
          p,
          next,
          `cannot be checked now: more than ${MAX_FAILED_SIGNINS_PER_MINUTE} failed sign-ins ` +
            `in the last minute; try again in ${wait} s`,
          429,
        );
      }
      const who = authenticate(p.ctx, form.data.token);
      if (!who) {
        signInFailed(p.ctx, form.data.token, "unknown, expired or deleted token");
        return showLogin(
          p,
          next,
          "is not valid: it may be mistyped, expired or deleted",
          401,
        );
      }
      if (who.scope === "agent") {
        signInFailed(p.ctx, form.data.token, "an agent token");
        return showLogin(
          p,
          next,
          "belongs to an agent: sign in with a read, write or admin token",
          403,
        );
      }
      const cookie = p.startSession(who.token_id);
      if (!cookie) return showLogin(p, next, "was deleted while signing in", 401);
      return p.redirect(next, { "set-cookie": cookie });
    },
  },
];
