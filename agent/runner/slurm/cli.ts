// Slurm's commands as the runner calls them: sbatch, scontrol, sacct, scancel, sinfo. Each
// runs with the agent's environment (SLURM_CONF …), never through a shell, and never throws.

import { runTool, type ToolOutput } from "../_tool.ts";
import {
  parseSacct,
  parseScontrolLine,
  parseSqueue,
  partitionGpuCount,
  type SlurmRecord,
} from "./parse.ts";

/** What the runner needs from Slurm (a fake stands in for it in unit tests). */
export interface SlurmCli {
  /** `sbatch ARGS` with `env` as its whole environment: the job id, or why not. */
  submit(
    args: string[],
    env: Record<string, string>,
  ): Promise<{ job_id: string } | { error: string }>;
  /**
   * Where each of many jobs is, in one `squeue --states=all` call: `JobState`, `Reason` and
   * `NodeList` of each job slurmctld still holds (a job missing from the map is forgotten);
   * null when squeue could not answer.
   */
  states(jobIds: string[]): Promise<Map<string, SlurmRecord> | null>;
  /** Ids of the jobs slurmctld holds with this name (`squeue --name`); null when squeue failed. */
  findByName(name: string): Promise<string[] | null>;
  /** `scontrol show job -d -o ID`; null when Slurm no longer knows the job (or cannot be asked). */
  show(jobId: string): Promise<SlurmRecord | null>;
  /** The job's accounting record (`sacct`); null without accounting or when it has none. */
  accounting(jobId: string): Promise<SlurmRecord | null>;
  /** `scancel [--signal=SIG --full] ID`; false when scancel failed. */
  cancel(jobId: string, signal: "TERM" | "KILL" | null): Promise<boolean>;
  /** GPUs of the partition's nodes, from sinfo; null when sinfo failed. */
  partitionGpus(partition: string): Promise<number | null>;
}

/** Fields asked of sacct, in order. */
export const SACCT_FIELDS = ["JobID", "State", "ExitCode", "NodeList", "Timelimit"] as const;

/** Options of {@linkcode createSlurmCli}. */
export interface SlurmCliOptions {
  /** The environment of scontrol, sacct, scancel and sinfo (the agent's). */
  env: Record<string, string>;
  /** Folder of the Slurm commands. @default found on `env.PATH` */
  binDir?: string | null;
}

/** The real Slurm commands. */
export function createSlurmCli(options: SlurmCliOptions): SlurmCli {
  const bin = (name: string) => options.binDir ? `${options.binDir}/${name}` : name;
  const run = (name: string, args: string[], env = options.env): Promise<ToolOutput> =>
    runTool(bin(name), args, env);
  return {
    async submit(args, env) {
      const out = await run("sbatch", args, env);
      // --parsable prints `id` or `id;cluster`.
      const id = out.stdout.trim().split(";")[0];
      if (out.ok && /^\d+$/.test(id)) return { job_id: id };
      const said = (out.stderr.trim() || out.stdout.trim()).split("\n").slice(-3).join(" ");
      return { error: `sbatch refused the job: ${said || "no output"}` };
    },
    async states(jobIds) {
      if (jobIds.length === 0) return new Map();
      const out = await run("squeue", [
        "--states=all",
        "-h",
        "-j",
        jobIds.join(","),
        "-o",
        "%i|%T|%r|%N",
      ]);
      // One id slurmctld has forgotten is an error; among others it is just not listed.
      if (!out.ok && !/Invalid job id/i.test(out.stderr)) return null;
      return parseSqueue(out.ok ? out.stdout : "");
    },
    async findByName(name) {
      const out = await run("squeue", ["--states=all", "-h", "--name", name, "-o", "%i"]);
      if (!out.ok) return null;
      return out.stdout.split("\n").map((id) => id.trim()).filter((id) => /^\d+$/.test(id));
    },
    async show(jobId) {
      const out = await run("scontrol", ["show", "job", "-d", "-o", jobId]);
      if (!out.ok) return null;
      const line = out.stdout.split("\n").find((l) => l.startsWith("JobId="));
      return line ? parseScontrolLine(line) : null;
    },
    async accounting(jobId) {
      const out = await run("sacct", [
        "-n",
        "-P",
        "-X",
        "-j",
        jobId,
        "-o",
        SACCT_FIELDS.join(","),
      ]);
      if (!out.ok) return null;
      return parseSacct(out.stdout, SACCT_FIELDS).find((r) => r.JobID === jobId) ?? null;
    },
    async cancel(jobId, signal) {
      const args = signal === null ? [jobId] : [`--signal=${signal}`, "--full", jobId];
      return (await run("scancel", args)).ok;
    },
    async partitionGpus(partition) {
      const out = await run("sinfo", ["-h", "-N", "-p", partition, "-o", "%N|%G"]);
      return out.ok ? partitionGpuCount(out.stdout) : null;
    },
  };
}

/** The name of a uid, from /etc/passwd (`1000` → `alice (uid 1000)`), or the uid alone. */
export function describeUid(uid: string, passwd: string | null): string {
  const line = passwd?.split("\n").find((l) => l.split(":")[2] === uid);
  const name = line?.split(":")[0];
  return name ? `${name} (uid ${uid})` : `uid ${uid}`;
}
