import { strictEqual } from "node:assert/strict";
import { crc32c, maskCrc32c } from "./crc32c.ts";

const ascii = (text: string) => new TextEncoder().encode(text);

// Bit-at-a-time CRC32C: slow, but obviously the definition.
function referenceCrc32c(bytes: Uint8Array): number {
  let crc = 0xffffffff;
  for (const b of bytes) {
    crc ^= b;
    for (let k = 0; k < 8; k++) crc = crc & 1 ? (crc >>> 1) ^ 0x82f63b78 : crc >>> 1;
  }
  return (crc ^ 0xffffffff) >>> 0;
}

Deno.test("crc32c() matches the known answers (check value and RFC 3720 B.4)", () => {
  strictEqual(crc32c(ascii("123456789")), 0xe3069283);
  strictEqual(crc32c(new Uint8Array(0)), 0);
  strictEqual(crc32c(new Uint8Array(32)), 0x8a9136aa);
  strictEqual(crc32c(new Uint8Array(32).fill(0xff)), 0x62a8ab43);
  strictEqual(crc32c(Uint8Array.from({ length: 32 }, (_, i) => i)), 0x46dd794e);
  strictEqual(crc32c(Uint8Array.from({ length: 32 }, (_, i) => 31 - i)), 0x113fdb5c);
});

Deno.test("crc32c() of a range equals the bitwise reference at every alignment and length", () => {
  const bytes = Uint8Array.from({ length: 300 }, (_, i) => (i * 151 + 7) & 0xff);
  for (let start = 0; start < 9; start++) {
    for (const end of [start, start + 1, start + 7, start + 8, start + 9, 100, 300]) {
      strictEqual(
        crc32c(bytes, start, end),
        referenceCrc32c(bytes.subarray(start, end)),
        `range [${start}, ${end})`,
      );
    }
  }
});

Deno.test("maskCrc32c() rotates right by 15 and adds TFRecord's delta", () => {
  strictEqual(maskCrc32c(0), 0xa282ead8);
  strictEqual(maskCrc32c(0x8000), (1 + 0xa282ead8) >>> 0);
  strictEqual(maskCrc32c(1), ((1 << 17) + 0xa282ead8) >>> 0);
  strictEqual(maskCrc32c(0xffffffff), 0xa282ead7);
});
