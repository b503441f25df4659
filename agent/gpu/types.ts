/**
 * The shape of GPU telemetry shared by the NVML binding and the fake GPUs.
 *
 * Field names are snake_case because these objects travel as-is in the agent's `hello`
 * and `heartbeat` frames.
 */

/** Static facts about one GPU, read once when the probe opens. */
export interface GpuInfo {
  /** NVML index, the number used in `CUDA_VISIBLE_DEVICES` with `CUDA_DEVICE_ORDER=PCI_BUS_ID`. */
  index: number;
  /** `GPU-…` UUID; an empty string when NVML could not say. */
  uuid: string;
  /** Product name, e.g. "NVIDIA H100 80GB HBM3"; an empty string when NVML could not say. */
  name: string;
  /** Framebuffer size in MiB; 0 when NVML could not say. */
  memory_total_mb: number;
  /** True for a simulated GPU. */
  fake: boolean;
  /** Set when the GPU could not be read at open, e.g. "GPU_IS_LOST". */
  error?: string;
}

/** A process that holds a context on a GPU. */
export interface GpuProcess {
  /** Process id, in the namespace NVML sees (the host's, inside a container). */
  pid: number;
  /** GPU memory the process holds in MiB; null when the driver does not say. */
  used_mb: number | null;
}

/** One reading of one GPU. Fields the GPU does not support, or that failed, are null. */
export interface GpuSample {
  index: number;
  uuid: string;
  memory_used_mb: number | null;
  memory_total_mb: number | null;
  util_pct: number | null;
  temp_c: number | null;
  power_w: number | null;
  /** Compute and graphics processes, one entry per pid. */
  processes: GpuProcess[];
  /**
   * Set when the whole GPU could not be read, with the NVML code's name
   * (e.g. "GPU_IS_LOST"); all readings are then null and `processes` is empty.
   */
  error?: string;
}

/** A GPU's sample before anything is read (or when nothing could be): every reading null. */
export function unreadSample(info: Pick<GpuInfo, "index" | "uuid">): GpuSample {
  return {
    index: info.index,
    uuid: info.uuid,
    memory_used_mb: null,
    memory_total_mb: null,
    util_pct: null,
    temp_c: null,
    power_w: null,
    processes: [],
  };
}

/** A source of GPU facts and readings: NVML, or simulated GPUs. */
export interface GpuProbe {
  readonly kind: "nvml" | "fake";
  /** The NVIDIA driver version, e.g. "550.54.15"; null when unknown. */
  driverVersion(): string | null;
  /** The GPUs found when the probe opened, ordered by index. */
  devices(): GpuInfo[];
  /** Reads every GPU now. Never throws; per GPU and per field failures are in the result. */
  sample(): GpuSample[];
  /** Releases the probe; idempotent. `sample()` returns `[]` afterwards. */
  close(): void;
}
