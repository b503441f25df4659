// Runs a command-line tool of the agent's (docker, sbatch, scontrol …) to its end, with
// exactly the environment given and no shell; never throws.

/** How a tool run ended: its exit status and output. */
export interface ToolOutput {
  ok: boolean;
  stdout: string;
  stderr: string;
}

/** Runs `program args…` with `env` as its whole environment and collects its output. */
export async function runTool(
  program: string,
  args: string[],
  env: Record<string, string>,
): Promise<ToolOutput> {
  try {
    const out = await new Deno.Command(program, {
      args,
      env,
      clearEnv: true,
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).output();
    const text = (bytes: Uint8Array) => new TextDecoder().decode(bytes);
    return { ok: out.success, stdout: text(out.stdout), stderr: text(out.stderr) };
  } catch (err) {
    return { ok: false, stdout: "", stderr: `cannot run ${program}: ${(err as Error).message}` };
  }
}
