/**
 * Jobs for fault tests that keep their own ledger: each record they hand to gpuctl (a
 * printed line, an SDK point, an SDK checkpoint) is appended to `<dir>/<tag>.ledger` once
 * handed over (`l|run|text`, and points and checkpoints in the form of `_ledger.ts`). They run until `<dir>/stop` exists,
 * note their pid in `<dir>/<tag>.pids`, and note in `<dir>/<tag>.overlap` when they start
 * while an earlier attempt's process still runs.
 */
import { type Kind, Ledger, linesLedger, storedLedgers } from "./_ledger.ts";

const PRELUDE = (dir: string, tag: string) => `
import os, time
d, tag = ${JSON.stringify(dir)}, ${JSON.stringify(tag)}
rid = os.environ["GPUCTL_RUN_ID"]
pids = f"{d}/{tag}.pids"
for p in (open(pids).read().split() if os.path.exists(pids) else []):
    try:
        os.kill(int(p), 0)
        with open(f"{d}/{tag}.overlap", "a") as f:
            f.write(f"{os.getpid()} started while {p} ran\\n")
    except ProcessLookupError:
        pass
with open(pids, "a") as f:
    f.write(f"{os.getpid()}\\n")
ledger = open(f"{d}/{tag}.ledger", "a", buffering=1)
`;

/**
 * A job that until `stop` exists prints a line each step and, with `sdk`, logs a point and
 * every 10th step a checkpoint through the SDK, appending each record to its ledger once
 * handed over. Without the SDK the test may write its TensorBoard file (`runs/`).
 */
function ledgerJob(dir: string, tag: string, sdk: boolean) {
  const step = sdk
    ? `
    run.log({"value": step * 0.25}, step=step)
    v = step * 0.25
    ledger.write(f"p|{rid}|value|{step}|{int(v) if v == int(v) else v}\\n")
    if step % 10 == 0:
        path = f"{d}/{tag}-ckpt-{step}.pt"
        open(path, "w").write("x")
        run.log_checkpoint(path, step=step)
        ledger.write(f"c|{rid}|{os.path.basename(path)}|{step}\\n")`
    : "";
  return PRELUDE(dir, tag) + `
${sdk ? "from gpuctl import run" : ""}
step = 0
while not os.path.exists(f"{d}/stop"):
    step += 1
    text = f"{tag} line {step}"
    print(text, flush=True)
    ledger.write(f"l|{rid}|{text}\\n")${step}
    time.sleep(${sdk ? 0.05 : 0.1})
${sdk ? "run.finish()" : ""}
`;
}

export const sdkJob = (dir: string, tag: string) => ledgerJob(dir, tag, true);
export const tbJob = (dir: string, tag: string) => ledgerJob(dir, tag, false);

/** The ledgers of what job `tag` handed over (for one run when `run` is given). */
export async function readLedger(
  dir: string,
  tag: string,
  run?: string,
): Promise<Record<Kind, Ledger>> {
  const out = { points: new Ledger(), lines: new Ledger(), checkpoints: new Ledger() };
  let text = "";
  try {
    text = await Deno.readTextFile(`${dir}/${tag}.ledger`);
  } catch (err) {
    if (!(err instanceof Deno.errors.NotFound)) throw err;
  }
  const lines = new Map<string, string[]>(run === undefined ? [] : [[run, []]]);
  for (const line of text.split("\n")) {
    const [kind, lineRun] = line.split("|", 2);
    if (line === "" || (run !== undefined && lineRun !== run)) continue;
    if (kind === "l") {
      const texts = lines.get(lineRun) ?? [];
      texts.push(line.slice(kind.length + lineRun.length + 2));
      lines.set(lineRun, texts);
    } else {
      out[kind === "p" ? "points" : "checkpoints"].add(line);
    }
  }
  for (const [lineRun, texts] of lines) linesLedger(lineRun, texts, out.lines);
  return out;
}

export const KINDS = ["points", "lines", "checkpoints"] as const;

/**
 * The store's ledgers of `run` (system metrics left out) once they equal `want`, or as they
 * are after `ms` (the caller's assertEquals then names the difference).
 */
export async function storedOnceEqual(
  dbPath: string,
  run: string,
  want: Record<Kind, Ledger>,
  ms = 30_000,
): Promise<Record<Kind, Ledger>> {
  const read = () => storedLedgers(dbPath, [run], (key) => !key.startsWith("sys/"));
  const same = (s: Record<Kind, Ledger>) => KINDS.every((k) => String(s[k]) === String(want[k]));
  let stored = read();
  for (const deadline = Date.now() + ms; !same(stored) && Date.now() < deadline;) {
    await new Promise((r) => setTimeout(r, 200));
    stored = read();
  }
  return stored;
}
