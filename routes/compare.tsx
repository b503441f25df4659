/**
 * `/compare?runs=a,b,…&metric=`: runs side by side — one metric of all of them overlaid, and
 * the table ranked by it with the config keys that differ as columns. Without runs, the page
 * says how to pick them; ids that exist nowhere are named.
 */
import type { ComponentChildren } from "preact";
import { Island } from "../components/island.tsx";
import Compare from "../islands/Compare.tsx";
import type { PageRequest, PageRoute } from "../server/console/page.tsx";
import { shellPage } from "../server/console/shell.tsx";
import { loadCompare } from "../server/console/workspace.ts";

const HOW_TO_PICK = (
  <p>
    Check two or more runs in an experiment's workspace (<a href="/experiments">Experiments</a>{" "}
    → an experiment) and click <strong>compare selected →</strong>, or name them in the address:
    {" "}
    <code>/compare?runs=&lt;run id&gt;,&lt;run id&gt;</code> (ids are on the{" "}
    <a href="/runs">Runs</a> list).
  </p>
);

function problem(p: PageRequest, status: number, what: ComponentChildren) {
  return shellPage(
    p,
    { title: "Compare runs", path: "/experiments", status },
    <section class="panel compare-problem" role={status === 200 ? undefined : "alert"}>
      {what}
      {HOW_TO_PICK}
    </section>,
  );
}

export const routes: PageRoute[] = [{
  method: "GET",
  path: "/compare",
  scope: "read",
  handler: async (p) => {
    const d = await loadCompare(p.ctx, p.url.searchParams);
    switch (d.kind) {
      case "none":
        return problem(p, 200, <p>No runs to compare yet.</p>);
      case "one":
        return problem(
          p,
          400,
          <p>
            Only one run is named (<code>{d.id}</code>): a comparison needs at least two.
          </p>,
        );
      case "unknown":
        return problem(
          p,
          404,
          <p>
            {d.ids.length === 1 ? "This run does not exist: " : "These runs do not exist: "}
            {d.ids.map((id, i) => (
              <>
                {i > 0 && ", "}
                <code class="unknown-run">{id}</code>
              </>
            ))}.
          </p>,
        );
    }
    return shellPage(
      p,
      { title: `Compare ${d.runs.length} runs`, path: "/experiments" },
      <Island
        component={Compare}
        props={{
          runs: d.runs,
          comparison: d.comparison,
          primary: d.primary,
          keys: d.keys,
          series: d.series,
          maxPoints: d.maxPoints,
          smooth: d.view.smooth,
          x: d.view.x,
        }}
      />,
    );
  },
}];
