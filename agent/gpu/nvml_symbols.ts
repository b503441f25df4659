/**
 * The NVML functions the agent calls, with their C signatures from nvml.h, as a
 * `Deno.dlopen` symbol table.
 *
 * `nvmlReturn_t` is a C enum (i32), `nvmlDevice_t` an opaque pointer, and every out
 * parameter a caller-owned buffer. The functions needed to find GPUs at all are
 * required; each reading is optional, so an old or partial driver library still loads and
 * only the missing readings are null.
 */
export const NVML_SYMBOLS = {
  // nvmlReturn_t nvmlInit_v2(void)
  nvmlInit_v2: { parameters: [], result: "i32" },
  // nvmlReturn_t nvmlShutdown(void)
  nvmlShutdown: { parameters: [], result: "i32" },
  // const char* nvmlErrorString(nvmlReturn_t result)
  nvmlErrorString: { parameters: ["i32"], result: "pointer" },
  // nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int* deviceCount)
  nvmlDeviceGetCount_v2: { parameters: ["buffer"], result: "i32" },
  // nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t* device)
  nvmlDeviceGetHandleByIndex_v2: { parameters: ["u32", "buffer"], result: "i32" },
  // nvmlReturn_t nvmlSystemGetDriverVersion(char* version, unsigned int length)
  nvmlSystemGetDriverVersion: { parameters: ["buffer", "u32"], result: "i32", optional: true },
  // nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char* name, unsigned int length)
  nvmlDeviceGetName: { parameters: ["pointer", "buffer", "u32"], result: "i32", optional: true },
  // nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char* uuid, unsigned int length)
  nvmlDeviceGetUUID: { parameters: ["pointer", "buffer", "u32"], result: "i32", optional: true },
  // nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t* memory)
  nvmlDeviceGetMemoryInfo: { parameters: ["pointer", "buffer"], result: "i32", optional: true },
  // nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t device, nvmlUtilization_t* utilization)
  nvmlDeviceGetUtilizationRates: {
    parameters: ["pointer", "buffer"],
    result: "i32",
    optional: true,
  },
  // nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t device,
  //   nvmlTemperatureSensors_t sensorType, unsigned int* temp)
  nvmlDeviceGetTemperature: {
    parameters: ["pointer", "i32", "buffer"],
    result: "i32",
    optional: true,
  },
  // nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t device, unsigned int* power)  (milliwatts)
  nvmlDeviceGetPowerUsage: { parameters: ["pointer", "buffer"], result: "i32", optional: true },
  // nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t device,
  //   unsigned int* infoCount, nvmlProcessInfo_t* infos)  (24-byte entries)
  nvmlDeviceGetComputeRunningProcesses_v3: {
    parameters: ["pointer", "buffer", "buffer"],
    result: "i32",
    optional: true,
  },
  // The same signature and 24-byte entries, in drivers from 450 until _v3 replaced it.
  nvmlDeviceGetComputeRunningProcesses_v2: {
    parameters: ["pointer", "buffer", "buffer"],
    result: "i32",
    optional: true,
  },
  // The unversioned symbol keeps the v1 ABI: 16-byte entries {pid, usedGpuMemory}.
  nvmlDeviceGetComputeRunningProcesses: {
    parameters: ["pointer", "buffer", "buffer"],
    result: "i32",
    optional: true,
  },
  // nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses_v3(nvmlDevice_t device,
  //   unsigned int* infoCount, nvmlProcessInfo_t* infos)  (24-byte entries)
  nvmlDeviceGetGraphicsRunningProcesses_v3: {
    parameters: ["pointer", "buffer", "buffer"],
    result: "i32",
    optional: true,
  },
} as const satisfies Deno.ForeignLibraryInterface;

/** The loaded symbols; optional ones are null when the library lacks them. */
export type NvmlSymbols = Deno.DynamicLibrary<typeof NVML_SYMBOLS>["symbols"];

/** `NVML_TEMPERATURE_GPU`, the sensor argument of `nvmlDeviceGetTemperature`. */
export const NVML_TEMPERATURE_GPU = 0;
