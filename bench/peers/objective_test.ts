/**
 * The peers' objective is the synthetic example's own curve: for the same --lr, the eval/loss
 * values bench/peers/synthetic_objective.py yields are the ones examples/synthetic/train.py
 * prints, so an Optuna or Ray trial sees what a gpuctl trial logs.
 */
import { assert, assertEquals } from "../../tests/assert.ts";

const ROOT = new URL("../..", import.meta.url).pathname;

async function evalLosses(args: string[]): Promise<string[]> {
  const out = await new Deno.Command("python3", {
    args,
    cwd: ROOT,
    stdout: "piped",
    env: { PYTHONPATH: "" },
  })
    .output();
  assert(out.success, args.join(" "));
  return new TextDecoder().decode(out.stdout).split("\n")
    .flatMap((l) => /^step (\d+) .*eval\/loss (\S+)/.exec(l)?.slice(1, 3).join(" ") ?? []);
}

for (const lr of ["0.004", "0.1", "0.35"]) {
  Deno.test(`the peers' objective gives train.py's eval/loss at every eval step (lr ${lr})`, async () => {
    const train = await evalLosses([
      "examples/synthetic/train.py",
      "--lr",
      lr,
      "--steps",
      "120",
      "--eval-every",
      "10",
      "--ckpt-every",
      "0",
      "--ckpt-dir",
      await Deno.makeTempDir(),
    ]);
    const objective = await evalLosses([
      "bench/peers/synthetic_objective.py",
      "--lr",
      lr,
      "--steps",
      "120",
      "--eval-every",
      "10",
    ]);
    assertEquals(train.length, 13); // steps 0, 10, …, 110 and the last, 119
    assertEquals(objective, train);
  });
}
