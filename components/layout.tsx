/** The page shell: the top bar (product, navigation, who is signed in, sign out) and the title line. */
import type { ComponentChildren } from "preact";
import type { Principal } from "../server/auth/service.ts";

/** The console's pages, in the order the top bar shows them. A page joins when it exists. */
const NAV: { href: string; label: string }[] = [
  { href: "/", label: "Dashboard" },
];

export interface LayoutProps {
  principal: Principal;
  canWrite: boolean;
  /** The path of the page, to mark its entry in the navigation. */
  path: string;
  title: string;
  /** The page's main action, on the right of the title (write sessions only). */
  action?: ComponentChildren;
  children: ComponentChildren;
}

export function Layout({ principal, canWrite, path, title, action, children }: LayoutProps) {
  return (
    <>
      <header class="topbar">
        <a class="brand" href="/">gpuctl</a>
        <nav aria-label="Pages">
          {NAV.map((n) => (
            <a href={n.href} aria-current={n.href === path ? "page" : undefined}>{n.label}</a>
          ))}
        </nav>
        <div class="who">
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
          {canWrite && action}
        </div>
        {children}
      </main>
    </>
  );
}
