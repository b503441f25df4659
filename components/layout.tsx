/**
 * The page shell: the top bar (product, navigation, the live fleet summary, who is signed in,
 * sign out) and the title line with the page's main action on the right.
 */
import type { ComponentChildren } from "preact";
import type { Principal } from "../server/auth/service.ts";
import { Island } from "./island.tsx";
import TopBar, { type FleetSummary } from "../islands/TopBar.tsx";
import { NAV } from "../islands/_nav.ts";

export interface LayoutProps {
  principal: Principal;
  canWrite: boolean;
  /** The path of the page, to mark its entry in the navigation. */
  path: string;
  title: ComponentChildren;
  /** The page's main action, on the right of the title (write sessions only). */
  action?: ComponentChildren;
  /** The fleet summary of the top bar (it then updates live). */
  fleet?: FleetSummary;
  children: ComponentChildren;
}

const current = (href: string, path: string) =>
  href === "/" ? path === "/" : path === href || path.startsWith(`${href}/`);

export function Layout(
  { principal, canWrite, path, title, action, fleet, children }: LayoutProps,
) {
  return (
    <>
      <header class="topbar">
        <a class="brand" href="/">gpuctl</a>
        <nav aria-label="Pages">
          {NAV.map((n) => (
            <a
              href={n.href}
              aria-current={current(n.href, path) ? "page" : undefined}
              title={`g ${n.key}`}
            >
              {n.label}
            </a>
          ))}
        </nav>
        <div class="who">
          {fleet && <Island component={TopBar} props={{ fleet }} />}
          <span class="who-name" title={`token ${principal.token_id}`}>{principal.name}</span>
          <span class={`badge scope-${principal.scope}`}>{principal.scope}</span>
          {!canWrite && (
            <span class="badge read-only" title="this session changes nothing">
              read-only
            </span>
          )}
          <form method="post" action="/logout">
            <button type="submit" class="link-button">Sign out</button>
          </form>
        </div>
      </header>
      <main class="page">
        <div class="title-line">
          <h1>{title}</h1>
          {canWrite && action && <div class="actions">{action}</div>}
        </div>
        {children}
      </main>
    </>
  );
}
