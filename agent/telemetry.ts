/**
 * Every `sample_s`: GPU and host readings for the heartbeat, system metrics for each running
 * job (stream `sys`), and events for foreign GPU processes and low disks (stream `data`).
 */
import type { GpuSampleFrame } from "../protocol/agent.ts";
import { findForeignProcesses, type ForeignProcess, type GpuProbe } from "./gpu/mod.ts";
import { type DiskLevel, nextDiskAlerts } from "./disk_alerts.ts";
import { newForeignProcesses } from "./foreign_alerts.ts";
import { type AttemptRef, metricsFrames, type NewDataFrame, type WirePoint } from "./frames.ts";
import { type DiskUsage, diskUsage, type HostReader, toMb } from "./host_stats.ts";
import type { Logger } from "./log.ts";

/** What telemetry needs to know about one running attempt. */
export interface TelemetryJob {
  ref: AttemptRef;
  gpu_indices: number[];
  working_dir: string;
  /** Every live pid of the attempt (to tell its GPU processes from foreign ones). */
  pids(): number[];
  /** The step of the attempt's next system-metrics sample (a counter kept with the attempt). */
  nextSysStep(): number;
}

/** Options of {@linkcode Telemetry}. */
export interface TelemetryOptions {
  probe: GpuProbe | null;
  host: Pick<HostReader, "cpuPct" | "memory">;
  dataDir: string;
  jobs(): TelemetryJob[];
  emit(frame: NewDataFrame): Promise<unknown>;
  log: Logger;
  sampleMs: number;
  /** Unix ms. @default Date.now */
  now?: () => number;
  /** @default statfs of the path */
  diskUsage?: (path: string) => DiskUsage | null;
}

/** The latest readings, as the heartbeat carries them. */
export interface TelemetrySnapshot {
  gpus: GpuSampleFrame[];
  cpu_pct: number | null;
  mem_used_mb: number | null;
  disk_free_mb: number | null;
  foreign: ForeignProcess[];
}

/** Samples the host on a timer. */
export class Telemetry {
  #options: TelemetryOptions;
  #latest: TelemetrySnapshot = {
    gpus: [],
    cpu_pct: null,
    mem_used_mb: null,
    disk_free_mb: null,
    foreign: [],
  };
  #seenForeign = new Set<string>();
  #raisedDisk = new Map<string, DiskLevel>();
  #timer: ReturnType<typeof setTimeout> | null = null;
  #running: Promise<unknown> = Promise.resolve();
  #stopped = true;

  constructor(options: TelemetryOptions) {
    this.#options = options;
  }

  /** The newest readings (empty until the first sample). */
  latest(): TelemetrySnapshot {
    return this.#latest;
  }

  /** Samples now and then every `sampleMs`; idempotent. */
  start(): void {
    if (!this.#stopped) return;
    this.#stopped = false;
    this.#options.host.cpuPct(); // primes the CPU delta
    const tick = () => {
      this.#running = this.runOnce()
        .catch((err) => this.#options.log.error("telemetry sample failed", { error: String(err) }))
        .finally(() => {
          if (!this.#stopped) this.#timer = setTimeout(tick, this.#options.sampleMs);
        });
    };
    tick();
  }

  /** Stops sampling; idempotent. */
  async stop(): Promise<void> {
    this.#stopped = true;
    if (this.#timer !== null) clearTimeout(this.#timer);
    this.#timer = null;
    await this.#running;
  }

  /** Takes one sample and emits its frames; returns what it emitted. */
  async runOnce(): Promise<{ metricsFrames: number; events: number }> {
    const { probe, host, dataDir, log } = this.#options;
    const now = (this.#options.now ?? Date.now)();
    const readDisk = this.#options.diskUsage ?? diskUsage;
    const gpus = probe?.sample() ?? [];
    const cpuPct = host.cpuPct();
    const memory = host.memory();
    const jobs = this.#options.jobs();
    const owned = new Set(jobs.flatMap((job) => job.pids()));
    const foreign = findForeignProcesses(gpus, owned);
    const dataDisk = readDisk(dataDir);
    this.#latest = {
      gpus: gpus.map((sample) => ({ ...sample, processes: sample.processes.slice(0, 1000) })),
      cpu_pct: cpuPct,
      mem_used_mb: memory?.usedMb ?? null,
      disk_free_mb: dataDisk ? toMb(dataDisk.freeBytes) : null,
      foreign: foreign.slice(0, 1000),
    };

    const frames: NewDataFrame[] = [];
    for (const job of jobs) {
      const step = job.nextSysStep();
      const points: WirePoint[] = [];
      const add = (key: string, value: number | null) => {
        if (value !== null && Number.isFinite(value)) {
          points.push({ key, step, value, wall_time: now / 1000 });
        }
      };
      for (const index of job.gpu_indices) {
        const sample = gpus.find((g) => g.index === index);
        if (!sample) continue;
        add(`sys/gpu${index}/util`, sample.util_pct);
        add(`sys/gpu${index}/mem_used_mb`, sample.memory_used_mb);
        add(`sys/gpu${index}/temp_c`, sample.temp_c);
        add(`sys/gpu${index}/power_w`, sample.power_w);
      }
      add("sys/cpu_pct", cpuPct);
      add("sys/mem_used_mb", memory?.usedMb ?? null);
      if (points.length > 0) frames.push(...metricsFrames(job.ref, "sys", points));
    }
    const metricsCount = frames.length;

    const fresh = newForeignProcesses(this.#seenForeign, foreign);
    this.#seenForeign = fresh.seen;
    for (const process of fresh.fresh) {
      const holder = jobs.find((job) => job.gpu_indices.includes(process.gpu_index));
      const memory = process.used_mb === null ? "" : ` (${process.used_mb} MiB)`;
      frames.push({
        type: "event",
        stream: "data",
        event: {
          type: "FOREIGN_GPU_PROCESS",
          severity: "warning",
          message: `GPU ${process.gpu_index} holds process ${process.pid}${memory} that no ` +
            `gpuctl job owns` + (holder ? `; job "${holder.ref.job_id}" runs on that GPU` : ""),
          data: { gpu_index: process.gpu_index, pid: process.pid, used_mb: process.used_mb },
          ...(holder ? { job_id: holder.ref.job_id, run_id: holder.ref.run_id } : {}),
        },
      });
    }

    const readings = [];
    if (dataDisk) readings.push({ path: dataDir, usage: dataDisk });
    for (const dir of new Set(jobs.map((job) => job.working_dir))) {
      const usage = readDisk(dir);
      if (usage) readings.push({ path: dir, usage });
    }
    const disk = nextDiskAlerts(this.#raisedDisk, readings);
    this.#raisedDisk = disk.raised;
    for (const alert of disk.alerts) {
      const job = jobs.find((j) => j.working_dir === alert.path);
      const freeGib = (alert.usage.freeBytes / 1024 ** 3).toFixed(1);
      const pct = alert.usage.totalBytes > 0
        ? ((alert.usage.freeBytes / alert.usage.totalBytes) * 100).toFixed(1)
        : "0";
      frames.push({
        type: "event",
        stream: "data",
        event: {
          type: "DISK_LOW",
          severity: alert.level,
          message: `Disk low at "${alert.path}": ${freeGib} GiB free (${pct} %)`,
          data: {
            path: alert.path,
            free_mb: toMb(alert.usage.freeBytes),
            total_mb: toMb(alert.usage.totalBytes),
          },
          ...(job ? { job_id: job.ref.job_id, run_id: job.ref.run_id } : {}),
        },
      });
      log.warn("disk low", { path: alert.path, level: alert.level, free_gib: freeGib });
    }
    for (const frame of frames) await this.#options.emit(frame);
    return { metricsFrames: metricsCount, events: frames.length - metricsCount };
  }
}
