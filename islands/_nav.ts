/**
 * The console's pages, in the order the top bar shows them, with their `g` shortcut key: one
 * table for the server-rendered navigation (components/layout.tsx) and the shortcuts (TopBar).
 */
export interface NavEntry {
  href: string;
  label: string;
  /** `g` then this key goes to the page. */
  key: string;
}

export const NAV: readonly NavEntry[] = [
  { href: "/", label: "Dashboard", key: "d" },
  { href: "/runs", label: "Runs", key: "r" },
  { href: "/experiments", label: "Experiments", key: "x" },
  { href: "/sweeps", label: "Sweeps", key: "s" },
  { href: "/jobs", label: "Jobs", key: "j" },
  { href: "/nodes", label: "Nodes", key: "n" },
  { href: "/events", label: "Events", key: "e" },
];

/** The page a `g` shortcut key goes to; undefined for a key no page has. */
export function navTarget(key: string): string | undefined {
  return NAV.find((entry) => entry.key === key)?.href;
}
