import { assertEquals } from "../tests/assert.ts";
import { EVENT_TYPES } from "./event_types.ts";

const ROOT = new URL("../", import.meta.url);

async function* sources(dir: URL): AsyncGenerator<URL> {
  for await (const e of Deno.readDir(dir)) {
    const url = new URL(e.name + (e.isDirectory ? "/" : ""), dir);
    if (e.isDirectory) yield* sources(url);
    else if (e.name.endsWith(".ts") && !e.name.endsWith("_test.ts")) yield url;
  }
}

Deno.test("EVENT_TYPES names every event type the server and the agent raise", async () => {
  const raised = new Set<string>();
  for (const dir of ["server/", "agent/"]) {
    for await (const file of sources(new URL(dir, ROOT))) {
      const text = await Deno.readTextFile(file);
      for (const m of text.matchAll(/\btype: "([A-Z][A-Z0-9_]+)"/g)) raised.add(m[1]);
      // The end of a run is raised through a table of outcome → type.
      for (const m of text.matchAll(/"(RUN_[A-Z_]+)"/g)) raised.add(m[1]);
    }
  }
  const missing = [...raised].filter((t) => !(EVENT_TYPES as readonly string[]).includes(t));
  assertEquals(missing, [], "add these to EVENT_TYPES in protocol/event_types.ts");
});
