import { deepStrictEqual, strictEqual } from "node:assert/strict";
import { discoverEventFiles, isRunInstanceName, metricPrefix } from "./log_dirs.ts";

Deno.test("isRunInstanceName() names versions, start times and timestamps, not splits", () => {
  const instances = [
    "version_0",
    "version_12",
    "Dec02_01-18-45_vm",
    "Dec02_01-18-45_gpu-node-3LR_0.1_BATCH_16",
    "1796173826.32",
    "1796180237.5956304",
    "1796180237",
    "20241202-011845",
    "2024-12-02_01-18-45",
    "2024-12-02T01:18:45",
  ];
  for (const name of instances) strictEqual(isRunInstanceName(name), true, name);
  const series = ["train", "validation", "eval", "generator", "version", "exp_2024", "42", "fit"];
  for (const name of series) strictEqual(isRunInstanceName(name), false, name);
});

Deno.test("metricPrefix() leaves the run-instance levels out and keeps the rest", () => {
  deepStrictEqual(
    [
      "",
      "version_0",
      "Dec02_01-18-45_vm/1796173826.32",
      "train",
      "fit/20241202-011845/validation",
      "generator",
    ].map(metricPrefix),
    ["", "", "", "train", "fit/validation", "generator"],
  );
});

Deno.test("discoverEventFiles() finds the frameworks' default folders and nothing else", async () => {
  const dir = await Deno.makeTempDir({ prefix: "tb_log_dirs_test_" });
  try {
    const files = [
      "runs/Dec02_01-18-45_vm/events.out.tfevents.100.vm.1.0",
      "runs/Dec02_01-18-45_vm/1796173826.32/events.out.tfevents.101.vm.1.1",
      "lightning_logs/version_3/events.out.tfevents.102.vm.2.0",
      "out/runs/Dec02_01-20-00_vm/events.out.tfevents.103.vm.3.0",
      "logs/train/events.out.tfevents.104.vm.4.0.v2",
      "logs/validation/events.out.tfevents.105.vm.4.1.v2",
      // Not followed: hidden, an environment, a log root two folders down.
      ".cache/runs/events.out.tfevents.106.vm.5.0",
      "venv/runs/events.out.tfevents.107.vm.6.0",
      "a/b/runs/events.out.tfevents.108.vm.7.0",
      "elsewhere/events.out.tfevents.109.vm.8.0",
    ];
    for (const file of files) {
      await Deno.mkdir(`${dir}/${file.slice(0, file.lastIndexOf("/"))}`, { recursive: true });
      await Deno.writeFile(`${dir}/${file}`, new Uint8Array());
    }
    const found = await discoverEventFiles(dir);
    deepStrictEqual(
      found.map((f) => [f.relPath, f.dir]),
      [
        [files[0], ""],
        [files[1], ""],
        [files[2], ""],
        [files[3], ""],
        [files[4], "train"],
        [files[5], "validation"],
      ],
    );
    strictEqual(found[0].path, `${dir}/${files[0]}`);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
