/**
 * Provenance and lineage end to end with real processes: a server, an agent with a fake GPU,
 * a real git work tree with a dirty diff (a text change, a deleted file, a binary change) and
 * an untracked file. The run records the code as it was before the job started;
 * `gpuctl run checkout` recreates exactly those bytes; a fork from a checkpoint sees
 * GPUCTL_RESUME_FROM; a folder outside git gets its files' hashes.
 */
import { assert, assertEquals } from "./assert.ts";
import { logText, startCluster, until, waitJob } from "./_processes.ts";
import { runInProcess } from "../cli/_test_server.ts";
import { git } from "./_git.ts";

const TRAIN = `import os, pathlib
print("RESUME=" + os.environ.get("GPUCTL_RESUME_FROM", "none"), flush=True)
ckpt = pathlib.Path("ckpt")
ckpt.mkdir(exist_ok=True)
(ckpt / "step-10.pt").write_bytes(b"weights")
`;

async function sha256(bytes: Uint8Array<ArrayBuffer>): Promise<string> {
  return Array.from(new Uint8Array(await crypto.subtle.digest("SHA-256", bytes)))
    .map((b) => b.toString(16).padStart(2, "0")).join("");
}

/** Every file under `dir` but `.git`, relative path → bytes. */
async function files(dir: string, prefix = ""): Promise<Map<string, Uint8Array<ArrayBuffer>>> {
  const out = new Map<string, Uint8Array<ArrayBuffer>>();
  for await (const e of Deno.readDir(`${dir}/${prefix}`)) {
    const rel = prefix ? `${prefix}/${e.name}` : e.name;
    if (rel === ".git") continue;
    if (e.isDirectory) { for (const [k, v] of await files(dir, rel)) out.set(k, v); }
    else out.set(rel, await Deno.readFile(`${dir}/${rel}`));
  }
  return out;
}

Deno.test("a run in a dirty git tree records its code; run checkout recreates its bytes; a fork resumes from a checkpoint", async () => {
  const c = await startCluster({ fakeGpus: 1, prefix: "gpuctl-lineage-e2e-" });
  try {
    const repo = `${c.home}/repo`;
    await Deno.mkdir(`${repo}/data`, { recursive: true });
    await git(repo, "init", "-q", "-b", "main");
    await Deno.writeTextFile(`${repo}/train.py`, TRAIN);
    await Deno.writeTextFile(`${repo}/config.yaml`, "lr: 0.1\n");
    await Deno.writeTextFile(`${repo}/old.txt`, "to be deleted\n");
    await Deno.writeFile(`${repo}/data/table.bin`, new Uint8Array([0, 1, 2, 3, 255]));
    await Deno.writeTextFile(`${repo}/.gitignore`, "ckpt/\n");
    await git(repo, "add", ".");
    await git(repo, "commit", "-q", "-m", "base");
    await git(repo, "remote", "add", "origin", "https://me:hunter2@git.example/lab/m.git");
    await Deno.writeTextFile(`${repo}/config.yaml`, "lr: 0.01\nwarmup: 100\n");
    await Deno.remove(`${repo}/old.txt`);
    await Deno.writeFile(`${repo}/data/table.bin`, new Uint8Array([9, 9, 0, 255, 1, 2]));
    await Deno.writeTextFile(`${repo}/scratch.md`, "not tracked\n");
    const head = (await git(repo, "rev-parse", "HEAD")).trim();
    const before = await files(repo);

    const job = (await c.call("POST", "/api/jobs", {
      name: "base",
      command: ["python3", "train.py", "--config", "config.yaml"],
      working_dir: repo,
      checkpoint_dir: "ckpt",
      gpus: 1,
      project: "p",
      experiment: "e",
    })).json;
    const done = await waitJob(c.call, job.id, ["SUCCEEDED", "FAILED"], 60_000);
    assertEquals(done.status, "SUCCEEDED");
    const { code } = (await c.call("GET", `/api/runs/${done.run_id}/code`)).json;
    assertEquals(code.kind, "git");
    assertEquals([code.git.commit, code.git.branch], [head, "main"]);
    assertEquals(code.git.remote_url, "https://git.example/lab/m.git");
    assertEquals(code.git.untracked, ["scratch.md"], "taken before the job wrote ckpt/");
    assert(code.git.diff.includes("+lr: 0.01"), code.git.diff);
    assert(code.git.diff.includes("GIT binary patch"), "the binary change travels");
    const run = (await c.call("GET", `/api/runs/${done.run_id}`)).json;
    assertEquals(run.code, code);

    // The checkout: the commit plus the diff, byte for byte what the job ran (less untracked).
    const out = `${c.home}/checkout`;
    const env = {
      GPUCTL_SERVER_URL: c.server.url,
      GPUCTL_TOKEN: c.server.adminToken,
      NO_COLOR: "1",
    };
    const co = await runInProcess(["run", "checkout", done.run_id, out], env);
    assertEquals(co.code, 0, co.stderr);
    assert(co.stdout.includes("scratch.md"), "the untracked file is named as not recovered");
    const got = await files(out);
    const want = new Map([...before].filter(([k]) => k !== "scratch.md"));
    assertEquals([...got.keys()].sort(), [...want.keys()].sort());
    for (const [k, v] of want) assertEquals(await sha256(got.get(k)!), await sha256(v), k);

    // A fork from the run's checkpoint: the child's process sees its path.
    const checkpoint = await until(
      async () => {
        const items = (await c.call("GET", `/api/runs/${done.run_id}/checkpoints`)).json.items;
        return items.length ? items[0] : null;
      },
      30_000,
      "the checkpoint registered",
    );
    const child = (await c.call("POST", `/api/runs/${done.run_id}/fork`, {
      overrides: { args: { config: "config.yaml" }, env: { EXTRA: "1" } },
      from_checkpoint: checkpoint.id,
    })).json;
    const childDone = await waitJob(c.call, child.id, ["SUCCEEDED", "FAILED"], 60_000);
    assertEquals(childDone.status, "SUCCEEDED");
    assertEquals(await logText(c.call, childDone.run_id), [`RESUME=${checkpoint.path}`]);
    const tree = (await c.call("GET", `/api/lineage?run_id=${childDone.run_id}`)).json;
    assertEquals(tree.roots[0].run_id, done.run_id);
    assertEquals(tree.roots[0].children[0].run_id, childDone.run_id);
    assertEquals(tree.roots[0].children[0].resume_from, checkpoint.id);

    // Outside git: the hashes of the files the command names.
    const plain = `${c.home}/plain`;
    await Deno.mkdir(plain);
    await Deno.writeTextFile(`${plain}/train.py`, "print('plain')\n");
    const pj = (await c.call("POST", "/api/jobs", {
      name: "plain",
      command: ["python3", "train.py"],
      working_dir: plain,
      gpus: 0,
    })).json;
    const pd = await waitJob(c.call, pj.id, ["SUCCEEDED", "FAILED"], 60_000);
    const plainCode = (await c.call("GET", `/api/runs/${pd.run_id}/code`)).json.code;
    assertEquals(plainCode.kind, "files");
    assertEquals(plainCode.files.files, [{
      path: "train.py",
      sha256: await sha256(new TextEncoder().encode("print('plain')\n")),
    }]);
  } finally {
    await c.stop();
  }
});
