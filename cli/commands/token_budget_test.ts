import { assert, assertEquals, assertStringIncludes } from "../../tests/assert.ts";
import { runInProcess, startTestServer, tempHome } from "../_test_server.ts";

Deno.test("gpuctl token create --max-…, job submit --dry-run, a refusal past the budget, token budget and status", async () => {
  const server = await startTestServer();
  const { home, cleanup } = await tempHome();
  try {
    const admin = {
      GPUCTL_HOME: home,
      GPUCTL_SERVER_URL: server.url,
      GPUCTL_TOKEN: server.h.tokens.admin,
    };
    const made = await runInProcess([
      "token",
      "create",
      "--scope",
      "write",
      "--name",
      "bot",
      "--max-queued",
      "1",
      "--max-gpus",
      "2",
      "--json",
    ], admin);
    assertEquals([made.code, made.stderr], [0, ""]);
    const created = JSON.parse(made.stdout);
    assertEquals(created.budget, { max_queued_jobs: 1, max_gpus: 2 });
    const bot = { ...admin, GPUCTL_TOKEN: created.token };
    const submit = ["job", "submit", "-n", "a", "-g", "1", "-d", "/w"];

    const dry = await runInProcess([...submit, "--dry-run", "--", "python", "train.py"], bot);
    assertEquals([dry.code, dry.stderr], [0, ""]);
    assertStringIncludes(dry.stdout, "Nothing was stored");
    assertStringIncludes(dry.stdout, "budget after:");
    assertStringIncludes(dry.stdout, "max_queued_jobs        1 used of 1, 0 left");
    assertEquals((await server.h.call("GET", "/api/jobs")).json.items.length, 0);

    assertEquals((await runInProcess([...submit, "--", "python", "train.py"], bot)).code, 0);
    const refused = await runInProcess([...submit, "--", "python", "train.py"], bot);
    assertEquals(refused.code, 1);
    assertStringIncludes(refused.stderr, 'budget max_queued_jobs of token "bot"');
    assertStringIncludes(refused.stderr, "1 of its jobs queued, limit 1");
    assertEquals((await server.h.call("GET", "/api/jobs")).json.items.length, 1);

    const status = await runInProcess(["status"], bot);
    assertStringIncludes(status.stdout, "budget (this token):");
    assertStringIncludes(status.stdout, "max_gpus               0 used of 2, 2 left");

    const none = await runInProcess(["token", "budget", created.id], admin);
    assertEquals(none.code, 2);
    const bad = await runInProcess(["token", "budget", created.id, "--max-gpus", "lots"], admin);
    assertEquals(bad.code, 2);
    assertStringIncludes(bad.stderr, "--max-gpus");
    const changed = await runInProcess(
      ["token", "budget", created.id, "--max-queued", "5", "--max-gpus", "none"],
      admin,
    );
    assertEquals([changed.code, changed.stderr], [0, ""]);
    assertStringIncludes(changed.stdout, 'Token "bot"');
    assertStringIncludes(changed.stdout, "budget: max_queued_jobs=5");
    assert(!changed.stdout.includes("max_gpus"));
    const byBot = await runInProcess(["token", "budget", created.id, "--max-queued", "50"], bot);
    assertEquals(byBot.code, 1); // only an admin changes budgets
    assertEquals((await runInProcess([...submit, "--", "python", "train.py"], bot)).code, 0);
    const list = await runInProcess(["token", "list"], admin);
    assertStringIncludes(list.stdout, "max_queued_jobs=5");
  } finally {
    await cleanup();
    await server.close();
  }
});
