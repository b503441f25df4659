/// <reference lib="dom" />
/**
 * The chart budgets, in a real Chromium against a real server: 20 runs × 2,000 points drawn,
 * a smoothing change re-drawn, and the Experiment workspace with 8 panels of 10 runs
 * interactive (every panel on the first screen drawn; those below draw when scrolled near,
 * measured as a row of their own). Each measure is taken in the page (`performance.now()`),
 * next to a baseline from the same page: the same points stroked on a bare canvas, and the
 * moment the page's HTML had arrived. The workspace row also says what its first screen cost:
 * the chart.js elements made (a point or line each) and the page's size.
 */
import type { Page } from "playwright-core";
import { startConsoleRig } from "../tests/_browser.ts";
import type { Report } from "./report.ts";

const POINTS = 2000;

/** Registers a run in `experiment` and logs `keys` × POINTS points through the SDK API. */
async function seedRun(
  // deno-lint-ignore no-explicit-any -- API answers as JSON
  call: (m: string, p: string, b?: unknown) => Promise<{ status: number; json: any }>,
  experiment: string,
  i: number,
  keys: string[],
): Promise<string> {
  const run = await call("POST", "/api/sdk/runs", {
    project: "bench",
    experiment,
    name: `lr-${i}`,
    config: { lr: 0.001 * (i + 1), batch_size: 64 },
  });
  if (run.status >= 300) throw new Error(`seeding a run: ${JSON.stringify(run.json)}`);
  for (let from = 0; from < POINTS; from += 1000) {
    const points = keys.flatMap((key, k) =>
      Array.from({ length: 1000 }, (_, j) => {
        const step = from + j;
        return {
          key,
          step,
          value: (1 + k) * Math.exp(-step / (300 + 40 * i)) + 0.05 * Math.sin(step * 0.7 + i),
          wall_time: 1_700_000_000 + step * 0.5,
        };
      })
    );
    const res = await call("POST", `/api/sdk/runs/${run.json.id}/log`, { points });
    if (res.status >= 300) throw new Error(`seeding points: ${JSON.stringify(res.json)}`);
  }
  await call("POST", `/api/sdk/runs/${run.json.id}/log`, { status: "SUCCEEDED" });
  return run.json.id;
}

/**
 * Waits until every chart of the page (with `onScreen`, every chart on the screen, if any)
 * holds data for `runs` runs each; ms since navigation.
 */
async function drawnAt(
  page: Page,
  charts: number,
  runs: number,
  onScreen = false,
): Promise<number> {
  const handle = await page.waitForFunction(
    ({ charts, runs, onScreen }) => {
      // deno-lint-ignore no-explicit-any -- the page's chart.js, exposed by the panel
      const C = (globalThis as any).Chart;
      const all = [...document.querySelectorAll(".chart-panel canvas")];
      if (!C || all.length < charts) return false;
      const canvases = onScreen
        ? all.filter((c) => {
          const r = c.getBoundingClientRect();
          return r.bottom > 0 && r.top < innerHeight;
        })
        : all;
      if (!canvases.length) return onScreen ? performance.now() : false;
      const ready = canvases.every((c) => {
        const ch = C.getChart(c);
        if (!ch) return false;
        // deno-lint-ignore no-explicit-any
        const withData = ch.data.datasets.filter((d: any) => d.data.length > 0);
        return new Set(withData.map((d: { runId?: string }) => d.runId)).size >= runs;
      });
      return ready ? performance.now() : false;
    },
    { charts, runs, onScreen },
    { timeout: 120_000, polling: "raf" },
  );
  return await handle.jsonValue() as number;
}

export async function benchCharts(report: Report): Promise<void> {
  const rig = await startConsoleRig();
  try {
    const call = rig.call as Parameters<typeof seedRun>[0];
    const twenty: string[] = [];
    for (let i = 0; i < 20; i++) twenty.push(await seedRun(call, "draw", i, ["train/loss"]));
    const keys = Array.from({ length: 8 }, (_, k) => k === 0 ? "train/loss" : `eval/m${k}`);
    const ten: string[] = [];
    for (let i = 0; i < 10; i++) ten.push(await seedRun(call, "workspace", i, keys));
    const { page, context } = await rig.context(rig.adminToken);
    try {
      await page.setViewportSize({ width: 1280, height: 900 });
      // 20 runs × 2,000 points in one panel: a full redraw of what the server sent.
      await page.goto(`${rig.url}/compare?runs=${twenty.join(",")}&metric=train/loss`);
      await page.waitForSelector("html[data-islands=hydrated]");
      await drawnAt(page, 1, 20);
      const draw = await page.evaluate(() => {
        // deno-lint-ignore no-explicit-any
        const ch = (globalThis as any).Chart.getChart(
          document.querySelector(".chart-panel canvas"),
        );
        // The runs' own lines (not the faded raw line, the min/max band or the NaN marks).
        const points = ch.data.datasets.filter((d: { role?: string }) => d.role === "line")
          .reduce((n: number, d: { data: unknown[] }) => n + d.data.length, 0);
        const times: number[] = [];
        for (let i = 0; i < 11; i++) {
          const t = performance.now();
          // New arrays, as new data arrives: chart.js parses and lays out again, then draws.
          for (const d of ch.data.datasets) d.data = d.data.slice();
          ch.update("none");
          times.push(performance.now() - t);
        }
        // The same points stroked on a bare canvas of the same size: the floor.
        const canvas = document.createElement("canvas");
        canvas.width = ch.canvas.width;
        canvas.height = ch.canvas.height;
        const g = canvas.getContext("2d")!;
        const bare: number[] = [];
        for (let i = 0; i < 11; i++) {
          const t = performance.now();
          g.clearRect(0, 0, canvas.width, canvas.height);
          for (const d of ch.data.datasets) {
            g.beginPath();
            d.data.forEach((p: { x: number; y: number | null }, j: number) => {
              const x = (j / d.data.length) * canvas.width;
              const y = canvas.height * (1 - (p.y ?? 0) / 3);
              if (j === 0) g.moveTo(x, y);
              else g.lineTo(x, y);
            });
            g.stroke();
          }
          g.getImageData(0, 0, 1, 1); // waits for the strokes
          bare.push(performance.now() - t);
        }
        const mid = (xs: number[]) => xs.sort((a, b) => a - b)[xs.length >> 1];
        return { ms: mid(times), bare: mid(bare), points };
      });
      report({
        name: `chart: 20 runs × ${POINTS.toLocaleString("en")} points drawn (Chromium)`,
        value: {
          value: draw.ms,
          unit: "ms",
          text: `${draw.ms.toFixed(0)} ms median of 11 (${
            draw.points.toLocaleString("en")
          } points drawn)`,
        },
        baseline: {
          value: draw.bare,
          unit: "ms",
          text: `the same points stroked on a bare canvas ${draw.bare.toFixed(0)} ms`,
        },
        target: { op: "<=", value: 100 },
      });

      // A smoothing change, from the slider's input to the chart drawn again.
      const smooth = await page.evaluate(async () => {
        const slider = document.querySelector<HTMLInputElement>("input[type=range]")!;
        // deno-lint-ignore no-explicit-any
        const ch = (globalThis as any).Chart.getChart(
          document.querySelector(".chart-panel canvas"),
        );
        const draw = ch.draw.bind(ch);
        let drawn: (() => void) | null = null;
        ch.draw = () => {
          draw();
          drawn?.();
        };
        const times: number[] = [];
        for (let i = 0; i < 11; i++) {
          const done = new Promise<void>((r) => drawn = r);
          const t = performance.now();
          slider.value = String(i % 2 ? 0.6 : 0.9);
          slider.dispatchEvent(new Event("input", { bubbles: true }));
          await done;
          times.push(performance.now() - t);
        }
        ch.draw = draw;
        return times.sort((a, b) => a - b)[5];
      });
      report({
        name: `chart: a smoothing change re-drawn, 20 runs × ${POINTS.toLocaleString("en")} points`,
        value: { value: smooth, unit: "ms", text: `${smooth.toFixed(0)} ms median of 11` },
        baseline: {
          value: draw.ms,
          unit: "ms",
          text: `a full redraw of the same chart ${draw.ms.toFixed(0)} ms`,
        },
        target: { op: "<=", value: 50 },
      });

      // The workspace: 8 panels × 10 runs, from navigation to every panel on the screen drawn;
      // then each panel below, from scrolled to drawn.
      const exp = (await rig.call("GET", "/api/experiments?project=bench")).json.items
        .find((e: { name: string }) => e.name === "workspace");
      const view = new URLSearchParams({ metrics: keys.join(","), runs: ten.join(",") });
      const times: number[] = [];
      const html: number[] = [];
      const below: number[] = [];
      /** chart.js elements (points and lines) made by the time the first screen is drawn. */
      const elements: number[] = [];
      const pageBytes: number[] = [];
      let onFirst = 0;
      for (let i = 0; i < 3; i++) {
        await page.goto(`${rig.url}/experiments/${exp.id}?${view}`);
        times.push(await drawnAt(page, 8, 10, true));
        html.push(
          await page.evaluate(() =>
            (performance.getEntriesByType("navigation")[0] as PerformanceNavigationTiming)
              .responseEnd
          ),
        );
        const first = await page.evaluate(() => {
          // deno-lint-ignore no-explicit-any -- the page's chart.js, exposed by the panel
          const C = (globalThis as any).Chart;
          let elements = 0;
          for (const c of document.querySelectorAll(".chart-panel canvas")) {
            const ch = C.getChart(c);
            if (!ch) continue;
            ch.data.datasets.forEach((_: unknown, i: number) => {
              const meta = ch.getDatasetMeta(i);
              elements += meta.data.length + (meta.dataset ? 1 : 0);
            });
          }
          const nav = performance.getEntriesByType("navigation")[0] as PerformanceNavigationTiming;
          return {
            panels: [...document.querySelectorAll(".chart-panel")].filter((el) =>
              el.getBoundingClientRect().top < innerHeight
            ).length,
            elements,
            bytes: nav.decodedBodySize,
          };
        });
        onFirst = first.panels;
        elements.push(first.elements);
        pageBytes.push(first.bytes);
        // Scrolled down a screen at a time: from the scroll to the panels it brought drawn.
        for (;;) {
          const t = await page.evaluate(() => {
            const y = scrollY;
            scrollBy(0, innerHeight);
            return scrollY === y ? null : performance.now();
          });
          if (t === null) break;
          const drawn = await drawnAt(page, 8, 10, true);
          below.push(drawn - t);
        }
        await drawnAt(page, 8, 10);
      }
      const mid = (xs: number[]) => xs.sort((a, b) => a - b)[xs.length >> 1];
      report({
        name: "chart: Experiment workspace, 8 panels × 10 runs, interactive (Chromium)",
        value: {
          value: mid(times),
          unit: "ms",
          text: `${mid(times).toFixed(0)} ms median of 3 (the ${onFirst} panels on a 1280 × 900 ` +
            `screen drawn: ${mid(elements).toLocaleString("en")} chart.js elements; a ${
              (mid(pageBytes) / 1024).toFixed(0)
            } KiB page)`,
        },
        baseline: {
          value: mid(html),
          unit: "ms",
          text: `its HTML had arrived at ${mid(html).toFixed(0)} ms`,
        },
        target: { op: "<=", value: 1000 },
      });
      report({
        name: "chart: Experiment workspace, the panels below drawn once scrolled to (Chromium)",
        value: {
          value: mid(below),
          unit: "ms",
          text: `${mid(below).toFixed(0)} ms median of ${below.length} screens scrolled`,
        },
        baseline: {
          value: mid(times) - mid(html),
          unit: "ms",
          text: `the first screen drawn ${(mid(times) - mid(html)).toFixed(0)} ms after its HTML`,
        },
        target: { op: "<=", value: 1000 },
      });
    } finally {
      await context.close();
    }
  } finally {
    await rig.close();
  }
}
