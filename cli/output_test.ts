import { assertEquals } from "../tests/assert.ts";
import {
  clean,
  cleanLine,
  colourWanted,
  metric,
  paintStatus,
  progressBar,
  table,
} from "./output.ts";

Deno.test("clean() removes escape sequences and control characters from server text", () => {
  assertEquals(clean("\x1b[31mred\x1b[0m"), "red");
  assertEquals(clean("a\x1b]0;title\x07b"), "ab"); // OSC: a window title
  assertEquals(clean("one\ntwo\rthree\u0007\u009b"), "onetwothree");
  assertEquals(clean("tab\there"), "tab here");
  assertEquals(clean(null), "");
  assertEquals(cleanLine("keeps\ta tab\x1b[2K"), "keeps\ta tab");
});

Deno.test("colour only on a terminal, and never with NO_COLOR", () => {
  assertEquals(colourWanted(true, {}), true);
  assertEquals(colourWanted(false, {}), false);
  assertEquals(colourWanted(true, { NO_COLOR: "1" }), false);
  assertEquals(paintStatus({ color: true }, "FAILED"), "\x1b[31mFAILED\x1b[0m");
  assertEquals(paintStatus({ color: false }, "FAILED"), "FAILED");
});

Deno.test("table() fits the width by cutting flexible columns, widest first", () => {
  const rows = [{ id: "j-1", name: "a-very-long-job-name-indeed", note: "short" }];
  const columns = [
    { header: "ID", cell: (r: typeof rows[0]) => r.id },
    { header: "NAME", cell: (r: typeof rows[0]) => r.name, flex: true },
    { header: "NOTE", cell: (r: typeof rows[0]) => r.note, flex: true },
  ];
  assertEquals(table(rows, columns), [
    "ID   NAME                         NOTE",
    "j-1  a-very-long-job-name-indeed  short",
  ]);
  const fitted = table(rows, columns, 24);
  assertEquals(fitted, ["ID   NAME          NOTE", "j-1  a-very-long…  short"]);
  for (const line of fitted) assertEquals(line.length <= 24, true);
  // Piped (no width): nothing is cut.
  assertEquals(table(rows, columns, undefined)[1].includes("indeed"), true);
});

Deno.test("progressBar() shows the fraction, the step and the total", () => {
  assertEquals(progressBar(50, 100, 40), "[#############............]  50% 50/100");
  assertEquals(progressBar(150, 100, 40).includes("100% 150/100"), true);
});

Deno.test("metric() prints 4 significant digits and NaN as it is", () => {
  assertEquals([metric(0.123456), metric(12), metric("NaN"), metric(null)], [
    "0.1235",
    "12",
    "NaN",
    "",
  ]);
});
