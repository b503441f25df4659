import assert from "node:assert/strict";
import {
  bytesToMib,
  decodeCString,
  decodeMemory,
  decodeProcessInfos,
  decodeUtilization,
  NVML_VALUE_NOT_AVAILABLE,
  PROCESS_INFO_V1_LAYOUT,
  PROCESS_INFO_V2_LAYOUT,
} from "./nvml_structs.ts";

const MIB = 1024n * 1024n;

Deno.test("decodeProcessInfos() reads pid at 0 and usedGpuMemory at 8 of 24-byte entries", () => {
  const buf = new Uint8Array(3 * 24);
  const dv = new DataView(buf.buffer);
  const entries: [number, bigint][] = [[4242, 512n * MIB], [7, NVML_VALUE_NOT_AVAILABLE], [9, 0n]];
  entries.forEach(([pid, used], i) => {
    dv.setUint32(i * 24, pid, true);
    dv.setUint32(i * 24 + 4, 0xdeadbeef, true); // padding must be ignored
    dv.setBigUint64(i * 24 + 8, used, true);
    dv.setUint32(i * 24 + 16, 0xffffffff, true); // gpuInstanceId
    dv.setUint32(i * 24 + 20, 0xffffffff, true); // computeInstanceId
  });
  assert.deepEqual(decodeProcessInfos(buf, 3, PROCESS_INFO_V2_LAYOUT), [
    { pid: 4242, used_mb: 512 },
    { pid: 7, used_mb: null },
    { pid: 9, used_mb: 0 },
  ]);
  assert.equal(decodeProcessInfos(buf, 2, PROCESS_INFO_V2_LAYOUT).length, 2, "count bounds it");
  assert.equal(decodeProcessInfos(buf, 50, PROCESS_INFO_V2_LAYOUT).length, 3, "buffer bounds it");
});

Deno.test("decodeProcessInfos() reads 16-byte v1 entries", () => {
  const buf = new Uint8Array(2 * 16);
  const dv = new DataView(buf.buffer);
  dv.setUint32(0, 11, true);
  dv.setBigUint64(8, 3n * MIB, true);
  dv.setUint32(16, 12, true);
  dv.setBigUint64(24, NVML_VALUE_NOT_AVAILABLE, true);
  assert.deepEqual(decodeProcessInfos(buf, 2, PROCESS_INFO_V1_LAYOUT), [
    { pid: 11, used_mb: 3 },
    { pid: 12, used_mb: null },
  ]);
});

Deno.test("decodeMemory() takes total at 0 and used at 16, skipping free at 8", () => {
  const buf = new Uint8Array(24);
  const dv = new DataView(buf.buffer);
  dv.setBigUint64(0, 81559n * MIB, true);
  dv.setBigUint64(8, 80000n * MIB, true);
  dv.setBigUint64(16, 1559n * MIB, true);
  assert.deepEqual(decodeMemory(buf), { total_mb: 81559, used_mb: 1559 });
});

Deno.test("decodeUtilization() reads gpu then memory percent", () => {
  const buf = new Uint8Array(8);
  new DataView(buf.buffer).setUint32(0, 97, true);
  new DataView(buf.buffer).setUint32(4, 12, true);
  assert.deepEqual(decodeUtilization(buf), { gpu: 97, memory: 12 });
});

Deno.test("decodeCString() stops at the first NUL and tolerates none", () => {
  const text = new TextEncoder().encode("NVIDIA H200\0garbage");
  assert.equal(decodeCString(text), "NVIDIA H200");
  assert.equal(decodeCString(new TextEncoder().encode("no terminator")), "no terminator");
  assert.equal(decodeCString(new Uint8Array(8)), "");
});

Deno.test("bytesToMib() rounds down like nvidia-smi", () => {
  assert.equal(bytesToMib(MIB * 2n - 1n), 1);
  assert.equal(bytesToMib(150_754n * MIB + 5n), 150_754);
});
