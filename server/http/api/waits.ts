/**
 * `GET /api/{runs,jobs,sweeps}/{id}/wait`: one request that stays open until the run (the
 * job's current run, the sweep) finishes, reaches a step, raises an event or an anomaly, or
 * the timeout passes — the REST face of server/runs/wait.ts. Each open request holds a wait
 * slot of its token, as MCP's `wait_for_run` does.
 *
 * A wrong request is refused with its status before anything is sent. After that the answer
 * is a 200 whose JSON body comes when the wait ends, after a space every 15 s while it goes on
 * (JSON allows leading whitespace; the space finds a client that went away and keeps proxies
 * from closing an idle connection). A client that goes away, or a server that stops, ends the
 * wait and gives its slot back.
 */
import { waitQuery } from "../../../protocol/waits.ts";
import { checkWait, waitAnswer, type WaitArgs } from "../../runs/wait.ts";
import { acquireWait } from "../../runs/wait_slots.ts";
import type { Context } from "../../context.ts";
import { readQuery } from "../body.ts";
import { errorBody, errorResponseOf } from "../errors.ts";
import { idParam, principalOf, type RequestContext, type RouteDef } from "../route.ts";
import { SSE_KEEPALIVE_MS, sseStreamsOf } from "../sse.ts";

const encoder = new TextEncoder();

function answer(c: RequestContext, ctx: Context, target: WaitArgs): Response {
  const args = { ...readQuery(c.req.url, waitQuery), ...target };
  checkWait(ctx, args);
  const release = acquireWait(ctx, principalOf(c).token_id);
  const ended = new AbortController();
  let keepAlive: ReturnType<typeof setInterval> | undefined;
  let untrack = () => {};
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      untrack = sseStreamsOf(ctx).track(() => ended.abort());
      keepAlive = setInterval(() => {
        try {
          controller.enqueue(encoder.encode(" "));
        } catch {
          ended.abort();
        }
      }, SSE_KEEPALIVE_MS);
      waitAnswer(ctx, args, { signal: ended.signal })
        .then(
          ({ data, summary }) => JSON.stringify({ ...data, summary }),
          (err) => {
            const known = errorResponseOf(err);
            if (!known) ctx.log.error("wait failed", { err: String(err) });
            return JSON.stringify(
              known?.body ?? errorBody("InternalError", "the wait failed; see the server log"),
            );
          },
        )
        .then((text) => {
          try {
            controller.enqueue(encoder.encode(text + "\n"));
            controller.close();
          } catch {
            // The client went away first.
          }
        })
        .finally(() => {
          clearInterval(keepAlive);
          untrack();
          release();
        });
    },
    cancel() {
      ended.abort();
    },
  });
  return new Response(body, {
    status: 200,
    headers: { "content-type": "application/json; charset=utf-8", "cache-control": "no-store" },
  });
}

export const waitRoutes: RouteDef[] = [
  {
    method: "GET",
    path: "/api/runs/:id/wait",
    scope: "read",
    handler: (c, ctx) => answer(c, ctx, { run_id: idParam(c) }),
  },
  {
    method: "GET",
    path: "/api/jobs/:id/wait",
    scope: "read",
    handler: (c, ctx) => answer(c, ctx, { job_id: idParam(c) }),
  },
  {
    method: "GET",
    path: "/api/sweeps/:id/wait",
    scope: "read",
    handler: (c, ctx) => answer(c, ctx, { sweep_id: idParam(c) }),
  },
];
