/**
 * GPU telemetry for the agent: NVML through Deno FFI, or simulated GPUs, behind one
 * {@linkcode GpuProbe} interface.
 *
 * @module
 */

/** Facts, readings and the probe interface shared by NVML and fake GPUs. */
export type { GpuInfo, GpuProbe, GpuProcess, GpuSample } from "./types.ts";
/** Loads libnvidia-ml through FFI; `{probe: null, reason}` when there is no usable NVML. */
export { DEFAULT_NVML_LIBRARY, openNvml } from "./nvml.ts";
/** Options and result of {@linkcode openNvml}. */
export type { OpenNvmlOptions, OpenNvmlResult } from "./nvml.ts";
/** Simulated GPUs whose load the caller drives. */
export { createFakeGpus } from "./fake_gpus.ts";
/** Options, load and probe type of {@linkcode createFakeGpus}. */
export type { FakeGpuLoad, FakeGpuOptions, FakeGpuProbe } from "./fake_gpus.ts";
/** GPU processes not owned by any gpuctl job. */
export { findForeignProcesses } from "./foreign_processes.ts";
/** One foreign process on one GPU. */
export type { ForeignProcess } from "./foreign_processes.ts";
