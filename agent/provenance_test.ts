import { assert, assertEquals } from "../tests/assert.ts";
import { MAX_DIFF_BYTES, provenance, stripCredentials } from "../protocol/provenance.ts";
import { git } from "../tests/_git.ts";
import { lookupUser } from "./runner/job_user.ts";
import { codeSnapshotter, DEFAULT_TOOL_PATH, namedFiles, snapshotCode } from "./provenance.ts";

const PATH = Deno.env.get("PATH") ?? DEFAULT_TOOL_PATH;

/** A work tree with one commit, then a dirty tracked file, a deleted one and an untracked one. */
async function dirtyRepo(): Promise<string> {
  const dir = await Deno.makeTempDir({ prefix: "gpuctl-prov-" });
  await git(dir, "init", "-q", "-b", "main");
  await Deno.writeTextFile(`${dir}/train.py`, "lr = 0.1\nprint(lr)\n");
  await Deno.writeTextFile(`${dir}/gone.txt`, "bye\n");
  await Deno.mkdir(`${dir}/src`);
  await Deno.writeFile(`${dir}/src/blob.bin`, new Uint8Array([0, 1, 2, 255, 254]));
  await git(dir, "add", ".");
  await git(dir, "commit", "-q", "-m", "first");
  await git(
    dir,
    "remote",
    "add",
    "origin",
    "https://alice:ghp_SECRET@github.example/lab/model.git",
  );
  await Deno.writeTextFile(`${dir}/train.py`, "lr = 0.01\nprint(lr)\n");
  await Deno.remove(`${dir}/gone.txt`);
  await Deno.writeFile(`${dir}/src/blob.bin`, new Uint8Array([9, 0, 8, 255]));
  await Deno.writeTextFile(`${dir}/notes.md`, "untracked\n");
  await Deno.writeTextFile(`${dir}/.gitignore`, "runs/\n");
  await Deno.mkdir(`${dir}/runs`);
  await Deno.writeTextFile(`${dir}/runs/ignored.txt`, "x");
  return dir;
}

Deno.test("snapshotCode() in a dirty git work tree: commit, branch, remote without credentials, diff, untracked", async () => {
  const dir = await dirtyRepo();
  try {
    const head = (await git(dir, "rev-parse", "HEAD")).trim();
    const p = await snapshotCode({ working_dir: `${dir}/src`, command: ["python", "train.py"] }, {
      env: { PATH },
      prefix: [],
    });
    assertEquals(provenance.safeParse(p).success, true, JSON.stringify(p.problems));
    assertEquals(p.kind, "git");
    const g = p.git!;
    assertEquals(g.commit, head);
    assertEquals(g.branch, "main");
    assertEquals(g.root, await Deno.realPath(dir));
    assertEquals(g.subdir, "src");
    assertEquals(g.remote_url, "https://github.example/lab/model.git");
    assert(!JSON.stringify(p).includes("SECRET"), "the token never leaves the host");
    assert(g.diff!.includes("-lr = 0.1\n+lr = 0.01"), g.diff!);
    assert(g.diff!.includes("deleted file mode"), "a deleted file is in the diff");
    assert(g.diff!.includes("GIT binary patch"), "a binary change travels as a binary patch");
    assertEquals(g.diff_bytes, new TextEncoder().encode(g.diff!).length);
    assertEquals(g.untracked.sort(), [".gitignore", "notes.md"]);
    assertEquals(g.untracked_count, 2);
    assertEquals(g.diff_omitted, null);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("snapshotCode() keeps only the hash and size of a diff over the bound, and says so", async () => {
  const dir = await Deno.makeTempDir({ prefix: "gpuctl-prov-" });
  try {
    await git(dir, "init", "-q", "-b", "main");
    await Deno.writeTextFile(`${dir}/big.txt`, "a\n");
    await git(dir, "add", ".");
    await git(dir, "commit", "-q", "-m", "first");
    const line = "x".repeat(99) + "\n";
    await Deno.writeTextFile(`${dir}/big.txt`, line.repeat(Math.ceil(MAX_DIFF_BYTES / 100) + 10));
    const p = await snapshotCode({ working_dir: dir, command: "python big.txt" }, {
      env: { PATH },
      prefix: [],
    });
    const g = p.git!;
    assertEquals(g.diff, null);
    assert(g.diff_bytes > MAX_DIFF_BYTES, String(g.diff_bytes));
    const full = new TextEncoder().encode(await git(dir, "diff", "--binary", "HEAD"));
    assertEquals(g.diff_bytes, full.length);
    const sha = Array.from(new Uint8Array(await crypto.subtle.digest("SHA-256", full)))
      .map((b) => b.toString(16).padStart(2, "0")).join("");
    assertEquals(g.diff_sha256, sha);
    assert(g.diff_omitted!.includes("more than the 1048576 kept"), g.diff_omitted!);
    assertEquals(provenance.safeParse(p).success, true);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("snapshotCode() outside git hashes the files the command names", async () => {
  const dir = await Deno.makeTempDir({ prefix: "gpuctl-prov-" });
  try {
    await Deno.writeTextFile(`${dir}/train.py`, "print(1)\n");
    await Deno.writeTextFile(`${dir}/cfg.yaml`, "lr: 1\n");
    const p = await snapshotCode({
      working_dir: dir,
      command: ["python3", "train.py", "--config=cfg.yaml", "--lr", "3e-4", "missing.py"],
    }, { env: { PATH }, prefix: [] });
    assertEquals(p.kind, "files");
    assertEquals(p.git, null);
    const sha = async (text: string) =>
      Array.from(
        new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text))),
      ).map((b) => b.toString(16).padStart(2, "0")).join("");
    assertEquals(p.files!.files, [
      { path: "cfg.yaml", sha256: await sha("lr: 1\n") },
      { path: "train.py", sha256: await sha("print(1)\n") },
    ]);
    // The same files give the same hash; a changed byte another.
    const again = await snapshotCode({
      working_dir: dir,
      command: "python3 train.py --config=cfg.yaml",
    }, {
      env: { PATH },
      prefix: [],
    });
    assertEquals(again.files!.sha256, p.files!.sha256);
    await Deno.writeTextFile(`${dir}/train.py`, "print(2)\n");
    const changed = await codeSnapshotter(PATH, null)({
      working_dir: dir,
      command: ["python3", "train.py", "--config=cfg.yaml"],
    });
    assert(changed.files!.sha256 !== p.files!.sha256);
    assertEquals(provenance.safeParse(changed).success, true);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("snapshotCode() never runs a repo-configured fsmonitor, hook or external diff", async () => {
  const dir = await dirtyRepo();
  try {
    const marker = `${dir}/../${dir.split("/").pop()}-pwned`;
    const evil = `sh -c 'touch ${marker}'`;
    await git(dir, "config", "core.fsmonitor", evil);
    await git(dir, "config", "diff.external", evil);
    await git(dir, "config", "core.pager", evil);
    const p = await snapshotCode({ working_dir: dir, command: ["python", "train.py"] }, {
      env: { PATH },
      prefix: [],
    });
    assert(p.git?.diff?.includes("+lr = 0.01"), JSON.stringify(p.problems));
    let exists = true;
    try {
      await Deno.stat(marker);
    } catch {
      exists = false;
    }
    assertEquals(exists, false, "a repo-configured command ran");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("stripCredentials() drops user, password and query of URL remotes, keeps ssh logins", () => {
  assertEquals(
    stripCredentials("https://bob:s3cret@gitlab.example:8443/g/r.git?private_token=x#f"),
    "https://gitlab.example:8443/g/r.git",
  );
  assertEquals(stripCredentials("https://oauth2@github.com/a/b"), "https://github.com/a/b");
  assertEquals(stripCredentials("git@github.com:a/b.git"), "git@github.com:a/b.git");
  assertEquals(stripCredentials("ssh://git:pw@host/a.git"), "ssh://host/a.git");
  assertEquals(stripCredentials("/srv/repos/a.git"), "/srv/repos/a.git");
  assertEquals(stripCredentials("  "), null);
});

Deno.test("namedFiles() takes scripts and option values that look like paths, not numbers or flags", () => {
  assertEquals(
    namedFiles(["python3", "-u", "train.py", "--lr", "3e-4", "--cfg=conf/a.yaml", "0.5", "--x"]),
    ["train.py", "conf/a.yaml"],
  );
  assertEquals(namedFiles("bash -lc 'python run.py'"), ["run.py"]);
});

const IS_ROOT = Deno.uid() === 0;

// Switching users needs root; CI and the development machine run the tests as root.
Deno.test({
  name:
    "under job_user, a clean filter the job's .git/config names runs as the job user, never root" +
    (IS_ROOT ? "" : " (skipped: needs the tests to run as root)"),
  ignore: !IS_ROOT,
  async fn() {
    const nobody = lookupUser("nobody");
    assert(nobody, "this host has a nobody user");
    const repo = await dirtyRepo();
    const drop = await Deno.makeTempDir({ prefix: "gpuctl-prov-drop-" });
    try {
      for (const dir of [repo, drop]) await Deno.chmod(dir, 0o777);
      // What a job user can do in a working dir it owns: name a filter for its Python files.
      await git(repo, "config", "filter.evil.clean", `sh -c 'id -u > ${drop}/uid; cat'`);
      await Deno.writeTextFile(`${repo}/.git/info/attributes`, "*.py filter=evil\n");
      const p = await codeSnapshotter(PATH, nobody)({
        working_dir: repo,
        command: ["python", "train.py"],
      });
      assert(p.git?.diff?.includes("+lr = 0.01"), JSON.stringify(p.problems));
      const ran = await Deno.readTextFile(`${drop}/uid`).catch(() => null);
      // git may or may not run the filter for a diff; when it does, never as root.
      if (ran !== null) assertEquals(ran.trim(), String(nobody.uid));
      assert(ran !== null, "the filter ran (as the job user), so the test saw where it runs");
    } finally {
      await Deno.remove(repo, { recursive: true });
      await Deno.remove(drop, { recursive: true });
    }
  },
});
