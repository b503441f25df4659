import { assertEquals } from "../tests/assert.ts";
import { runFilesDir } from "./job_env.ts";
import { markSdkJournalTaken, readSdkJournal } from "./sdk_journal.ts";

Deno.test("readSdkJournal() starts at the SDK's delivered offset, leaves a torn line, and is taken once", async () => {
  const runsDir = await Deno.makeTempDir({ prefix: "gpuctl-journal-" });
  try {
    const runDir = runFilesDir(runsDir, "r-1");
    assertEquals(await readSdkJournal(runDir, "r-1"), null);
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
    const rest = (await readSdkJournal(runDir, "r-1"))!;
    assertEquals(rest.batches, [{ points: [{ key: "loss", step: 1, value: "NaN" }] }]);
    await markSdkJournalTaken(rest);
    assertEquals((await readSdkJournal(runDir, "r-1"))!.batches, []);
  } finally {
    await Deno.remove(runsDir, { recursive: true });
  }
});
