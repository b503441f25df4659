import { assertEquals } from "../tests/assert.ts";
import { parseEvalOutput, readEvalOutput } from "./eval_output.ts";
import { createJobFiles } from "./job_files.ts";
import type { DispatchSpec } from "../protocol/agent.ts";

Deno.test("parseEvalOutput() takes {metrics} or a flat object, and says what is wrong otherwise", () => {
  assertEquals(parseEvalOutput('{"metrics": {"acc": 0.9, "loss": 0.1}, "suite": "val"}'), {
    metrics: { acc: 0.9, loss: 0.1 },
    suite: "val",
  });
  assertEquals(parseEvalOutput('{"acc": 0.9, "suite": "val"}'), {
    metrics: { acc: 0.9 },
    suite: "val",
  });
  // The parser's message would quote the file: the problem does not.
  assertEquals(parseEvalOutput("not json"), { error: "not JSON" });
  assertEquals(parseEvalOutput("[1]"), { error: "not a JSON object" });
  assertEquals(parseEvalOutput('{"metrics": {"nested": {"x": 1}}}'), { error: "holds no metrics" });
});

Deno.test("readEvalOutput() reads only evaluation jobs' results files", async () => {
  const dir = await Deno.makeTempDir();
  const path = `${dir}/eval.json`;
  await Deno.writeTextFile(path, '{"metrics": {"bleu": 31.2}}');
  const spec = { kind: "EVALUATE", env: { GPUCTL_EVAL_OUTPUT: path } } as unknown as DispatchSpec;
  const files = createJobFiles(null);
  assertEquals(await readEvalOutput(spec, files), { metrics: { bleu: 31.2 } });
  assertEquals(await readEvalOutput({ ...spec, kind: "TRAIN" }, files), null);
  assertEquals(
    await readEvalOutput({ ...spec, env: { GPUCTL_EVAL_OUTPUT: `${dir}/none.json` } }, files),
    null,
  );
  await Deno.mkdir(`${dir}/folder.json`);
  assertEquals(
    await readEvalOutput({ ...spec, env: { GPUCTL_EVAL_OUTPUT: `${dir}/folder.json` } }, files),
    { error: "is not a regular file" },
  );
  await Deno.remove(dir, { recursive: true });
});
