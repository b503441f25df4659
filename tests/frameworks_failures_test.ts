/**
 * Real failures produced by real framework code (tests/frameworks/failures), each run as a
 * gpuctl job through `deno task server`, `deno task agent` and the process runner, with two
 * attempts allowed. For each: the failure card's cause, the evidence it quotes, where it says
 * the exception was raised (when the card names it), and the retry decision as a user sees it:
 * a transient cause is requeued once, a deterministic one ends the job with the card's advice
 * in its reason. The jobs run in parallel; each script takes seconds.
 *
 * The disk-full (a small tmpfs) and cgroup memory cases need root, and the cgroup case a
 * writable memory controller; without them they are left out with the reason.
 *
 * Needs the framework virtualenv (.ci/framework-venv); ignored with the reason without it.
 */
import { assert, assertEquals } from "./assert.ts";
import { frameworkPython } from "./_frameworks.ts";
import { startCluster, until } from "./_processes.ts";

const ROOT = new URL("..", import.meta.url).pathname;
const SCRIPTS = `${ROOT}tests/frameworks/failures`;
const FRAMEWORKS = frameworkPython();
/** Every job of the file ended: a few seconds each, run at once, on a loaded machine. */
const ALL_ENDED_MS = 240_000;

type Call = Awaited<ReturnType<typeof startCluster>>["call"];

interface Case {
  name: string;
  /** Arguments after the script; `CASE_DIR`, `PORT`, `TMPFS` and `CGROUP` are filled in. */
  args?: string[];
  cause: string;
  retry: "fails_again" | "may_help" | "not_a_failure";
  /** Text the card's first evidence quotes, then text other evidence quotes. */
  evidence: [string | RegExp, ...(string | RegExp)[]];
  /**
   * The script's line (its text) and function the card says the exception was raised at;
   * null: the process died with no Python traceback, and the card must name no place.
   */
  raisedAt: { source: string; func: string } | null;
  /** Why the case cannot run here, or null. */
  skip?: () => string | null;
}

const IS_ROOT = Deno.uid() === 0;

/** Where a memory cgroup can be made: v2 with the memory controller, else v1's. */
function memoryCgroupRoot(): { dir: string; limitFile: string } | null {
  try {
    const controllers = Deno.readTextFileSync("/sys/fs/cgroup/cgroup.controllers");
    if (controllers.split(/\s+/).includes("memory")) {
      return { dir: "/sys/fs/cgroup", limitFile: "memory.max" };
    }
  } catch {
    // not a cgroup v2 root
  }
  try {
    Deno.statSync("/sys/fs/cgroup/memory/memory.limit_in_bytes");
    return { dir: "/sys/fs/cgroup/memory", limitFile: "memory.limit_in_bytes" };
  } catch {
    return null;
  }
}

const CASES: Case[] = [
  {
    name: "shape_mismatch",
    cause: "shape_mismatch",
    retry: "fails_again",
    evidence: ["mat1 and mat2 shapes cannot be multiplied (4x6 and 8x2)"],
    raisedAt: { source: "return self.fc(x)", func: "forward" },
  },
  {
    name: "nan_loss",
    cause: "nan_loss",
    retry: "fails_again",
    evidence: ["Function 'SqrtBackward0' returned nan values in its 0th output", "step 0 loss nan"],
    raisedAt: { source: "loss.backward()", func: "main" },
  },
  {
    name: "state_dict_mismatch",
    cause: "state_dict_mismatch",
    retry: "fails_again",
    evidence: [
      /Error\(s\) in loading state_dict for Sequential:\n.*Missing key\(s\) in state_dict: "3\.weight", "3\.bias"[\s\S]*size mismatch for 0\.weight/,
    ],
    raisedAt: { source: "other.load_state_dict(", func: "main" },
  },
  {
    name: "dataloader_worker_killed",
    cause: "dataloader_worker_killed",
    retry: "may_help",
    evidence: [
      /DataLoader worker \(pid \d+\) is killed by signal: Killed/,
      /DataLoader worker \(pid\(s\) \d+\) exited unexpectedly/,
    ],
    raisedAt: { source: "for batch in loader:", func: "main" },
  },
  {
    name: "gloo_timeout",
    cause: "nccl_timeout",
    retry: "may_help",
    evidence: [/gloo\/transport\/tcp\/unbound_buffer\.cc:\d+\] Timed out waiting 3000ms for recv/],
    raisedAt: { source: "dist.all_reduce(grad)", func: "rank_main" },
  },
  {
    name: "port_in_use",
    args: ["PORT"],
    cause: "port_in_use",
    retry: "may_help",
    evidence: [/server socket has failed to listen .* port: \d+, .*EADDRINUSE/],
    raisedAt: { source: "store = dist.TCPStore(", func: "main" },
  },
  {
    name: "module_not_found",
    cause: "module_not_found",
    retry: "fails_again",
    evidence: ["No module named 'gpuctl_no_such_augmentations'"],
    raisedAt: { source: "import gpuctl_no_such_augmentations", func: "main" },
  },
  {
    name: "file_not_found",
    cause: "file_not_found",
    retry: "fails_again",
    evidence: ["No such file or directory: 'checkpoints/epoch_7.pt'"],
    raisedAt: { source: "torch.load(", func: "main" },
  },
  {
    name: "segfault",
    cause: "segfault",
    retry: "fails_again",
    evidence: ["terminated by SIGSEGV"],
    raisedAt: null,
  },
  {
    name: "disk_full",
    args: ["TMPFS"],
    cause: "disk_full",
    retry: "fails_again",
    evidence: [/inline_container\.cc:\d+\] \. unexpected pos \d+ vs \d+|No space left on device/],
    skip: () => IS_ROOT ? null : "mounting a small tmpfs needs root",
    raisedAt: { source: "torch.save(", func: "main" },
  },
  {
    name: "cgroup_memory",
    args: ["CGROUP"],
    cause: "host_oom_killed",
    retry: "fails_again",
    evidence: ["terminated by SIGKILL", "the agent saw the cgroup's OOM-kill counter rise"],
    skip: () =>
      !IS_ROOT
        ? "making a memory cgroup needs root"
        : memoryCgroupRoot() === null
        ? "no writable memory cgroup controller (v2 memory.max or v1 memory) on this machine"
        : null,
    raisedAt: null,
  },
  {
    name: "sigint",
    cause: "interrupted",
    retry: "may_help",
    evidence: ["terminated by SIGINT", /^KeyboardInterrupt$/],
    raisedAt: { source: "os.kill(os.getpid(), signal.SIGINT)", func: "main" },
  },
];

/** The cases that cannot run here, with the reason (named in the test's name). */
const SKIPPED = CASES.flatMap((c) => {
  const why = c.skip?.();
  return why ? [`${c.name}: ${why}`] : [];
});

/** The 1-based line of `text` in the case's script. */
async function lineOf(name: string, text: string): Promise<number> {
  const lines = (await Deno.readTextFile(`${SCRIPTS}/${name}.py`)).split("\n");
  const i = lines.findIndex((l) => l.includes(text));
  assert(i >= 0, `${name}.py has no line with ${text}`);
  return i + 1;
}

interface Ended {
  id: string;
  status: string;
  reason: string;
  runs: { id: string; attempt: number }[];
}

async function ended(call: Call, id: string, attempts: number): Promise<Ended> {
  return (await until(
    async (): Promise<Ended | null> => {
      const job = (await call("GET", `/api/jobs/${id}`)).json;
      if (!["SUCCEEDED", "FAILED", "CANCELLED", "LOST"].includes(job.status)) return null;
      const runs = ((await call("GET", `/api/runs?job_id=${id}`)).json.items as Ended["runs"])
        .sort((a, b) => a.attempt - b.attempt);
      return runs.length >= attempts || job.status !== "FAILED"
        ? { id, status: job.status, reason: job.reason ?? "", runs }
        : null;
    },
    ALL_ENDED_MS,
    `job ${id} ended`,
  ))!;
}

/** What is wrong with one case's job, as sentences (empty: right). */
async function check(call: Call, c: Case, job: Ended): Promise<{ wrong: string[]; got: string }> {
  const wrong: string[] = [];
  const first = job.runs[0];
  const card = (await call("GET", `/api/runs/${first.id}/failure`)).json;
  const evidence = (card.evidence ?? []) as { kind: string; detail: string }[];
  const got = `${card.cause_id} / ${card.retry}, ${job.runs.length} attempt(s)`;
  if (card.cause_id !== c.cause) wrong.push(`cause ${card.cause_id}, expected ${c.cause}`);
  if (card.retry !== c.retry) wrong.push(`retry ${card.retry}, expected ${c.retry}`);
  const quotes = (detail: string | undefined, want: string | RegExp) =>
    detail !== undefined &&
    (typeof want === "string" ? detail.includes(want) : want.test(detail));
  const [primary, ...more] = c.evidence;
  if (!quotes(evidence[0]?.detail, primary)) {
    wrong.push(`first evidence ${JSON.stringify(evidence[0]?.detail)}, expected ${primary}`);
  }
  for (const want of more) {
    if (!evidence.slice(1).some((e) => quotes(e.detail, want))) {
      wrong.push(`no other evidence quotes ${want}: ${JSON.stringify(evidence)}`);
    }
  }
  const places = evidence.filter((e) => e.detail.startsWith("raised at "));
  if (c.raisedAt === null && places.length > 0) {
    wrong.push(`no traceback, yet the card says ${places[0].detail}`);
  }
  if (c.raisedAt) {
    const where = `raised at ${SCRIPTS}/${c.name}.py:${await lineOf(
      c.name,
      c.raisedAt.source,
    )} in ${c.raisedAt.func}`;
    if (!evidence.some((e) => e.detail === where)) {
      wrong.push(`no evidence "${where}" in ${JSON.stringify(evidence.map((e) => e.detail))}`);
    }
  }
  // The retry decision as the user sees it: a second attempt for a transient cause, else the
  // job ends after its first with the card's advice as its reason.
  const retried = (await call("GET", `/api/events?job_id=${job.id}&type=JOB_RETRIED`)).json
    .items as { message: string }[];
  if (c.retry === "may_help") {
    if (job.runs.length !== 2) wrong.push(`${job.runs.length} attempt(s), expected a retry`);
    if (!retried.some((e) => e.message.includes(card.retry_advice))) {
      wrong.push("no JOB_RETRIED event quoting the card's advice");
    }
  } else {
    if (job.runs.length !== 1) wrong.push(`${job.runs.length} attempts, expected no retry`);
    if (!job.reason.includes(card.retry_advice)) {
      wrong.push(`job reason ${JSON.stringify(job.reason)} lacks the card's advice`);
    }
  }
  return { wrong, got };
}

Deno.test({
  name:
    "real framework failures as jobs: each card names the cause, quotes the evidence and where it was raised, and only transient causes are retried" +
    (FRAMEWORKS.python ? "" : ` (${FRAMEWORKS.reason})`) +
    (SKIPPED.length ? ` (left out: ${SKIPPED.join("; ")})` : ""),
  ignore: FRAMEWORKS.python === null,
  async fn() {
    const cluster = await startCluster({ fakeGpus: 1, prefix: "gpuctl-framework-failures-" });
    // What the cases hold outside the job: a bound port, a mounted tmpfs, a memory cgroup.
    const held = Deno.listen({ hostname: "127.0.0.1", port: 0 });
    const tmpfs = `${cluster.home}/small-disk`;
    let mounted = false;
    let cgroup: string | null = null;
    try {
      const call = cluster.call;
      const run = CASES.filter((c) => !c.skip?.());
      if (run.some((c) => c.name === "disk_full")) {
        await Deno.mkdir(tmpfs);
        await mount(["-t", "tmpfs", "-o", "size=1m", "tmpfs", tmpfs]);
        mounted = true;
      }
      if (run.some((c) => c.name === "cgroup_memory")) {
        const root = memoryCgroupRoot()!;
        cgroup = `${root.dir}/gpuctl-test-${crypto.randomUUID().slice(0, 8)}`;
        await Deno.mkdir(cgroup);
        await Deno.writeTextFile(`${cgroup}/${root.limitFile}`, String(96 * 1024 * 1024));
      }
      const fill = (arg: string) =>
        arg === "PORT"
          ? String((held.addr as Deno.NetAddr).port)
          : arg === "TMPFS"
          ? tmpfs
          : arg === "CGROUP"
          ? cgroup!
          : arg;
      const jobs = await Promise.all(run.map(async (c) => {
        const dir = `${cluster.home}/work/${c.name}`;
        await Deno.mkdir(dir, { recursive: true });
        const res = await call("POST", "/api/jobs", {
          name: c.name,
          command: [FRAMEWORKS.python!, `${SCRIPTS}/${c.name}.py`, ...(c.args ?? []).map(fill)],
          working_dir: dir,
          gpus: 0,
          max_attempts: 2,
        });
        assertEquals(res.status, 201, res.text);
        return res.json.id as string;
      }));
      const results = await Promise.all(
        run.map((c, i) => ended(call, jobs[i], c.retry === "may_help" ? 2 : 1)),
      );
      const table: string[] = [];
      const wrong: string[] = [];
      for (const [i, c] of run.entries()) {
        const { wrong: w, got } = await check(call, c, results[i]);
        table.push(`${c.name} | ${c.cause} / ${c.retry} | ${got}`);
        wrong.push(...w.map((s) => `${c.name}: ${s}`));
      }
      // deno-lint-ignore no-console -- the table the closing note quotes
      console.log(
        ["case | expected | got", ...table, ...SKIPPED.map((s) => `left out: ${s}`)].join("\n"),
      );
      assertEquals(wrong, [], `${wrong.length} of ${run.length} cases wrong`);
    } finally {
      held.close();
      if (mounted) await mount(["-l", tmpfs], "umount").catch(() => {});
      // The cgroup is empty once its process was killed; rmdir is how a cgroup is removed.
      if (cgroup) await Deno.remove(cgroup).catch(() => {});
      await cluster.stop();
    }
  },
});

/** Runs mount or umount, bounded. */
async function mount(args: string[], program = "mount"): Promise<void> {
  const out = await new Deno.Command(program, {
    args,
    stdout: "piped",
    stderr: "piped",
    signal: AbortSignal.timeout(10_000),
  }).output();
  assert(out.success, `${program} ${args.join(" ")}: ${new TextDecoder().decode(out.stderr)}`);
}
