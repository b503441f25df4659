// A real `torch.save` into a full disk (a small tmpfs, mounted as root): the file it leaves is
// never reported as a checkpoint while the job runs, and is `incomplete` at its end.
import { join } from "node:path";
import { assert, assertEquals } from "../../tests/assert.ts";
import { frameworkPython } from "../../tests/_frameworks.ts";
import { checkFile } from "./check_complete.ts";
import { CheckpointWatcher } from "./checkpoint_watcher.ts";
import { tempDir } from "./_test_files.ts";

const python = frameworkPython();
const isRoot = Deno.uid() === 0;
const reason = python.python === null
  ? python.reason
  : !isRoot
  ? "mounting a small tmpfs needs root"
  : null;

const SAVE = `
import sys, torch
small = torch.nn.Linear(4, 2)
torch.save({"step": 100, "model": small.state_dict()}, sys.argv[1] + "/ckpt-100.pt")
big = torch.nn.Linear(512, 512)  # 1 MiB of weights into what is left of 256 KiB
try:
    torch.save({"step": 200, "model": big.state_dict()}, sys.argv[1] + "/ckpt-200.pt")
except Exception as e:
    print("save failed:", type(e).__name__, str(e).splitlines()[0])
`;

async function py(code: string, ...args: string[]) {
  const out = await new Deno.Command(python.python!, { args: ["-c", code, ...args] }).output();
  const d = new TextDecoder();
  return { code: out.code, text: d.decode(out.stdout) + d.decode(out.stderr) };
}

async function run(cmd: string, ...args: string[]) {
  const out = await new Deno.Command(cmd, { args }).output();
  assertEquals(out.code, 0, new TextDecoder().decode(out.stderr));
}

Deno.test({
  name: "torch.save into a full disk leaves a file that is never a valid checkpoint" +
    (reason ? ` (skipped: ${reason})` : ""),
  ignore: reason !== null,
  async fn() {
    const { dir, cleanup } = await tempDir();
    const disk = join(dir, "disk");
    await Deno.mkdir(disk);
    await run("mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", disk);
    try {
      const clock = { t: 1_000_000 };
      const watcher = new CheckpointWatcher(disk, { now: () => clock.t });
      const saved = await py(SAVE, disk);
      assertEquals(saved.code, 0, saved.text);
      assert(saved.text.includes("save failed"), `the disk did not fill: ${saved.text}`);
      // What torch itself makes of the two files.
      const load = (name: string) =>
        py("import sys, torch; torch.load(sys.argv[1])", join(disk, name));
      assertEquals((await load("ckpt-100.pt")).code, 0);
      assert((await load("ckpt-200.pt")).code !== 0, "torch.load read the cut file");

      assertEquals(
        (await checkFile(join(disk, "ckpt-100.pt"), "ckpt-100.pt", disk))?.problem,
        null,
      );
      const cut = await checkFile(join(disk, "ckpt-200.pt"), "ckpt-200.pt", disk);
      assert(cut?.problem, "the cut file passed as complete");

      await watcher.poll();
      clock.t += 10_000;
      assertEquals((await watcher.poll()).map((c) => [c.step, c.state]), [[100, "valid"]]);
      clock.t += 60_000;
      assertEquals(await watcher.poll(), []);
      assertEquals(
        (await watcher.poll({ final: true })).map((c) => [c.step, c.state, c.problem]),
        [[200, "incomplete", cut.problem]],
      );
    } finally {
      await run("umount", disk);
      await cleanup();
    }
  },
});
