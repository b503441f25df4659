/** The page shell: a read session never gets the page's write action. */
import { assert, assertFalse } from "./assert.ts";
import { renderToString } from "preact-render-to-string";
import { Layout } from "../components/layout.tsx";

const principal = (scope: "read" | "write") => ({
  token_id: "t1",
  name: `${scope}-token`,
  scope,
  node_id: null,
});

Deno.test("the page's main action renders for write sessions only", () => {
  const page = (scope: "read" | "write") =>
    renderToString(
      <Layout
        principal={principal(scope)}
        canWrite={scope === "write"}
        path="/"
        title="Jobs"
        action={<button type="button">+ submit job</button>}
      >
        <p>body</p>
      </Layout>,
    );
  const write = page("write");
  assert(write.includes("+ submit job") && !write.includes("read-only"));
  const read = page("read");
  assertFalse(read.includes("+ submit job"), "no write control for a read session");
  assert(read.includes("read-only"));
});
