import assert from "node:assert/strict";
import { LineSplitter, MAX_LINE_BYTES } from "./line_splitter.ts";

const bytes = (s: string) => new TextEncoder().encode(s);

function split(chunks: string[], final = true): string[] {
  const splitter = new LineSplitter();
  const out = chunks.flatMap((c) => splitter.push(bytes(c)));
  return final ? [...out, ...splitter.flush()] : out;
}

Deno.test("LineSplitter ends lines at \\n, \\r\\n and a lone \\r", () => {
  assert.deepEqual(split(["a\nb\r\nc\rd\n"]), ["a", "b", "c", "d"]);
});

Deno.test("LineSplitter keeps empty \\n lines but drops empty \\r pieces", () => {
  assert.deepEqual(split(["a\n\n\r\r10%\r20%\n"]), ["a", "", "10%", "20%"]);
});

Deno.test("LineSplitter treats \\r\\n split across chunks as one line end", () => {
  assert.deepEqual(split(["one\r", "\ntwo\r", "three\n"]), ["one", "two", "three"]);
});

Deno.test("LineSplitter holds an unfinished line until more bytes or the end", () => {
  const splitter = new LineSplitter();
  assert.deepEqual(splitter.push(bytes("par")), []);
  assert.deepEqual(splitter.push(bytes("tial\nrest")), ["partial"]);
  assert.deepEqual(splitter.flush(), ["rest"]);
});

Deno.test("LineSplitter offset points at the first unfinished line, and resumes from it", () => {
  const splitter = new LineSplitter(100);
  splitter.push(bytes("ab\ncd\r"));
  assert.equal(splitter.offset, 103);
  assert.equal(splitter.position, 106);
  const again = new LineSplitter(splitter.offset);
  assert.deepEqual(again.push(bytes("cd\r\nef\n")), ["cd", "ef"]);
});

Deno.test("LineSplitter cuts long lines at MAX_LINE_BYTES and says how much was cut", () => {
  const long = "y".repeat(MAX_LINE_BYTES + 10);
  assert.deepEqual(split([long.slice(0, 7000), long.slice(7000) + "\nnext\n"]), [
    `${"y".repeat(MAX_LINE_BYTES)}… [cut 10 bytes]`,
    "next",
  ]);
});

Deno.test("LineSplitter does not split a UTF-8 character at the cut", () => {
  const line = "a".repeat(MAX_LINE_BYTES - 1) + "é" + "zz"; // é is 2 bytes, straddling the cut
  const [text] = split([line + "\n"]);
  assert.equal(text, `${"a".repeat(MAX_LINE_BYTES - 1)}… [cut 4 bytes]`);
});

Deno.test("LineSplitter decodes invalid UTF-8 with replacement characters", () => {
  const splitter = new LineSplitter();
  const lines = splitter.push(new Uint8Array([0x61, 0xff, 0xc3, 0x28, 0x0a]));
  assert.deepEqual(lines, ["a\uFFFD\uFFFD("]);
});
