/**
 * Byte layouts of the NVML structs the agent reads, and pure decoders for them.
 *
 * Offsets follow the C ABI of x86_64 and aarch64 Linux (little-endian, 8-byte alignment
 * for `unsigned long long`), the platforms NVML ships for.
 */
import type { GpuProcess } from "./types.ts";

/** `NVML_DEVICE_NAME_V2_BUFFER_SIZE` and `NVML_DEVICE_UUID_V2_BUFFER_SIZE`. */
export const NVML_DEVICE_STRING_BUFFER_SIZE = 96;
/** `NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE`. */
export const NVML_DRIVER_VERSION_BUFFER_SIZE = 80;
/** `nvmlMemory_t`: `{unsigned long long total, free, used}`. */
export const NVML_MEMORY_SIZE = 24;
/** `nvmlUtilization_t`: `{unsigned int gpu, memory}`. */
export const NVML_UTILIZATION_SIZE = 8;
/** `usedGpuMemory` when the driver cannot say (e.g. Windows WDDM, some containers). */
export const NVML_VALUE_NOT_AVAILABLE = 0xffff_ffff_ffff_ffffn;

/** Where `pid` and `usedGpuMemory` sit in one entry of a process list. */
export interface ProcessInfoLayout {
  /** Bytes per entry, padding included. */
  readonly size: number;
  readonly pidOffset: number;
  readonly usedGpuMemoryOffset: number;
}

/**
 * `nvmlProcessInfo_t` of the _v2/_v3 queries:
 * `{unsigned int pid; unsigned long long usedGpuMemory; unsigned int gpuInstanceId;
 * unsigned int computeInstanceId;}` — 4 bytes of padding after `pid`.
 */
export const PROCESS_INFO_V2_LAYOUT: ProcessInfoLayout = {
  size: 24,
  pidOffset: 0,
  usedGpuMemoryOffset: 8,
};

/** `nvmlProcessInfo_v1_t`: `{unsigned int pid; unsigned long long usedGpuMemory;}`. */
export const PROCESS_INFO_V1_LAYOUT: ProcessInfoLayout = {
  size: 16,
  pidOffset: 0,
  usedGpuMemoryOffset: 8,
};

const MIB = 1024n * 1024n;
const decoder = new TextDecoder();

function view(buf: Uint8Array): DataView {
  return new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
}

/** Bytes to whole MiB, rounded down as nvidia-smi does. */
export function bytesToMib(bytes: bigint): number {
  return Number(bytes / MIB);
}

/** The NUL-terminated string at the start of `buf` (all of `buf` if it has no NUL). */
export function decodeCString(buf: Uint8Array): string {
  const end = buf.indexOf(0);
  return decoder.decode(end === -1 ? buf : buf.subarray(0, end));
}

/** An `unsigned int` out parameter. */
export function decodeU32(buf: Uint8Array): number {
  return view(buf).getUint32(0, true);
}

/** An `nvmlMemory_t`, in MiB. */
export function decodeMemory(buf: Uint8Array): { total_mb: number; used_mb: number } {
  const dv = view(buf);
  return {
    total_mb: bytesToMib(dv.getBigUint64(0, true)),
    used_mb: bytesToMib(dv.getBigUint64(16, true)),
  };
}

/** An `nvmlUtilization_t`, in percent. */
export function decodeUtilization(buf: Uint8Array): { gpu: number; memory: number } {
  const dv = view(buf);
  return { gpu: dv.getUint32(0, true), memory: dv.getUint32(4, true) };
}

/** The first `count` entries of a process list written with `layout`. */
export function decodeProcessInfos(
  buf: Uint8Array,
  count: number,
  layout: ProcessInfoLayout,
): GpuProcess[] {
  const dv = view(buf);
  const n = Math.min(count, Math.floor(buf.byteLength / layout.size));
  const out: GpuProcess[] = [];
  for (let i = 0; i < n; i++) {
    const base = i * layout.size;
    const used = dv.getBigUint64(base + layout.usedGpuMemoryOffset, true);
    out.push({
      pid: dv.getUint32(base + layout.pidOffset, true),
      used_mb: used === NVML_VALUE_NOT_AVAILABLE ? null : bytesToMib(used),
    });
  }
  return out;
}
