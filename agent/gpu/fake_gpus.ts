/**
 * Simulated GPUs behind the same {@linkcode GpuProbe} interface as NVML, for
 * `--fake-gpus N` and for tests that need busy GPUs or foreign processes.
 */
import type { GpuInfo, GpuProbe, GpuProcess, GpuSample } from "./types.ts";
import { unreadSample } from "./types.ts";

/** Name reported by every fake GPU unless overridden. */
export const DEFAULT_FAKE_GPU_NAME = "Fake GPU";
/** Memory of a fake GPU: 80 GiB. */
export const DEFAULT_FAKE_GPU_MEMORY_MB = 81920;
/** Driver version reported by fake GPUs. */
export const DEFAULT_FAKE_DRIVER_VERSION = "fake";
const IDLE_TEMP_C = 30;
const IDLE_POWER_W = 60;

/** Options of {@linkcode createFakeGpus}; every field is optional. */
export interface FakeGpuOptions {
  /** @default {DEFAULT_FAKE_GPU_NAME} */
  name?: string;
  /** @default {DEFAULT_FAKE_GPU_MEMORY_MB} */
  memoryTotalMb?: number;
  /**
   * Mixed into the UUIDs, so fake GPUs of different nodes (e.g. the node id) differ while
   * each stays stable across restarts.
   * @default {""}
   */
  uuidSeed?: string;
  /** @default {DEFAULT_FAKE_DRIVER_VERSION} */
  driverVersion?: string;
}

/** What a test drives on one fake GPU; fields left out keep their value. */
export interface FakeGpuLoad {
  util_pct?: number;
  memory_used_mb?: number;
  temp_c?: number;
  power_w?: number;
  processes?: GpuProcess[];
  /** Makes the GPU unreadable with this error (e.g. "GPU_IS_LOST"); null heals it. */
  error?: string | null;
}

/** Fake GPUs whose readings the caller sets. */
export interface FakeGpuProbe extends GpuProbe {
  readonly kind: "fake";
  /** Changes what GPU `index` reports from the next `sample()` on. */
  setLoad(index: number, load: FakeGpuLoad): void;
}

interface FakeGpuState {
  util_pct: number;
  memory_used_mb: number;
  temp_c: number;
  power_w: number;
  processes: GpuProcess[];
  error: string | null;
}

/**
 * Creates `count` idle fake GPUs with indices `0..count-1` and UUIDs
 * `GPU-fake-<index>-<8 hex digits of uuidSeed>`.
 *
 * @example
 * ```ts
 * import { createFakeGpus } from "./fake_gpus.ts";
 * const gpus = createFakeGpus(2);
 * gpus.setLoad(1, { util_pct: 97, processes: [{ pid: 4242, used_mb: 30000 }] });
 * gpus.sample()[1].util_pct; // 97
 * ```
 */
export function createFakeGpus(count: number, options: FakeGpuOptions = {}): FakeGpuProbe {
  if (!Number.isInteger(count) || count < 0) {
    throw new RangeError(`Cannot create fake GPUs: count must be an integer >= 0, got ${count}`);
  }
  const name = options.name ?? DEFAULT_FAKE_GPU_NAME;
  const memoryTotalMb = options.memoryTotalMb ?? DEFAULT_FAKE_GPU_MEMORY_MB;
  const driverVersion = options.driverVersion ?? DEFAULT_FAKE_DRIVER_VERSION;
  const suffix = fnv1a32Hex(options.uuidSeed ?? "");
  const infos: GpuInfo[] = Array.from({ length: count }, (_, index) => ({
    index,
    uuid: `GPU-fake-${index}-${suffix}`,
    name,
    memory_total_mb: memoryTotalMb,
    fake: true,
  }));
  const states: FakeGpuState[] = infos.map(() => ({
    util_pct: 0,
    memory_used_mb: 0,
    temp_c: IDLE_TEMP_C,
    power_w: IDLE_POWER_W,
    processes: [],
    error: null,
  }));
  let closed = false;

  return {
    kind: "fake",
    driverVersion: () => driverVersion,
    devices: () => infos.map((info) => ({ ...info })),
    sample(): GpuSample[] {
      if (closed) return [];
      return infos.map((info, index): GpuSample => {
        const state = states[index];
        if (state.error !== null) {
          return { ...unreadSample({ index, uuid: info.uuid }), error: state.error };
        }
        return {
          index,
          uuid: info.uuid,
          memory_used_mb: state.memory_used_mb,
          memory_total_mb: info.memory_total_mb,
          util_pct: state.util_pct,
          temp_c: state.temp_c,
          power_w: state.power_w,
          processes: state.processes.map((p) => ({ ...p })),
        };
      });
    },
    close(): void {
      closed = true;
    },
    setLoad(index: number, load: FakeGpuLoad): void {
      const state = states[index];
      if (!Number.isInteger(index) || state === undefined) {
        throw new RangeError(
          `Cannot set the load of fake GPU ${index}: there are ${count} (indices 0..${count - 1})`,
        );
      }
      if (load.util_pct !== undefined && !(load.util_pct >= 0 && load.util_pct <= 100)) {
        throw new RangeError(
          `Cannot set the load of fake GPU ${index}: util_pct must be 0..100, got ${load.util_pct}`,
        );
      }
      if (load.util_pct !== undefined) state.util_pct = load.util_pct;
      if (load.memory_used_mb !== undefined) state.memory_used_mb = load.memory_used_mb;
      if (load.temp_c !== undefined) state.temp_c = load.temp_c;
      if (load.power_w !== undefined) state.power_w = load.power_w;
      if (load.processes !== undefined) state.processes = load.processes.map((p) => ({ ...p }));
      if (load.error !== undefined) state.error = load.error;
    },
  };
}

/** 32-bit FNV-1a of the UTF-16 code units, as 8 hex digits: short, stable, dependency-free. */
function fnv1a32Hex(text: string): string {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash.toString(16).padStart(8, "0");
}
