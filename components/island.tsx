/**
 * Server side of islands: renders an island's component to HTML inside a marker element that
 * names it and carries its props as JSON, for `islands/_boot.ts` to hydrate in the browser.
 * The props travel in an attribute, which the renderer escapes like any other (`"`, `&`, `<`,
 * `>`), so no string in them (`</script>`, `<!--`) can end the element or start markup.
 */
import { type ComponentType, createContext, h } from "preact";
import { useContext } from "preact/hooks";
import { ISLAND_TAG } from "../islands/_boot.ts";

/**
 * The islands of one render, so the document knows whether to load the boot script and which
 * islands' modules to preload.
 */
export const IslandsOnPage = createContext<{ count: number; names: Set<string> } | null>(null);

/** Renders `component` (the default export of `islands/<Name>.tsx`) as an island. */
export function Island<P>(
  { component, props }: { component: ComponentType<P>; props: NoInfer<P> },
) {
  const page = useContext(IslandsOnPage);
  const name = component.name;
  if (!page) throw new Error(`Cannot render island "${name}": it is outside renderPage()`);
  const json = islandPropsJson(name, props);
  page.count++;
  page.names.add(name);
  return h(
    ISLAND_TAG,
    { "data-island": name, "data-props": json },
    h(component as ComponentType<Record<string, unknown>>, props as Record<string, unknown>),
  );
}

/**
 * The JSON of an island's props; throws naming the first value that would not survive the trip
 * (functions, undefined, NaN, dates, class instances), instead of letting it arrive changed.
 */
export function islandPropsJson(island: string, props: unknown): string {
  const bad = (path: string, what: string) =>
    new Error(
      `Cannot render island "${island}": ${path} is ${what}; island props must be JSON ` +
        "(strings, finite numbers, booleans, null, arrays and plain objects)",
    );
  const walk = (v: unknown, path: string): void => {
    if (v === null || typeof v === "string" || typeof v === "boolean") return;
    if (typeof v === "number") {
      if (!Number.isFinite(v)) throw bad(path, String(v));
      return;
    }
    if (Array.isArray(v)) return v.forEach((x, i) => walk(x, `${path}[${i}]`));
    if (typeof v === "object") {
      const proto = Object.getPrototypeOf(v);
      if (proto !== Object.prototype && proto !== null) {
        throw bad(path, `a ${proto?.constructor?.name ?? "non-plain"} object`);
      }
      for (const [k, x] of Object.entries(v)) walk(x, `${path}.${k}`);
      return;
    }
    throw bad(path, typeof v === "function" ? "a function" : String(v));
  };
  walk(props, "props");
  return JSON.stringify(props);
}
