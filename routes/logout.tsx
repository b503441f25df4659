/** `/logout`: ends the session in this browser (a POST from the top bar's sign-out button). */
import type { PageRoute } from "../server/console/page.tsx";

export const routes: PageRoute[] = [{
  method: "POST",
  path: "/logout",
  scope: "public",
  handler: (p) => p.redirect("/login", { "set-cookie": p.endSession() }),
}];
