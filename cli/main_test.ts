import { join } from "node:path";
import { assertEquals, assertStringIncludes } from "../tests/assert.ts";
import { runInProcess, runSubprocess, tempHome, TFEVENTS_FIXTURES } from "./_test_server.ts";
import { invocationDir } from "./main.ts";

Deno.test("gpuctl --help lists the commands and exits 0; no command is a usage error", async () => {
  const help = await runInProcess(["--help"], {});
  assertEquals(help.code, 0);
  assertStringIncludes(help.stdout, "import-run");
  assertStringIncludes(help.stdout, "sync");
  const none = await runInProcess([], {});
  assertEquals([none.code, none.stdout], [2, ""]);
  assertStringIncludes(none.stderr, "usage: gpuctl <command>");
});

Deno.test("gpuctl with an unknown command exits 2 and names it", async () => {
  const res = await runInProcess(["imprt-run"], {});
  assertEquals(res.code, 2);
  assertStringIncludes(res.stderr, 'unknown command "imprt-run"');
});

Deno.test("gpuctl (a subprocess) with no server configured exits 1 and says what to set", async () => {
  const { home, cleanup } = await tempHome();
  try {
    const res = await runSubprocess(
      ["import-run", join(TFEVENTS_FIXTURES, "torch-logs"), "--project", "p"],
      { GPUCTL_HOME: home },
    );
    assertEquals([res.code, res.stdout], [1, ""]);
    assertStringIncludes(res.stderr, "gpuctl import-run: No gpuctl server configured");
    assertStringIncludes(res.stderr, "GPUCTL_SERVER_URL and GPUCTL_TOKEN");
  } finally {
    await cleanup();
  }
});

Deno.test("gpuctl (a subprocess) prints a command's help and exits 2 on a bad flag", async () => {
  const help = await runSubprocess(["sync", "--help"], {});
  assertEquals(help.code, 0);
  assertStringIncludes(help.stdout, "usage: gpuctl sync [options]");
  const bad = await runSubprocess(["sync", "--forse"], {});
  assertEquals(bad.code, 2);
  assertStringIncludes(bad.stderr, "--forse");
  assertStringIncludes(bad.stderr, 'Run "gpuctl sync --help" for usage.');
});

Deno.test("invocationDir() is INIT_CWD under `deno task cli` (run in the checkout's root), else the folder", () => {
  const root = "/src/gpuctl";
  assertEquals(invocationDir({ INIT_CWD: "/home/me/exp" }, root, root), "/home/me/exp");
  assertEquals(invocationDir({ INIT_CWD: "/home/me/exp" }, `${root}/`, root), "/home/me/exp");
  // A stale INIT_CWD in a shell does not move a command run anywhere else.
  assertEquals(
    invocationDir({ INIT_CWD: "/home/me/exp" }, "/home/me/other", root),
    "/home/me/other",
  );
  assertEquals(invocationDir({}, root, root), root);
  assertEquals(invocationDir({ INIT_CWD: "relative" }, root, root), root);
  assertEquals(invocationDir({ INIT_CWD: "/home/me/exp" }, root, null), root);
});

Deno.test("`deno task cli job submit` without -d submits the folder it was typed in", async () => {
  const here = await Deno.realPath(await Deno.makeTempDir({ prefix: "gpuctl-invocation-" }));
  // A stand-in server that answers the submission with what it was sent.
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (req) => {
    const body = await req.json();
    return Response.json({ ...body, id: "j-1", status: "QUEUED", attempt: 1 }, { status: 201 });
  });
  try {
    const out = await new Deno.Command(Deno.execPath(), {
      args: [
        "task",
        "--quiet",
        "--config",
        new URL("../deno.json", import.meta.url).pathname,
        "cli",
        "job",
        "submit",
        "--json",
        "--",
        "true",
      ],
      cwd: here,
      // Not the INIT_CWD of the `deno task test` this may run under: deno task keeps one that
      // is already set, as npm does.
      clearEnv: true,
      env: {
        ...withoutInitCwd(Deno.env.toObject()),
        GPUCTL_SERVER_URL: `http://127.0.0.1:${server.addr.port}`,
        GPUCTL_TOKEN: "gpuctl_test",
        GPUCTL_HOME: here,
      },
      stdout: "piped",
      stderr: "piped",
    }).output();
    const stderr = new TextDecoder().decode(out.stderr);
    assertEquals(out.code, 0, stderr);
    assertEquals(JSON.parse(new TextDecoder().decode(out.stdout)).working_dir, here);
  } finally {
    await server.shutdown();
    await Deno.remove(here, { recursive: true });
  }
});

function withoutInitCwd(env: Record<string, string>): Record<string, string> {
  const { INIT_CWD: _, ...rest } = env;
  return rest;
}
