import { assertEquals } from "../tests/assert.ts";
import { createJobFiles } from "./job_files.ts";
import { runFilesDir } from "./job_env.ts";
import { markSdkJournalTaken, readSdkJournal } from "./sdk_journal.ts";

const files = createJobFiles(null);

Deno.test("readSdkJournal() starts at the SDK's delivered offset, leaves a torn line, and is taken once", async () => {
  const runsDir = await Deno.makeTempDir({ prefix: "gpuctl-journal-" });
  try {
    const runDir = runFilesDir(runsDir, "r-1");
    assertEquals(await readSdkJournal(runDir, "r-1", files), null);
    const dir = `${runDir}/.gpuctl`;
    await Deno.mkdir(dir, { recursive: true });
    const lines = [
      `{"type":"run","id":"r-1"}\n`,
      `{"type":"log","points":[{"key":"loss","step":0,"value":1}]}\n`,
      `{"type":"log","points":[{"key":"loss","step":1,"value":"NaN"}],"status":"SUCCEEDED"}\n`,
      `{"type":"log","points":[{"key":"lo`,
    ];
    await Deno.writeTextFile(`${dir}/r-1.jsonl`, lines.join(""));
    const delivered = new TextEncoder().encode(lines[0] + lines[1]).length;
    await Deno.writeTextFile(`${dir}/r-1.sent`, `${delivered}\n`);
    const rest = (await readSdkJournal(runDir, "r-1", files))!;
    assertEquals(rest.batches, [{ points: [{ key: "loss", step: 1, value: "NaN" }] }]);
    await markSdkJournalTaken(rest, files);
    assertEquals((await readSdkJournal(runDir, "r-1", files))!.batches, []);
  } finally {
    await Deno.remove(runsDir, { recursive: true });
  }
});

Deno.test("readSdkJournal() reads a long journal in parts, each ending at a whole line", async () => {
  const runDir = await Deno.makeTempDir({ prefix: "gpuctl-journal-" });
  try {
    await Deno.mkdir(`${runDir}/.gpuctl`);
    const line = (step: number) =>
      `{"type":"log","points":[{"key":"k","step":${step},"value":1}]}\n`;
    const text = Array.from({ length: 10 }, (_, step) => line(step)).join("");
    await Deno.writeTextFile(`${runDir}/.gpuctl/r-2.jsonl`, text);
    const steps: number[] = [];
    let from: number | undefined;
    let parts = 0;
    for (;;) {
      const rest = (await readSdkJournal(runDir, "r-2", files, from, line(0).length * 3 + 5))!;
      parts++;
      steps.push(...rest.batches.flatMap((b) => b.points!.map((p) => p.step)));
      if (!rest.more) break;
      from = rest.end;
    }
    assertEquals(steps, Array.from({ length: 10 }, (_, i) => i));
    assertEquals(parts, 4);
  } finally {
    await Deno.remove(runDir, { recursive: true });
  }
});
