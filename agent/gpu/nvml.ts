/**
 * GPU telemetry from NVML (libnvidia-ml) through Deno FFI.
 *
 * Every call is synchronous and cheap (microseconds per query on a healthy GPU), so a
 * sample of all GPUs fits in the agent's heartbeat without a worker. Nothing here throws
 * once the probe is open: failures are reported per GPU and per field.
 */
import {
  isDeviceFatal,
  NVML_ERROR_INSUFFICIENT_SIZE,
  NVML_ERROR_NOT_SUPPORTED,
  NVML_SUCCESS,
  nvmlCodeName,
} from "./nvml_return_codes.ts";
import { NVML_SYMBOLS, NVML_TEMPERATURE_GPU, type NvmlSymbols } from "./nvml_symbols.ts";
import {
  decodeCString,
  decodeMemory,
  decodeProcessInfos,
  decodeU32,
  decodeUtilization,
  NVML_DEVICE_STRING_BUFFER_SIZE,
  NVML_DRIVER_VERSION_BUFFER_SIZE,
  NVML_MEMORY_SIZE,
  NVML_UTILIZATION_SIZE,
  PROCESS_INFO_V1_LAYOUT,
  PROCESS_INFO_V2_LAYOUT,
  type ProcessInfoLayout,
} from "./nvml_structs.ts";
import type { GpuInfo, GpuProbe, GpuProcess, GpuSample } from "./types.ts";
import { unreadSample } from "./types.ts";

/** The library name the NVIDIA driver installs; found through the dynamic loader's path. */
export const DEFAULT_NVML_LIBRARY = "libnvidia-ml.so.1";
/** Process-list entries tried first; grown to what NVML asks for and kept. */
export const INITIAL_PROCESS_CAPACITY = 16;
/** Sizing round trips before giving up on a process list that keeps growing. */
const PROCESS_QUERY_ATTEMPTS = 3;
/** Extra entries on a retry, since processes may start between two calls. */
const PROCESS_CAPACITY_SLACK = 8;

/** Options of {@linkcode openNvml}; every field is optional. */
export interface OpenNvmlOptions {
  /**
   * Path or name of the NVML library.
   * @default {DEFAULT_NVML_LIBRARY}
   */
  libraryPath?: string;
  /**
   * Receives one line when something went wrong or changed: a field that fails other than
   * by NOT_SUPPORTED (once per GPU, field and code), a GPU becoming unreadable or readable
   * again, a reading the library lacks (once, at open).
   * @default {() => {}}
   */
  log?: (msg: string) => void;
}

/** An open probe, or why there is none (the node is then CPU-only). */
export type OpenNvmlResult =
  | { probe: GpuProbe; reason: null }
  | { probe: null; reason: string };

/**
 * Loads NVML and initialises it. Never throws: when the library cannot be loaded or NVML
 * cannot start, the result carries `probe: null` and a sentence saying why.
 */
export function openNvml(options: OpenNvmlOptions = {}): OpenNvmlResult {
  const path = options.libraryPath ?? DEFAULT_NVML_LIBRARY;
  const log = options.log ?? (() => {});
  let lib: Deno.DynamicLibrary<typeof NVML_SYMBOLS>;
  try {
    lib = Deno.dlopen(path, NVML_SYMBOLS);
  } catch (err) {
    return { probe: null, reason: `Cannot load NVML from "${path}": ${errorMessage(err)}` };
  }
  const fns = lib.symbols;
  const init = fns.nvmlInit_v2();
  if (init !== NVML_SUCCESS) {
    const reason = `Cannot initialise NVML from "${path}": nvmlInit_v2 returned ${
      describeCode(fns, init)
    }`;
    lib.close();
    return { probe: null, reason };
  }
  const count = new Uint8Array(4);
  const rc = fns.nvmlDeviceGetCount_v2(count);
  if (rc !== NVML_SUCCESS) {
    const reason = `Cannot count GPUs through NVML from "${path}": nvmlDeviceGetCount_v2 returned ${
      describeCode(fns, rc)
    }`;
    fns.nvmlShutdown();
    lib.close();
    return { probe: null, reason };
  }
  try {
    return { probe: new NvmlProbe(lib, decodeU32(count), log), reason: null };
  } catch (err) {
    // Not expected (the constructor reports failures per GPU), but never throw to the agent.
    fns.nvmlShutdown();
    lib.close();
    return { probe: null, reason: `Cannot read GPUs through NVML: ${errorMessage(err)}` };
  }
}

/** Thrown inside the probe when a whole GPU cannot be read; never escapes it. */
class DeviceUnreadable extends Error {
  constructor(readonly code: number) {
    super(nvmlCodeName(code));
  }
}

interface ProcessQuery {
  readonly name: string;
  readonly call: NonNullable<NvmlSymbols["nvmlDeviceGetComputeRunningProcesses_v3"]>;
  readonly layout: ProcessInfoLayout;
}

class NvmlProbe implements GpuProbe {
  readonly kind = "nvml" as const;
  readonly #lib: Deno.DynamicLibrary<typeof NVML_SYMBOLS>;
  readonly #fns: NvmlSymbols;
  readonly #log: (msg: string) => void;
  readonly #handles: Deno.PointerValue[];
  readonly #infos: GpuInfo[];
  readonly #driverVersion: string | null;
  readonly #processQueries: ProcessQuery[];
  /** Per GPU, the name of the error of the last sample, to log changes only. */
  readonly #lastErrors: (string | undefined)[];
  readonly #loggedFieldErrors = new Set<string>();
  #closed = false;

  // Out-parameter buffers, reused by every call.
  readonly #u32 = new Uint8Array(4);
  readonly #pointer = new Uint8Array(8);
  readonly #string = new Uint8Array(
    Math.max(NVML_DEVICE_STRING_BUFFER_SIZE, NVML_DRIVER_VERSION_BUFFER_SIZE),
  );
  readonly #memory = new Uint8Array(NVML_MEMORY_SIZE);
  readonly #utilization = new Uint8Array(NVML_UTILIZATION_SIZE);
  #processCapacity = INITIAL_PROCESS_CAPACITY;
  #processBuffer = new Uint8Array(INITIAL_PROCESS_CAPACITY * PROCESS_INFO_V2_LAYOUT.size);

  constructor(
    lib: Deno.DynamicLibrary<typeof NVML_SYMBOLS>,
    count: number,
    log: (msg: string) => void,
  ) {
    this.#lib = lib;
    this.#fns = lib.symbols;
    this.#log = log;
    this.#processQueries = this.#chooseProcessQueries();
    this.#logMissingReadings();
    this.#driverVersion = this.#readDriverVersion();
    this.#handles = [];
    this.#infos = [];
    this.#lastErrors = [];
    for (let index = 0; index < count; index++) {
      this.#handles.push(null);
      this.#infos.push(this.#readInfo(index));
      this.#lastErrors.push(this.#infos[index].error);
    }
  }

  driverVersion(): string | null {
    return this.#driverVersion;
  }

  devices(): GpuInfo[] {
    return this.#infos.map((info) => ({ ...info }));
  }

  sample(): GpuSample[] {
    if (this.#closed) return [];
    return this.#infos.map((info) => this.#sampleDevice(info));
  }

  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    try {
      const rc = this.#fns.nvmlShutdown();
      if (rc !== NVML_SUCCESS) {
        this.#log(`NVML: nvmlShutdown returned ${describeCode(this.#fns, rc)}`);
      }
    } finally {
      this.#lib.close();
    }
  }

  // ---- open-time facts -------------------------------------------------------------

  /** Compute processes through the newest query the library has, plus graphics ones. */
  #chooseProcessQueries(): ProcessQuery[] {
    const f = this.#fns;
    const queries: ProcessQuery[] = [];
    const compute = f.nvmlDeviceGetComputeRunningProcesses_v3
      ? {
        name: "nvmlDeviceGetComputeRunningProcesses_v3",
        call: f.nvmlDeviceGetComputeRunningProcesses_v3,
        layout: PROCESS_INFO_V2_LAYOUT,
      }
      : f.nvmlDeviceGetComputeRunningProcesses_v2
      ? {
        name: "nvmlDeviceGetComputeRunningProcesses_v2",
        call: f.nvmlDeviceGetComputeRunningProcesses_v2,
        layout: PROCESS_INFO_V2_LAYOUT,
      }
      : f.nvmlDeviceGetComputeRunningProcesses
      ? {
        name: "nvmlDeviceGetComputeRunningProcesses",
        call: f.nvmlDeviceGetComputeRunningProcesses,
        layout: PROCESS_INFO_V1_LAYOUT,
      }
      : null;
    if (compute) queries.push(compute);
    if (f.nvmlDeviceGetGraphicsRunningProcesses_v3) {
      queries.push({
        name: "nvmlDeviceGetGraphicsRunningProcesses_v3",
        call: f.nvmlDeviceGetGraphicsRunningProcesses_v3,
        layout: PROCESS_INFO_V2_LAYOUT,
      });
    }
    return queries;
  }

  #logMissingReadings(): void {
    const f = this.#fns;
    const readings: [string, unknown, string][] = [
      ["nvmlDeviceGetName", f.nvmlDeviceGetName, "name"],
      ["nvmlDeviceGetUUID", f.nvmlDeviceGetUUID, "uuid"],
      ["nvmlDeviceGetMemoryInfo", f.nvmlDeviceGetMemoryInfo, "memory_*_mb"],
      ["nvmlDeviceGetUtilizationRates", f.nvmlDeviceGetUtilizationRates, "util_pct"],
      ["nvmlDeviceGetTemperature", f.nvmlDeviceGetTemperature, "temp_c"],
      ["nvmlDeviceGetPowerUsage", f.nvmlDeviceGetPowerUsage, "power_w"],
    ];
    for (const [symbol, fn, field] of readings) {
      if (fn === null) this.#log(`NVML: the library has no ${symbol}; ${field} stays empty`);
    }
    if (!this.#processQueries.some((q) => q.name.includes("Compute"))) {
      this.#log(
        "NVML: the library has no nvmlDeviceGetComputeRunningProcesses*; GPU processes stay empty",
      );
    }
  }

  #readDriverVersion(): string | null {
    const fn = this.#fns.nvmlSystemGetDriverVersion;
    if (!fn) return null;
    const rc = fn(this.#string, NVML_DRIVER_VERSION_BUFFER_SIZE);
    if (rc !== NVML_SUCCESS) {
      if (rc !== NVML_ERROR_NOT_SUPPORTED) {
        this.#log(`NVML: cannot read the driver version: ${describeCode(this.#fns, rc)}`);
      }
      return null;
    }
    return decodeCString(this.#string);
  }

  #readInfo(index: number): GpuInfo {
    const info: GpuInfo = { index, uuid: "", name: "", memory_total_mb: 0, fake: false };
    try {
      const handle = this.#handle(index);
      info.name = this.#readString(index, "name", handle, this.#fns.nvmlDeviceGetName) ?? "";
      info.uuid = this.#readString(index, "uuid", handle, this.#fns.nvmlDeviceGetUUID) ?? "";
      const memory = this.#fns.nvmlDeviceGetMemoryInfo;
      if (memory && this.#ok(index, "memory", memory(handle, this.#memory))) {
        info.memory_total_mb = decodeMemory(this.#memory).total_mb;
      }
    } catch (err) {
      info.error = this.#deviceError(index, err);
      this.#log(`NVML: cannot read GPU ${index} at start: ${info.error}`);
    }
    return info;
  }

  #readString(
    index: number,
    field: string,
    handle: Deno.PointerValue,
    fn: NvmlSymbols["nvmlDeviceGetName"],
  ): string | null {
    if (!fn) return null;
    const rc = fn(handle, this.#string, NVML_DEVICE_STRING_BUFFER_SIZE);
    return this.#ok(index, field, rc) ? decodeCString(this.#string) : null;
  }

  // ---- sampling ------------------------------------------------------------------

  #sampleDevice(info: GpuInfo): GpuSample {
    const { index } = info;
    const sample = unreadSample(info);
    try {
      this.#readSample(index, sample);
    } catch (err) {
      const error = this.#deviceError(index, err);
      this.#noteDeviceState(info, error);
      return { ...sample, error };
    }
    this.#noteDeviceState(info, undefined);
    return sample;
  }

  /** Fills `sample`; throws DeviceUnreadable when the GPU as a whole cannot be read. */
  #readSample(index: number, sample: GpuSample): void {
    const f = this.#fns;
    const handle = this.#handle(index);
    if (f.nvmlDeviceGetMemoryInfo) {
      if (this.#ok(index, "memory", f.nvmlDeviceGetMemoryInfo(handle, this.#memory))) {
        const memory = decodeMemory(this.#memory);
        sample.memory_used_mb = memory.used_mb;
        sample.memory_total_mb = memory.total_mb;
      }
    }
    if (f.nvmlDeviceGetUtilizationRates) {
      const rc = f.nvmlDeviceGetUtilizationRates(handle, this.#utilization);
      if (this.#ok(index, "util", rc)) sample.util_pct = decodeUtilization(this.#utilization).gpu;
    }
    if (f.nvmlDeviceGetTemperature) {
      const rc = f.nvmlDeviceGetTemperature(handle, NVML_TEMPERATURE_GPU, this.#u32);
      if (this.#ok(index, "temperature", rc)) sample.temp_c = decodeU32(this.#u32);
    }
    if (f.nvmlDeviceGetPowerUsage) {
      const rc = f.nvmlDeviceGetPowerUsage(handle, this.#u32);
      if (this.#ok(index, "power", rc)) sample.power_w = decodeU32(this.#u32) / 1000;
    }
    sample.processes = this.#readProcesses(index, handle);
  }

  /** Compute and graphics processes merged by pid (a process can hold both contexts). */
  #readProcesses(index: number, handle: Deno.PointerValue): GpuProcess[] {
    const byPid = new Map<number, GpuProcess>();
    for (const query of this.#processQueries) {
      for (const p of this.#queryProcesses(index, handle, query) ?? []) {
        const seen = byPid.get(p.pid);
        if (!seen) byPid.set(p.pid, p);
        else if (p.used_mb !== null) seen.used_mb = Math.max(seen.used_mb ?? 0, p.used_mb);
      }
    }
    return [...byPid.values()];
  }

  /**
   * NVML's sizing protocol: called with a count smaller than the list, it answers
   * INSUFFICIENT_SIZE and writes the needed count back, so retry with that many (plus
   * slack, as processes start in between).
   */
  #queryProcesses(
    index: number,
    handle: Deno.PointerValue,
    query: ProcessQuery,
  ): GpuProcess[] | null {
    const counter = new DataView(this.#u32.buffer);
    for (let attempt = 0; attempt < PROCESS_QUERY_ATTEMPTS; attempt++) {
      const bytes = this.#processCapacity * query.layout.size;
      if (this.#processBuffer.byteLength < bytes) this.#processBuffer = new Uint8Array(bytes);
      counter.setUint32(0, this.#processCapacity, true);
      const rc = query.call(handle, this.#u32, this.#processBuffer);
      const count = decodeU32(this.#u32);
      if (rc === NVML_SUCCESS) {
        return decodeProcessInfos(this.#processBuffer, count, query.layout);
      }
      if (rc !== NVML_ERROR_INSUFFICIENT_SIZE) {
        this.#ok(index, "processes", rc);
        return null;
      }
      this.#processCapacity = Math.max(this.#processCapacity, count + PROCESS_CAPACITY_SLACK);
    }
    this.#logFieldErrorOnce(
      index,
      "processes",
      "growing",
      `${query.name} kept asking for a larger buffer (last ${this.#processCapacity} entries)`,
    );
    return null;
  }

  // ---- error handling ----------------------------------------------------------------

  #handle(index: number): Deno.PointerValue {
    const cached = this.#handles[index];
    if (cached) return cached;
    const rc = this.#fns.nvmlDeviceGetHandleByIndex_v2(index, this.#pointer);
    if (rc !== NVML_SUCCESS) throw new DeviceUnreadable(rc);
    const address = new DataView(this.#pointer.buffer).getBigUint64(0, true);
    const handle = Deno.UnsafePointer.create(address);
    this.#handles[index] = handle;
    return handle;
  }

  /**
   * True on success. A GPU-wide failure (lost, needs reset) throws DeviceUnreadable; any
   * other failure leaves the field null, and is logged once unless it is NOT_SUPPORTED.
   */
  #ok(index: number, field: string, rc: number): boolean {
    if (rc === NVML_SUCCESS) return true;
    if (isDeviceFatal(rc)) throw new DeviceUnreadable(rc);
    if (rc !== NVML_ERROR_NOT_SUPPORTED) {
      this.#logFieldErrorOnce(index, field, rc, describeCode(this.#fns, rc));
    }
    return false;
  }

  #logFieldErrorOnce(index: number, field: string, cause: number | string, detail: string): void {
    const seen = `${index}:${field}:${cause}`;
    if (this.#loggedFieldErrors.has(seen)) return;
    this.#loggedFieldErrors.add(seen);
    this.#log(`NVML: cannot read ${field} of GPU ${index}: ${detail}; reporting it as empty`);
  }

  /** The error name for a failed GPU; unexpected exceptions are logged and named INTERNAL. */
  #deviceError(index: number, err: unknown): string {
    if (err instanceof DeviceUnreadable) return err.message;
    this.#log(`NVML: unexpected failure reading GPU ${index}: ${errorMessage(err)}`);
    return "INTERNAL";
  }

  #noteDeviceState(info: GpuInfo, error: string | undefined): void {
    const last = this.#lastErrors[info.index];
    if (last === error) return;
    this.#lastErrors[info.index] = error;
    const gpu = `GPU ${info.index}${info.uuid ? ` (${info.uuid})` : ""}`;
    this.#log(
      error
        ? `NVML: ${gpu} cannot be read: ${error}; the other GPUs are still sampled`
        : `NVML: ${gpu} can be read again`,
    );
  }
}

/** `GPU_IS_LOST (15: GPU is lost)`, with NVML's own wording when it has one. */
function describeCode(fns: NvmlSymbols, code: number): string {
  const pointer = fns.nvmlErrorString(code);
  const text = pointer ? Deno.UnsafePointerView.getCString(pointer) : "";
  return `${nvmlCodeName(code)} (${code}${text ? `: ${text}` : ""})`;
}

function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
