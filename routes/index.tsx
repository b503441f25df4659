/**
 * `/`: the console's start. Until the dashboard's service functions exist it shows who is
 * signed in and the live connection to the server's event stream, and says what comes next.
 */
import { Island } from "../components/island.tsx";
import { Layout } from "../components/layout.tsx";
import LiveStatus from "../islands/LiveStatus.tsx";
import type { PageRoute } from "../server/console/page.tsx";

export const indexRoutes: PageRoute[] = [{
  method: "GET",
  path: "/",
  scope: "read",
  handler: ({ render, principal, canWrite }) =>
    render(
      "gpuctl",
      <Layout principal={principal!} canWrite={canWrite} path="/" title="Console">
        <section class="panel">
          <Island component={LiveStatus} props={{ url: "/api/events/stream" }} />
        </section>
        <section class="panel prose">
          <p>
            Signed in as <strong>{principal!.name}</strong> with scope{" "}
            <strong>{principal!.scope}</strong>
            {canWrite ? "." : ": this session can look but not change anything."}
          </p>
          <p>
            This is the start of the console. The dashboard, runs, jobs, nodes and events pages come
            next; until then the REST API under <code>/api</code>{" "}
            (with a bearer token) and the Python SDK do everything, for example:
          </p>
          <pre><code>curl -H "Authorization: Bearer $GPUCTL_TOKEN" {"http://<host>:8600/api/jobs"}</code></pre>
        </section>
      </Layout>,
    ),
}];
