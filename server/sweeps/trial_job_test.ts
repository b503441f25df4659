import { assertEquals } from "../../tests/assert.ts";
import type { JobSubmission } from "../../protocol/rest/jobs.ts";
import { paramEnvName, trialSubmission } from "./trial_job.ts";

const base: JobSubmission = {
  name: "base",
  command: ["python", "train.py", "--steps", "100"],
  working_dir: "/srv",
  gpus: 1,
  env: { WANDB_MODE: "offline" },
};
const sweep = { name: "lr-sweep", project: "nlp", experiment: "base" };

Deno.test("trialSubmission() appends --NAME VALUE to an argv command, exactly", () => {
  const s = trialSubmission(base, sweep, 0, { lr: 0.0001, opt: "adam w" }, "args");
  assertEquals(s.command, [
    "python",
    "train.py",
    "--steps",
    "100",
    "--lr",
    "0.0001",
    "--opt",
    "adam w",
  ]);
  assertEquals(s.env, { WANDB_MODE: "offline" });
  assertEquals(s.name, "lr-sweep #1 lr=0.0001 opt=adam w");
  assertEquals([s.project, s.experiment], ["nlp", "base"]);
});

Deno.test("trialSubmission() quotes values appended to a shell command", () => {
  const s = trialSubmission({ ...base, command: "python train.py" }, sweep, 2, {
    tag: "it's",
    lr: 0.1,
  }, "args");
  assertEquals(s.command, "python train.py --tag 'it'\\''s' --lr 0.1");
});

Deno.test("trialSubmission() passes parameters as GPUCTL_PARAM_ variables, or both ways", () => {
  const env = trialSubmission(base, sweep, 0, { "model.depth": 4 }, "env");
  assertEquals(env.command, base.command);
  assertEquals(env.env, { WANDB_MODE: "offline", GPUCTL_PARAM_MODEL_DEPTH: "4" });
  const both = trialSubmission(base, sweep, 0, { lr: 0.5 }, "both");
  assertEquals(both.command, [...(base.command as string[]), "--lr", "0.5"]);
  assertEquals(both.env?.GPUCTL_PARAM_LR, "0.5");
  assertEquals(paramEnvName("lr-max"), "GPUCTL_PARAM_LR_MAX");
});
