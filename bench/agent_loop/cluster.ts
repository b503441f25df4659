/**
 * The loop's surroundings: a server and an agent with fake GPUs (real processes), a token for
 * the loop, its MCP client, and the clean-up of anything the loop left queued or running.
 */
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { api, startCluster } from "../../tests/_processes.ts";
import { httpClient } from "../../tests/_mcp_client.ts";

export type LoopCluster = Awaited<ReturnType<typeof startLoopCluster>>;

/** A server and an agent with `gpus` fake GPUs in a temp home, ready once the node is ONLINE. */
export async function startLoopCluster(gpus: number) {
  const c = await startCluster({ fakeGpus: gpus, prefix: "gpuctl-agent-loop-" });
  return {
    ...c,
    /** An MCP client with a fresh write token (or `token`), as a user would connect an agent. */
    async client(token?: string): Promise<Client & { [Symbol.asyncDispose](): Promise<void> }> {
      return await httpClient(c.server.url, token ?? await createWriteToken(c.call, "agent-loop"));
    },
    /** Cancels every job still queued or running (their process trees end with them). */
    async cancelLeftovers(): Promise<number> {
      let n = 0;
      for (const status of ["QUEUED", "DISPATCHED", "RUNNING"]) {
        const jobs = (await c.call("GET", `/api/jobs?status=${status}&limit=500`)).json;
        for (const j of jobs?.items ?? []) {
          await c.call("POST", `/api/jobs/${j.id}/cancel`);
          n++;
        }
      }
      return n;
    },
  };
}

/** A write token (the scope the loop's control tools need). */
export async function createWriteToken(
  call: ReturnType<typeof api>,
  name: string,
): Promise<string> {
  const res = await call("POST", "/api/tokens", { name, scope: "write" });
  if (res.status !== 201) throw new Error(`Cannot create a write token: ${res.text}`);
  return res.json.token;
}

/**
 * A write token with a tight budget, for the loop's budget mode: `gpuSeconds` of GPU time in
 * any 24 hours (`max_gpu_hours_24h`). Past it the server refuses the token's GPU jobs with a
 * `BudgetExceeded` error naming the budget, and cancels its running ones.
 */
export async function createBudgetedToken(
  call: ReturnType<typeof api>,
  budget: { gpuSeconds: number },
): Promise<string> {
  const res = await call("POST", "/api/tokens", {
    name: "agent-loop-budget",
    scope: "write",
    budget: { max_gpu_hours_24h: budget.gpuSeconds / 3600 },
  });
  if (res.status !== 201) {
    throw new Error(`Cannot create a token with a budget: ${res.status} ${res.text}`);
  }
  return res.json.token;
}

/** The GPU-seconds a token's jobs used in the last 24 hours, as the server counts them. */
export async function gpuSecondsUsed(base: string, token: string): Promise<number | null> {
  const me = await api(base, token)("GET", "/api/auth/whoami");
  const used = me.json?.budget?.max_gpu_hours_24h?.used;
  return typeof used === "number" ? used * 3600 : null;
}
