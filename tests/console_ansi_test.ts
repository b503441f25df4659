/** ANSI colour codes in log lines become styled plain-text segments, never markup. */
import { assertEquals } from "./assert.ts";
import { ansiClass, ansiSegments, stripAnsi } from "../islands/_ansi.tsx";
import { AnsiLine } from "../islands/_ansi.tsx";
import { renderToString } from "preact-render-to-string";
import { h } from "preact";

const E = "\x1b";

const cases: [string, string, ReturnType<typeof ansiSegments>][] = [
  ["plain text stays one plain segment", "loss 0.25", [{ text: "loss 0.25", style: {} }]],
  ["a foreground colour and its reset", `${E}[31merror${E}[0m done`, [
    { text: "error", style: { fg: 1 } },
    { text: " done", style: {} },
  ]],
  ["bold and colour in one sequence, then bold off", `${E}[1;32mOK${E}[22m still green`, [
    { text: "OK", style: { bold: true, fg: 2 } },
    { text: " still green", style: { fg: 2 } },
  ]],
  ["bright colours and backgrounds", `${E}[93;44mwarn${E}[39;49m`, [
    { text: "warn", style: { fg: 11, bg: 4 } },
  ]],
  ["ESC[m is a reset", `${E}[4mu${E}[mplain`, [
    { text: "u", style: { underline: true } },
    { text: "plain", style: {} },
  ]],
  ["256 colours: the first 16 map, the rest leave text plain", `${E}[38;5;9ma${E}[38;5;200mb`, [
    { text: "a", style: { fg: 9 } },
    { text: "b", style: {} },
  ]],
  ["true colour is dropped with its parameters", `${E}[38;2;255;0;0;1mhot`, [
    { text: "hot", style: { bold: true } },
  ]],
  ["cursor moves, erase and private modes are stripped", `${E}[2K${E}[1Ga${E}[?25lb`, [
    { text: "ab", style: {} },
  ]],
  ["OSC titles and hyperlinks are stripped", `${E}]0;title\x07x${E}]8;;http://e${E}\\y`, [
    { text: "xy", style: {} },
  ]],
  ["a cut-off escape at the end is dropped", `done${E}[3`, [{ text: "done", style: {} }]],
  ["two-character escapes and control characters are dropped", `a${E}7b\x00c\x07d${E}`, [
    { text: "abcd", style: {} },
  ]],
  ["carriage returns keep what a terminal shows", "10%\r 50%\r100%", [
    { text: "100%", style: {} },
  ]],
  ["a trailing carriage return keeps the last text", "epoch 1\r", [
    { text: "epoch 1", style: {} },
  ]],
  ["markup stays text", `${E}[31m<img src=x onerror=alert(1)>`, [
    { text: "<img src=x onerror=alert(1)>", style: { fg: 1 } },
  ]],
];

for (const [name, line, want] of cases) {
  Deno.test(`ansiSegments(): ${name}`, () => {
    assertEquals(ansiSegments(line), want);
  });
}

Deno.test("stripAnsi() keeps only the text", () => {
  assertEquals(stripAnsi(`${E}[1;31mFAIL${E}[0m: ${E}[2Kdone`), "FAIL: done");
});

Deno.test("ansiClass() names the stylesheet classes of a style", () => {
  assertEquals(ansiClass({ fg: 1, bg: 12, bold: true }), "ansi-fg-1 ansi-bg-12 ansi-bold");
  assertEquals(ansiClass({}), "");
});

Deno.test("AnsiLine renders spans with classes and escapes the text", () => {
  const html = renderToString(h(AnsiLine, { line: `${E}[31m<b>x</b>${E}[0m & y` }));
  assertEquals(html, '<span class="ansi-fg-1">&lt;b>x&lt;/b></span> &amp; y');
});
