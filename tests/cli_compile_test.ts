/**
 * The single-file gpuctl of `deno task compile`: built with the task's own command (into a
 * temporary folder), it runs the server, an agent with fake GPUs and a job, with no Deno
 * behind it. `deno compile` downloads Deno's runtime for the target the first time; where
 * that cannot be fetched (no network) the test is skipped and says why, unless
 * GPUCTL_REQUIRE_COMPILE=1 asks for it to fail instead.
 */
import { assert, assertEquals, assertStringIncludes } from "./assert.ts";
import { api, nodeOnline, spawnProgram } from "./_processes.ts";
import { clean } from "../cli/output.ts";

const ROOT = new URL("..", import.meta.url).pathname;

/** Why `deno compile` cannot work here, or null when it can. */
async function compileUnavailable(): Promise<string | null> {
  const dir = await Deno.makeTempDir({ prefix: "gpuctl-compile-probe-" });
  try {
    await Deno.writeTextFile(`${dir}/probe.ts`, "Deno.exit(0);\n");
    const out = await new Deno.Command(Deno.execPath(), {
      args: [
        "compile",
        "--target",
        "x86_64-unknown-linux-gnu",
        "-o",
        `${dir}/probe`,
        `${dir}/probe.ts`,
      ],
      stdout: "piped",
      stderr: "piped",
    }).output();
    if (out.success) return null;
    const text = new TextDecoder().decode(out.stderr);
    // The download that failed, and why: the lines after "Caused by:".
    const lines = text.split("\n").map((l) => clean(l).trim()).filter((l) => /^\d+: /.test(l));
    return lines.slice(0, 2).join("; ") || clean(text).slice(0, 300);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

const unavailable = await compileUnavailable();
const required = Deno.env.get("GPUCTL_REQUIRE_COMPILE") === "1";
if (unavailable && !required) {
  // deno-lint-ignore no-console -- says why the test below is skipped
  console.error(`cli_compile_test: deno compile is unavailable here, skipped: ${unavailable}`);
}

/** The `deno compile` arguments of deno.json's compile task, writing to `output`. */
function compileArgs(output: string): string[] {
  const task: string = JSON.parse(Deno.readTextFileSync(`${ROOT}/deno.json`)).tasks.compile;
  const command = task.split("&&").map((s) => s.trim()).find((s) => s.startsWith("deno compile"))!;
  const words = command.split(/\s+/).slice(1);
  const at = words.indexOf("--output");
  words[at + 1] = output;
  return words;
}

Deno.test({
  name: "the compiled gpuctl runs a server, an agent with fake GPUs and a job that succeeds",
  ignore: unavailable !== null && !required,
  async fn() {
    const home = await Deno.makeTempDir({ prefix: "gpuctl-compiled-" });
    const procs: { kill(): Promise<Deno.CommandStatus> }[] = [];
    try {
      const build = await new Deno.Command(Deno.execPath(), { args: ["task", "build"], cwd: ROOT })
        .output();
      assert(build.success, "deno task build failed");
      const bin = `${home}/gpuctl`;
      const compiled = await new Deno.Command(Deno.execPath(), {
        args: compileArgs(bin),
        cwd: ROOT,
        stderr: "piped",
      }).output();
      assert(compiled.success, new TextDecoder().decode(compiled.stderr));

      // The server and the agent run from the file alone: no Deno on PATH, another folder.
      const env = { PATH: "/usr/bin:/bin", HOME: home, GPUCTL_HOME: `${home}/server` };
      const server = spawnProgram(bin, ["server", "serve", "--port", "0"], env);
      procs.push(server);
      const url = (await server.waitFor(/console at (http:\/\/[0-9.]+:\d+)\//))[1];
      const yaml = await Deno.readTextFile(`${home}/server/server.yaml`);
      const admin = /admin_token: (\S+)/.exec(yaml)![1];
      const agentToken = /agent_token: (\S+)/.exec(yaml)![1];
      const agent = spawnProgram(bin, [
        "agent",
        "--server",
        url,
        "--node-id",
        "compiled",
        "--fake-gpus",
        "1",
        "--data-dir",
        `${home}/agent`,
        "--heartbeat-s",
        "1",
      ], { ...env, GPUCTL_HOME: `${home}/agent-home`, GPUCTL_AGENT_TOKEN: agentToken });
      procs.push(agent);
      await nodeOnline(api(url, admin));

      const job = await new Deno.Command(bin, {
        args: [
          "job",
          "submit",
          "-g",
          "1",
          "-d",
          home,
          "--follow",
          "--",
          "sh",
          "-c",
          "echo compiled-ok",
        ],
        env: { ...env, GPUCTL_SERVER_URL: url, GPUCTL_TOKEN: admin, NO_COLOR: "1" },
        stdout: "piped",
        stderr: "piped",
      }).output();
      const stdout = new TextDecoder().decode(job.stdout);
      assertEquals(job.code, 0, new TextDecoder().decode(job.stderr));
      assertStringIncludes(stdout, "compiled-ok");
      // The console's island bundles come from inside the file.
      const page = await fetch(`${url}/login`);
      assertEquals(page.status, 200);
      const html = await page.text();
      const boot = /src="(\/static\/[^"]+\.js)"/.exec(html)?.[1];
      if (boot) assertEquals((await fetch(`${url}${boot}`)).status, 200);
    } finally {
      for (const p of procs.reverse()) await p.kill();
      await Deno.remove(home, { recursive: true });
    }
  },
});
