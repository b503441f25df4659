/*
 * A stand-in for libnvidia-ml.so.1, so that agent/gpu/nvml.ts is tested through real
 * Deno FFI calls on machines without an NVIDIA driver.
 *
 * Every function below has the signature and struct layout of the real NVML header
 * (nvml.h); the values are synthetic and deterministic so tests can assert them exactly
 * (a wrong struct offset reads a different, recognisable number).
 *
 * Build: cc -shared -fPIC -o <dir>/libnvidia-ml.so.1 fake_nvml.c
 * Add -DFAKE_NVML_V1_ONLY to leave out the _v2/_v3 process queries and the graphics
 * query, so the caller has to fall back to nvmlDeviceGetComputeRunningProcesses (v1
 * layout), as with drivers older than 450.
 *
 * Behaviour is configured by environment variables, read in nvmlInit_v2:
 *   FAKE_NVML_INIT_ERROR=9               nvmlInit_v2 returns this code
 *   FAKE_NVML_GPUS=2                     number of GPUs (default 2, at most 16)
 *   FAKE_NVML_NOT_SUPPORTED=power@1,...  field@gpu pairs answered with NOT_SUPPORTED;
 *                                        fields: name uuid memory util temp power
 *                                        processes driver
 *   FAKE_NVML_FAILING=util@0,...         field@gpu pairs answered with NVML_ERROR_UNKNOWN
 *   FAKE_NVML_COMPUTE_PROCS=0:1234:512,1:99:na
 *                                        gpu:pid:MiB compute processes ("na" = memory
 *                                        not available, NVML_VALUE_NOT_AVAILABLE)
 *   FAKE_NVML_GRAPHICS_PROCS=...         the same for graphics processes
 *   FAKE_NVML_MANY_PROCS=0:40            adds 40 compute processes on GPU 0, pids
 *                                        100000.., (k + 1) MiB each
 * and one that is read on every device call, so a test can lose a GPU after opening:
 *   FAKE_NVML_LOST=1,3                   these GPUs answer NVML_ERROR_GPU_IS_LOST
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef enum nvmlReturn_enum {
  NVML_SUCCESS = 0,
  NVML_ERROR_UNINITIALIZED = 1,
  NVML_ERROR_INVALID_ARGUMENT = 2,
  NVML_ERROR_NOT_SUPPORTED = 3,
  NVML_ERROR_INSUFFICIENT_SIZE = 7,
  NVML_ERROR_DRIVER_NOT_LOADED = 9,
  NVML_ERROR_GPU_IS_LOST = 15,
  NVML_ERROR_UNKNOWN = 999
} nvmlReturn_t;

typedef enum nvmlTemperatureSensors_enum { NVML_TEMPERATURE_GPU = 0 } nvmlTemperatureSensors_t;

struct nvmlDevice_st {
  unsigned int index;
};
typedef struct nvmlDevice_st *nvmlDevice_t;

typedef struct nvmlMemory_st {
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
} nvmlMemory_t;

typedef struct nvmlUtilization_st {
  unsigned int gpu;
  unsigned int memory;
} nvmlUtilization_t;

/* nvmlProcessInfo_v2_t / nvmlProcessInfo_t as used by the _v2 and _v3 queries. */
typedef struct nvmlProcessInfo_st {
  unsigned int pid;
  unsigned long long usedGpuMemory;
  unsigned int gpuInstanceId;
  unsigned int computeInstanceId;
} nvmlProcessInfo_t;

/* nvmlProcessInfo_v1_t, used by the unversioned nvmlDeviceGetComputeRunningProcesses. */
typedef struct nvmlProcessInfo_v1_st {
  unsigned int pid;
  unsigned long long usedGpuMemory;
} nvmlProcessInfo_v1_t;

_Static_assert(sizeof(nvmlMemory_t) == 24, "nvmlMemory_t is 24 bytes");
_Static_assert(sizeof(nvmlUtilization_t) == 8, "nvmlUtilization_t is 8 bytes");
_Static_assert(sizeof(nvmlProcessInfo_t) == 24, "nvmlProcessInfo_t is 24 bytes");
_Static_assert(sizeof(nvmlProcessInfo_v1_t) == 16, "nvmlProcessInfo_v1_t is 16 bytes");

#define NVML_VALUE_NOT_AVAILABLE (~0ULL)
#define MIB (1024ULL * 1024ULL)
#define MAX_GPUS 16
#define MAX_PROCS 512
#define NO_INSTANCE 0xFFFFFFFFu

struct fake_proc {
  unsigned int gpu;
  unsigned int pid;
  unsigned long long used;
};

static int initialized;
static unsigned int gpu_count;
static struct nvmlDevice_st devices[MAX_GPUS];
static struct fake_proc compute_procs[MAX_PROCS];
static unsigned int compute_count;
static struct fake_proc graphics_procs[MAX_PROCS];
static unsigned int graphics_count;
static char not_supported[1024];
static char failing[1024];

/* True when `list` (comma separated) holds `item`. */
static int list_has(const char *list, const char *item) {
  size_t n = strlen(item);
  const char *p = list;
  while (p && *p) {
    const char *end = strchr(p, ',');
    size_t len = end ? (size_t)(end - p) : strlen(p);
    if (len == n && strncmp(p, item, n) == 0) return 1;
    p = end ? end + 1 : NULL;
  }
  return 0;
}

static int is_lost(unsigned int gpu) {
  char item[16];
  snprintf(item, sizeof item, "%u", gpu);
  return list_has(getenv("FAKE_NVML_LOST"), item);
}

static int field_listed(const char *list, const char *field, unsigned int gpu) {
  char item[64];
  snprintf(item, sizeof item, "%s@%u", field, gpu);
  return list_has(list, item);
}

static int is_not_supported(const char *field, unsigned int gpu) {
  return field_listed(not_supported, field, gpu);
}

static void parse_procs(const char *spec, struct fake_proc *out, unsigned int *count) {
  *count = 0;
  const char *p = spec;
  while (p && *p && *count < MAX_PROCS) {
    unsigned int gpu, pid;
    char mib[32] = {0};
    if (sscanf(p, "%u:%u:%31[^,]", &gpu, &pid, mib) == 3) {
      out[*count].gpu = gpu;
      out[*count].pid = pid;
      out[*count].used = strcmp(mib, "na") == 0 ? NVML_VALUE_NOT_AVAILABLE
                                                : strtoull(mib, NULL, 10) * MIB;
      (*count)++;
    }
    const char *end = strchr(p, ',');
    p = end ? end + 1 : NULL;
  }
}

nvmlReturn_t nvmlInit_v2(void) {
  const char *init_error = getenv("FAKE_NVML_INIT_ERROR");
  if (init_error && *init_error) return (nvmlReturn_t)atoi(init_error);

  const char *gpus = getenv("FAKE_NVML_GPUS");
  gpu_count = gpus && *gpus ? (unsigned int)atoi(gpus) : 2;
  if (gpu_count > MAX_GPUS) gpu_count = MAX_GPUS;
  for (unsigned int i = 0; i < gpu_count; i++) devices[i].index = i;

  const char *ns = getenv("FAKE_NVML_NOT_SUPPORTED");
  snprintf(not_supported, sizeof not_supported, "%s", ns ? ns : "");
  const char *fl = getenv("FAKE_NVML_FAILING");
  snprintf(failing, sizeof failing, "%s", fl ? fl : "");

  parse_procs(getenv("FAKE_NVML_COMPUTE_PROCS"), compute_procs, &compute_count);
  parse_procs(getenv("FAKE_NVML_GRAPHICS_PROCS"), graphics_procs, &graphics_count);

  const char *many = getenv("FAKE_NVML_MANY_PROCS");
  unsigned int many_gpu, many_count;
  if (many && sscanf(many, "%u:%u", &many_gpu, &many_count) == 2) {
    for (unsigned int k = 0; k < many_count && compute_count < MAX_PROCS; k++) {
      compute_procs[compute_count].gpu = many_gpu;
      compute_procs[compute_count].pid = 100000 + k;
      compute_procs[compute_count].used = (k + 1) * MIB;
      compute_count++;
    }
  }

  initialized = 1;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlShutdown(void) {
  if (!initialized) return NVML_ERROR_UNINITIALIZED;
  initialized = 0;
  return NVML_SUCCESS;
}

const char *nvmlErrorString(nvmlReturn_t result) {
  switch (result) {
    case NVML_SUCCESS: return "Success";
    case NVML_ERROR_UNINITIALIZED: return "Uninitialized";
    case NVML_ERROR_INVALID_ARGUMENT: return "Invalid Argument";
    case NVML_ERROR_NOT_SUPPORTED: return "Not Supported";
    case NVML_ERROR_INSUFFICIENT_SIZE: return "Insufficient Size";
    case NVML_ERROR_DRIVER_NOT_LOADED: return "Driver Not Loaded";
    case NVML_ERROR_GPU_IS_LOST: return "GPU is lost";
    default: return "Unknown Error";
  }
}

nvmlReturn_t nvmlSystemGetDriverVersion(char *version, unsigned int length) {
  if (!initialized) return NVML_ERROR_UNINITIALIZED;
  if (!version) return NVML_ERROR_INVALID_ARGUMENT;
  if (is_not_supported("driver", 0)) return NVML_ERROR_NOT_SUPPORTED;
  const char *v = "550.54.15";
  if (length < strlen(v) + 1) return NVML_ERROR_INSUFFICIENT_SIZE;
  strcpy(version, v);
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *deviceCount) {
  if (!initialized) return NVML_ERROR_UNINITIALIZED;
  if (!deviceCount) return NVML_ERROR_INVALID_ARGUMENT;
  *deviceCount = gpu_count;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *device) {
  if (!initialized) return NVML_ERROR_UNINITIALIZED;
  if (index >= gpu_count || !device) return NVML_ERROR_INVALID_ARGUMENT;
  *device = &devices[index];
  return NVML_SUCCESS;
}

/* Common checks of every device query; stores the GPU's index in *gpu. */
static nvmlReturn_t check_device(nvmlDevice_t device, const char *field, const void *out,
                                 unsigned int *gpu) {
  if (!initialized) return NVML_ERROR_UNINITIALIZED;
  if (device < &devices[0] || device >= &devices[gpu_count]) return NVML_ERROR_INVALID_ARGUMENT;
  if (!out) return NVML_ERROR_INVALID_ARGUMENT;
  *gpu = device->index;
  if (is_lost(*gpu)) return NVML_ERROR_GPU_IS_LOST;
  if (is_not_supported(field, *gpu)) return NVML_ERROR_NOT_SUPPORTED;
  if (field_listed(failing, field, *gpu)) return NVML_ERROR_UNKNOWN;
  return NVML_SUCCESS;
}

static nvmlReturn_t copy_string(char *dst, unsigned int length, const char *src) {
  if (length < strlen(src) + 1) return NVML_ERROR_INSUFFICIENT_SIZE;
  strcpy(dst, src);
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char *name, unsigned int length) {
  unsigned int gpu;
  nvmlReturn_t rc = check_device(device, "name", name, &gpu);
  if (rc != NVML_SUCCESS) return rc;
  char value[64];
  snprintf(value, sizeof value, "Stand-in GPU %u", gpu);
  return copy_string(name, length, value);
}

nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char *uuid, unsigned int length) {
  unsigned int gpu;
  nvmlReturn_t rc = check_device(device, "uuid", uuid, &gpu);
  if (rc != NVML_SUCCESS) return rc;
  char value[96];
  snprintf(value, sizeof value, "GPU-5eed0000-0000-4000-8000-%012u", gpu);
  return copy_string(uuid, length, value);
}

/* total 81559 MiB (an H100 80GB), used (1024 * (i + 1) + 7) MiB, free the rest. */
nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t *memory) {
  unsigned int gpu;
  nvmlReturn_t rc = check_device(device, "memory", memory, &gpu);
  if (rc != NVML_SUCCESS) return rc;
  memory->total = 81559ULL * MIB;
  memory->used = (1024ULL * (gpu + 1) + 7) * MIB;
  memory->free = memory->total - memory->used;
  return NVML_SUCCESS;
}

/* gpu 20 + 10 i %, memory 5 + i %. */
nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t device, nvmlUtilization_t *utilization) {
  unsigned int gpu;
  nvmlReturn_t rc = check_device(device, "util", utilization, &gpu);
  if (rc != NVML_SUCCESS) return rc;
  utilization->gpu = 20 + 10 * gpu;
  utilization->memory = 5 + gpu;
  return NVML_SUCCESS;
}

/* 40 + i degrees C, for NVML_TEMPERATURE_GPU only. */
nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t device, nvmlTemperatureSensors_t sensorType,
                                      unsigned int *temp) {
  unsigned int gpu;
  nvmlReturn_t rc = check_device(device, "temp", temp, &gpu);
  if (rc != NVML_SUCCESS) return rc;
  if (sensorType != NVML_TEMPERATURE_GPU) return NVML_ERROR_INVALID_ARGUMENT;
  *temp = 40 + gpu;
  return NVML_SUCCESS;
}

/* 150000 + 1500 i milliwatts. */
nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t device, unsigned int *power) {
  unsigned int gpu;
  nvmlReturn_t rc = check_device(device, "power", power, &gpu);
  if (rc != NVML_SUCCESS) return rc;
  *power = 150000 + 1500 * gpu;
  return NVML_SUCCESS;
}

/*
 * NVML's sizing protocol: when *infoCount is smaller than the number of processes, write
 * that number to *infoCount and answer NVML_ERROR_INSUFFICIENT_SIZE; otherwise fill
 * `infos` and set *infoCount to the number written.
 */
static nvmlReturn_t list_processes(nvmlDevice_t device, unsigned int *infoCount, void *infos,
                                   const struct fake_proc *procs, unsigned int proc_count,
                                   int v1_layout) {
  unsigned int gpu;
  nvmlReturn_t rc = check_device(device, "processes", infoCount, &gpu);
  if (rc != NVML_SUCCESS) return rc;
  unsigned int matching = 0;
  for (unsigned int k = 0; k < proc_count; k++) matching += procs[k].gpu == gpu;
  if (*infoCount < matching) {
    *infoCount = matching;
    return NVML_ERROR_INSUFFICIENT_SIZE;
  }
  if (matching > 0 && !infos) return NVML_ERROR_INVALID_ARGUMENT;
  unsigned int written = 0;
  for (unsigned int k = 0; k < proc_count; k++) {
    if (procs[k].gpu != gpu) continue;
    if (v1_layout) {
      nvmlProcessInfo_v1_t *info = (nvmlProcessInfo_v1_t *)infos + written;
      info->pid = procs[k].pid;
      info->usedGpuMemory = procs[k].used;
    } else {
      nvmlProcessInfo_t *info = (nvmlProcessInfo_t *)infos + written;
      info->pid = procs[k].pid;
      info->usedGpuMemory = procs[k].used;
      info->gpuInstanceId = NO_INSTANCE;
      info->computeInstanceId = NO_INSTANCE;
    }
    written++;
  }
  *infoCount = written;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetComputeRunningProcesses(nvmlDevice_t device, unsigned int *infoCount,
                                                  nvmlProcessInfo_v1_t *infos) {
  return list_processes(device, infoCount, infos, compute_procs, compute_count, 1);
}

#ifndef FAKE_NVML_V1_ONLY
nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t device, unsigned int *infoCount,
                                                     nvmlProcessInfo_t *infos) {
  return list_processes(device, infoCount, infos, compute_procs, compute_count, 0);
}

nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses_v3(nvmlDevice_t device,
                                                      unsigned int *infoCount,
                                                      nvmlProcessInfo_t *infos) {
  return list_processes(device, infoCount, infos, graphics_procs, graphics_count, 0);
}
#endif
