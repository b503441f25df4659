import { assertEquals } from "../../../tests/assert.ts";
import {
  gresGpuCount,
  gresGpuIndices,
  parseExitCode,
  parseIndexList,
  parseKeyValueLines,
  parseSacct,
  parseScontrolLine,
  parseSqueue,
  partitionGpuCount,
} from "./parse.ts";

// A line as Slurm 22.05's `scontrol show job -d -o` prints it (shortened).
const RUNNING_LINE =
  "JobId=12 JobName=gpuctl-r-1 UserId=root(0) JobState=RUNNING Reason=None ExitCode=0:0 " +
  "TimeLimit=UNLIMITED Partition=debug NodeList=vm Nodes=vm CPU_IDs=0 Mem=0 " +
  "GRES=gpu:2(IDX:2-3) Command=/data/runs/r-1/job.sbatch --lr 1 WorkDir=/work";

Deno.test("parseScontrolLine() keeps values with spaces and the first node's details", () => {
  const r = parseScontrolLine(RUNNING_LINE);
  assertEquals(r.JobId, "12");
  assertEquals(r.JobState, "RUNNING");
  assertEquals(r.Command, "/data/runs/r-1/job.sbatch --lr 1");
  assertEquals(r.WorkDir, "/work");
  assertEquals(r.GRES, "gpu:2(IDX:2-3)");
  const two = parseScontrolLine("JobId=1 Nodes=a GRES=gpu:1(IDX:0) Nodes=b GRES=gpu:1(IDX:1)");
  assertEquals([two.Nodes, two.GRES], ["a", "gpu:1(IDX:0)"]);
});

Deno.test("parseSacct() reads -P lines by the fields asked for", () => {
  const fields = ["JobID", "State", "ExitCode"];
  assertEquals(parseSacct("7|CANCELLED by 1000|0:15\n8|COMPLETED|0:0\n", fields), [
    { JobID: "7", State: "CANCELLED by 1000", ExitCode: "0:15" },
    { JobID: "8", State: "COMPLETED", ExitCode: "0:0" },
  ]);
});

Deno.test("GRES strings: GPU counts and bound indices", () => {
  const counts: [string, number][] = [
    ["gpu:4", 4],
    ["gpu:a100:8(S:0-1)", 8],
    ["gpu:2,gpu:v100:1,mps:100", 3],
    ["(null)", 0],
    ["", 0],
    ["mps:200", 0],
    ["gpu:a100:4(S:0,1),shard:8", 4],
  ];
  for (const [gres, n] of counts) assertEquals(gresGpuCount(gres), n, gres);
  const indices: [string | undefined, number[] | null][] = [
    ["gpu:2(IDX:0-1)", [0, 1]],
    ["gpu:a100:3(IDX:0,2-3)", [0, 2, 3]],
    ["gpu:0(IDX:N/A)", null],
    [undefined, null],
  ];
  for (const [gres, want] of indices) assertEquals(gresGpuIndices(gres), want, String(gres));
});

Deno.test("small readers: exit codes, index lists, sinfo, key=value files", () => {
  assertEquals(parseExitCode("3:0"), { code: 3, signal: 0 });
  assertEquals(parseExitCode("0:9"), { code: 0, signal: 9 });
  assertEquals(parseExitCode("junk"), null);
  assertEquals(parseIndexList("0,2-3"), [0, 2, 3]);
  assertEquals(parseIndexList(""), []);
  assertEquals(parseIndexList("GPU-abc"), null);
  assertEquals(partitionGpuCount("n1|gpu:4\nn2|gpu:a100:2(S:0)\nn1|gpu:4\n"), 6);
  assertEquals(partitionGpuCount(""), null);
  assertEquals(parseKeyValueLines("node=vm\nslurm_job_gpus=0,1\n"), {
    node: "vm",
    slurm_job_gpus: "0,1",
  });
});

Deno.test("parseSqueue() reads one line per job into scontrol's field names", () => {
  const jobs = parseSqueue(
    "1|FAILED|NonZeroExitCode|vm\n3|PENDING|Resources|\n2|RUNNING|None|vm\n",
  );
  assertEquals([...jobs.keys()], ["1", "3", "2"]);
  assertEquals(jobs.get("3"), {
    JobId: "3",
    JobState: "PENDING",
    Reason: "Resources",
    NodeList: "",
  });
  assertEquals(parseSqueue("").size, 0);
});
