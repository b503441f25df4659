import assert from "node:assert/strict";
import { isDeviceFatal, nvmlCodeName } from "./nvml_return_codes.ts";

Deno.test("nvmlCodeName() names NVML codes without their prefix", () => {
  assert.equal(nvmlCodeName(0), "SUCCESS");
  assert.equal(nvmlCodeName(3), "NOT_SUPPORTED");
  assert.equal(nvmlCodeName(7), "INSUFFICIENT_SIZE");
  assert.equal(nvmlCodeName(15), "GPU_IS_LOST");
  assert.equal(nvmlCodeName(999), "UNKNOWN");
  assert.equal(nvmlCodeName(4711), "CODE_4711");
});

Deno.test("isDeviceFatal() is true only for codes that make the whole GPU unreadable", () => {
  assert.equal(isDeviceFatal(15), true);
  assert.equal(isDeviceFatal(16), true);
  for (const code of [0, 3, 4, 7, 999]) assert.equal(isDeviceFatal(code), false, `code ${code}`);
});
