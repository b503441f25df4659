import { join } from "node:path";
import { assertEquals, assertStringIncludes } from "../tests/assert.ts";
import { runInProcess, runSubprocess, tempHome, TFEVENTS_FIXTURES } from "./_test_server.ts";

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
