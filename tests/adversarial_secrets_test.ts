/**
 * A job's secret never reaches a reader through what is derived from its output or its
 * submission: the job prints it (also split by a terminal colour code), fails with it in its
 * OOM reason, passes it as an argument (`--hf-token`, `--api-key`) that the SDK records in its
 * argv and config. Every face is read back (REST, MCP, the console's HTML, the events, a
 * webhook's body) and none holds the secret, as stored or as a screen shows it.
 */
import { assert, assertEquals, assertStringIncludes } from "./assert.ts";
import { consoleSession } from "./_harness.ts";
import { createGatewayHarness, eventually, FakeAgent } from "./_fake_agent.ts";
import { call, httpClient } from "./_mcp_client.ts";
import { startReceiver } from "../server/webhooks/_receiver.ts";
import { resolveWebhooks, WebhookDispatcher } from "../server/webhooks/mod.ts";
import { SECRET_MASK, stripTerminalEscapes } from "../protocol/secret_env.ts";

/** In the job's environment as HF_TOKEN: the server knows it is secret. */
const SECRET = "hf_S3cretValue42xyz";
/** Only on the command line, after a secret-named flag. */
const LITERAL = "sk-literal-Arg-9876";

Deno.test("a job's secret stays masked in every derived field on every face", async () => {
  const h = await createGatewayHarness();
  const rx = startReceiver();
  const hooks = new WebhookDispatcher({
    hooks: resolveWebhooks([{ url: `${rx.url}/hook`, kind: "json", min_severity: "info" }]),
    bus: h.ctx.bus,
    log: h.ctx.log,
  });
  hooks.start();
  const agent = await FakeAgent.connect(h.base, h.tokens.agent);
  try {
    agent.hello();
    await agent.until((a) => a.of("ack").length === 2);
    const submitted = await h.call("POST", "/api/jobs", {
      body: {
        name: "leaky",
        command: ["python", "train.py", "--api-key", LITERAL, `--hf-token=${SECRET}`],
        working_dir: "/w",
        gpus: 1,
        env: { HF_TOKEN: SECRET },
      },
    });
    assertEquals(submitted.status, 201, submitted.text);
    const jobId = submitted.json.id;
    await agent.until((a) => a.of("dispatch").length === 1);
    const ref = { job_id: jobId, attempt: 1, run_id: agent.of("dispatch")[0].job.run_id };
    agent.jobState(ref, "RUNNING");
    const split = `${SECRET.slice(0, 6)}\x1b[31m${SECRET.slice(6)}\x1b[0m`;
    agent.data({
      type: "logs",
      ...ref,
      lines: [
        { seq: 1, text: `logging in with ${split}` },
        { seq: 2, text: `torch.OutOfMemoryError: CUDA out of memory (token ${SECRET})` },
      ],
    });
    agent.data({
      type: "sdk",
      ...ref,
      batch: {
        config: { api_key: LITERAL, lr: 0.1, note: `uses ${SECRET}` },
        env: { argv: ["train.py", "--api-key", LITERAL, `--hf-token=${SECRET}`] },
      },
    });
    agent.jobState(ref, "EXITED", {
      exit_code: 1,
      failure_class: "OOM",
      reason: `CUDA out of memory: ${SECRET.slice(0, 5)}\x1b[1m${SECRET.slice(5)}\x1b[0m`,
    });
    await eventually(async () =>
      (await h.call("GET", `/api/jobs/${jobId}`)).json.status === "FAILED"
    );
    await rx.waitFor(3);

    const faces: Record<string, string> = {};
    const rest = async (path: string) => {
      const res = await h.call("GET", path, { token: h.tokens.read });
      assertEquals(res.status, 200, `${path}: ${res.text.slice(0, 300)}`);
      faces[`REST ${path}`] = res.text;
      return res.json;
    };
    const job = await rest(`/api/jobs/${jobId}`);
    await rest(`/api/jobs?limit=10`);
    const run = await rest(`/api/runs/${ref.run_id}`);
    await rest(`/api/runs/${ref.run_id}/failure`);
    await rest(`/api/runs/${ref.run_id}/logs`);
    await rest(`/api/events?limit=100`);

    await using mcp = await httpClient(h.base, h.tokens.read);
    for (
      const [tool, args] of [
        ["get_job", { job_id: jobId }],
        ["get_run", { run_id: ref.run_id }],
        ["explain_failure", { run_id: ref.run_id }],
        ["diagnose_run", { run_id: ref.run_id }],
        ["list_events", { run_id: ref.run_id }],
        ["get_logs", { run_id: ref.run_id }],
        ["list_jobs", {}],
      ] as const
    ) {
      faces[`MCP ${tool}`] = JSON.stringify(await call(mcp, tool, args));
    }

    const cookie = await consoleSession(h, "read");
    for (const path of [`/runs/${ref.run_id}`, `/jobs`, `/events`, `/`]) {
      const res = await h.app.fetch(
        new Request(`http://gpuctl.test${path}`, { headers: { cookie } }),
      );
      assertEquals(res.status, 200, path);
      faces[`console ${path}`] = await res.text();
    }
    for (const [i, r] of rx.requests.entries()) faces[`webhook #${i + 1}`] = r.body;

    for (const [face, text] of Object.entries(faces)) {
      // As stored and as a screen shows it (escapes removed; JSON's \u001b written out).
      const shown = stripTerminalEscapes(text.replaceAll("\\u001b", "\x1b"));
      for (const secret of [SECRET, LITERAL]) {
        assert(!text.includes(secret), `${face} holds ${secret}`);
        assert(!shown.includes(secret), `${face} shows ${secret} once escapes are removed`);
      }
    }
    // What was masked says so where a reader looks.
    assertStringIncludes(job.reason, SECRET_MASK);
    assertEquals(job.command, [
      "python",
      "train.py",
      "--api-key",
      SECRET_MASK,
      `--hf-token=${SECRET_MASK}`,
    ]);
    assertEquals(run.config.api_key, SECRET_MASK);
    assertEquals(run.config.lr, 0.1);
    assertEquals(run.env.argv, ["train.py", "--api-key", SECRET_MASK, `--hf-token=${SECRET_MASK}`]);
    const oom = (await h.call("GET", "/api/events?type=OOM")).json.items[0];
    assertStringIncludes(oom.message, SECRET_MASK);
    // The job itself still runs with the real values.
    assertEquals(agent.of("dispatch")[0].job.env.HF_TOKEN, SECRET);
  } finally {
    await hooks.stop();
    await rx.close();
    await agent.close();
    await h.stop();
  }
});

Deno.test("a line without a secret keeps its colour codes; a split secret is kept as shown, masked", async () => {
  const { maskSecretText } = await import("../protocol/secret_env.ts");
  assertEquals(maskSecretText("\x1b[32mok\x1b[0m", [SECRET]), "\x1b[32mok\x1b[0m");
  assertEquals(
    maskSecretText(`key ${SECRET.slice(0, 3)}\x1b[31m${SECRET.slice(3)}\x1b[0m!`, [SECRET]),
    `key ${SECRET_MASK}!`,
  );
  assertEquals(maskSecretText(`a ${SECRET} b`, [SECRET]), `a ${SECRET_MASK} b`);
});
