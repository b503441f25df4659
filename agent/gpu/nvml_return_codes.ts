/**
 * `nvmlReturn_t` values, as defined in nvml.h.
 */

/** The call succeeded. */
export const NVML_SUCCESS = 0;
/** The device does not support the query; the field is reported as null. */
export const NVML_ERROR_NOT_SUPPORTED = 3;
/** An output buffer was too small; the needed size was written back. */
export const NVML_ERROR_INSUFFICIENT_SIZE = 7;
/** The GPU fell off the bus or otherwise became inaccessible. */
export const NVML_ERROR_GPU_IS_LOST = 15;
/** The GPU needs a reset before it can be used again. */
export const NVML_ERROR_RESET_REQUIRED = 16;
/** An internal driver error. */
export const NVML_ERROR_UNKNOWN = 999;

const NAMES: Readonly<Record<number, string>> = {
  0: "SUCCESS",
  1: "UNINITIALIZED",
  2: "INVALID_ARGUMENT",
  3: "NOT_SUPPORTED",
  4: "NO_PERMISSION",
  5: "ALREADY_INITIALIZED",
  6: "NOT_FOUND",
  7: "INSUFFICIENT_SIZE",
  8: "INSUFFICIENT_POWER",
  9: "DRIVER_NOT_LOADED",
  10: "TIMEOUT",
  11: "IRQ_ISSUE",
  12: "LIBRARY_NOT_FOUND",
  13: "FUNCTION_NOT_FOUND",
  14: "CORRUPTED_INFOROM",
  15: "GPU_IS_LOST",
  16: "RESET_REQUIRED",
  17: "OPERATING_SYSTEM",
  18: "LIB_RM_VERSION_MISMATCH",
  19: "IN_USE",
  20: "MEMORY",
  21: "NO_DATA",
  22: "VGPU_ECC_NOT_SUPPORTED",
  23: "INSUFFICIENT_RESOURCES",
  24: "FREQ_NOT_SUPPORTED",
  25: "ARGUMENT_VERSION_MISMATCH",
  26: "DEPRECATED",
  27: "NOT_READY",
  28: "GPU_NOT_FOUND",
  29: "INVALID_STATE",
  30: "RESET_TYPE_NOT_SUPPORTED",
  999: "UNKNOWN",
};

/** The name of an NVML return code without its `NVML_ERROR_` prefix, e.g. "GPU_IS_LOST". */
export function nvmlCodeName(code: number): string {
  return NAMES[code] ?? `CODE_${code}`;
}

/**
 * Whether a code means the whole GPU is unusable (rather than one query failing), so the
 * rest of that GPU's queries are skipped for this sample.
 */
export function isDeviceFatal(code: number): boolean {
  return code === NVML_ERROR_GPU_IS_LOST || code === NVML_ERROR_RESET_REQUIRED;
}
