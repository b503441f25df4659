/**
 * The browser side of islands: finds every marker the server rendered and hydrates it with its
 * component and the props the server serialised beside it. The build generates the entry that
 * calls this with one lazy loader per island, so a page downloads only the islands it shows.
 */
import { type ComponentType, type ContainerNode, h, hydrate } from "preact";

// The browser's document, declared for this file alone: lib "dom" would replace Deno's types
// (its WebSocket, for one) for the whole program that `deno check` sees.
interface MarkerElement {
  getAttribute(name: string): string | null;
  setAttribute(name: string, value: string): void;
}
declare const document: {
  querySelectorAll(selector: string): Iterable<MarkerElement>;
  documentElement: MarkerElement;
};

/** The tag of the element around each server-rendered island. */
export const ISLAND_TAG = "gpuctl-island";

// deno-lint-ignore no-explicit-any -- each island has its own props type
export type IslandLoaders = Record<string, () => Promise<{ default: ComponentType<any> }>>;

/** Hydrates every island on the page; marks `<html data-islands="hydrated">` when done. */
export async function hydrateIslands(loaders: IslandLoaders): Promise<void> {
  const jobs: Promise<void>[] = [];
  for (const el of document.querySelectorAll(ISLAND_TAG)) {
    const name = el.getAttribute("data-island") ?? "";
    const load = loaders[name];
    if (!load) {
      report(`no island named "${name}" in this build: reload the page`);
      continue;
    }
    jobs.push(
      load().then((mod) =>
        hydrate(
          h(mod.default, JSON.parse(el.getAttribute("data-props")!)),
          el as unknown as ContainerNode,
        )
      ),
    );
  }
  const results = await Promise.allSettled(jobs);
  for (const r of results) if (r.status === "rejected") report(String(r.reason));
  document.documentElement.setAttribute("data-islands", "hydrated");
}

function report(message: string): void {
  // deno-lint-ignore no-console -- the browser console is where a page reports its own failure
  console.error(`gpuctl console: ${message}`);
}
