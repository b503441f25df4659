/**
 * The chart panel every training curve in the console is drawn with: one metric of several
 * runs, each in its own colour. It reads exactly (a crosshair and, for each visible run, the
 * smoothed value with the raw one in brackets), smooths with the raw line left faded
 * underneath, zooms by dragging a box (and reads the zoomed range again at full detail),
 * switches its x axis between step, relative and wall time, hides, isolates and highlights
 * runs from its legend, draws each downsampling bucket's extremes as a faint band so no spike
 * disappears (`chart/band.ts`), shows NaN/±Inf points as gaps with a marker, and follows live
 * runs over the page's one metric stream.
 *
 * Data flows one way: the page's series (or one batched `metrics:query`) → the pure shaping in
 * `chart/` → a chart drawn once, then only given new data (`update("none")`).
 *
 * Zoom is the panel's own drag box rather than chartjs-plugin-zoom: the panel already owns the
 * pointer for its crosshair and readout, and a zoom here is a new read of the server, not a
 * rescale of the points already drawn.
 */
import {
  Chart,
  LinearScale,
  LineController,
  LineElement,
  LogarithmicScale,
  PointElement,
} from "chart.js";
import { useEffect, useLayoutEffect, useMemo, useRef, useState } from "preact/hooks";
import { fmtInt, fmtMetric } from "./_format.ts";
import { bandPlugin } from "./chart/band.ts";
import { firstReads, querySeries } from "./chart/read_batch.ts";
import { buildDatasets, drawnCount, type DrawnRun, type PanelDataset } from "./chart/datasets.ts";
import { emphasis, EMPTY_LEGEND, isVisible, type LegendState } from "./chart/legend.ts";
import { livePoints } from "./chart/live_points.ts";
import { linesInside, redrawLines, sameDatasets } from "./chart/redraw_lines.ts";
import type { ApiSeries, ComposedPanelProps } from "./chart/panel_types.ts";
import { type PackedSeries, unpackSeries } from "./chart/packed.ts";
import { PanelHead, PanelLegend, PanelTip, X_LABEL } from "./chart/panel_parts.tsx";
import { type Readout, readout, type ReadoutInput } from "./chart/readout.ts";
import {
  fromApi,
  type LivePoint,
  mergePoints,
  type PointSeries,
  replaceKeepingTail,
  type SeriesFrame,
  type ShapedSeries,
  shapeFrame,
  shapeSeries,
  type XY,
  yExtent,
} from "./chart/series.ts";
import { formatClock, formatRelative, queryRange, type XMode } from "./chart/x_axis.ts";

Chart.register(LineController, LineElement, PointElement, LinearScale, LogarithmicScale);
// The page's chart.js, so `Chart.getChart(canvas)` reads a panel back as drawn (the browser
// tests, or a person in the devtools console).
(globalThis as { Chart?: typeof Chart }).Chart ??= Chart;

/** How often live runs are read again, to repair anything the stream missed. */
const POLL_MS = 5000;
/** The most points per series a query may ask for (the server's own limit). */
const MAX_SERIES_POINTS = 100_000;
/** Points a read asks for per pixel of the panel's width, unless the page says otherwise. */
const DENSITY = 2;
/** `max_points` for a panel `px` wide, `density` points a pixel. */
const wantFor = (px: number, density: number) =>
  Math.min(MAX_SERIES_POINTS, Math.max(200, Math.round(density * px)));
/** A drag shorter than this (pixels) is a click, not a zoom. */
const DRAG_MIN_PX = 5;
/** Pixels of the panel's width a column of the faded raw line and of the band spans. */
const COLUMN_PX = 4;
/** How far below the screen a panel starts reading and drawing, so it is ready when seen. */
const AHEAD_PX = 100;

type SeriesMap = Readonly<Record<string, PointSeries>>;

interface Zoom {
  /** x range in the panel's x mode. */
  range: [number, number];
  /** The range read at full detail; null while the read is on its way. */
  series: SeriesMap | null;
}

function toMap(series: readonly (ApiSeries | PackedSeries)[]): SeriesMap {
  const m: Record<string, PointSeries> = {};
  for (const s of series) m[s.run_id] = "step_deltas" in s ? unpackSeries(s) : fromApi(s);
  return m;
}

/**
 * The page's colours, read once per colour scheme: reading a computed style while the page's
 * DOM is being changed (a panel drawing as the page hydrates) makes the browser recompute the
 * whole page's style, once for every panel.
 */
const colors = new Map<string, string>();
function cssVar(name: string): string {
  let c = colors.get(name);
  if (c === undefined) {
    c = getComputedStyle(document.documentElement).getPropertyValue(name).trim() || "#888";
    colors.set(name, c);
  }
  return c;
}

const emptySeries = (runId: string, key: string): PointSeries => ({
  runId,
  key,
  steps: [],
  walls: [],
  values: [],
  min: null,
  max: null,
  total: 0,
  downsampled: false,
});

const xTick = (mode: XMode) => (v: number | string) => {
  const n = Number(v);
  return mode === "step" ? fmtInt(n) : mode === "relative" ? formatRelative(n) : formatClock(n);
};

/** The y range a zoomed view fits, with a little room above and below. */
function padded(e: { min: number; max: number }, log: boolean): { min: number; max: number } {
  if (log) return { min: e.min / 1.15, max: e.max * 1.15 };
  const span = e.max - e.min || Math.abs(e.max) || 1;
  return { min: e.min - span * 0.05, max: e.max + span * 0.05 };
}

/**
 * Puts `next` in the chart, keeping its dataset objects when the same runs and roles are drawn
 * (a smoothing or data change): chart.js then reuses each dataset's elements instead of
 * building them again for every point.
 */
function reuseDatasets(ch: Chart<"line", XY[]>, next: PanelDataset[]): void {
  const current = ch.data.datasets as unknown as PanelDataset[];
  const same = current.length === next.length &&
    current.every((d, i) => d.runId === next[i].runId && d.role === next[i].role);
  if (same) next.forEach((d, i) => Object.assign(current[i], d));
  else ch.data.datasets = next as never;
}

export default function ChartPanel(p: ComposedPanelProps) {
  const root = useRef<HTMLElement>(null);
  const box = useRef<HTMLDivElement>(null);
  const canvas = useRef<HTMLCanvasElement>(null);
  const chart = useRef<Chart<"line", XY[]> | null>(null);
  const alive = useRef(false);

  const [ownSmooth, setOwnSmooth] = useState(p.smooth ?? 0);
  const [ownX, setOwnX] = useState<XMode>(p.x ?? "step");
  const smoothing = p.onSmooth ? (p.smooth ?? 0) : ownSmooth;
  const x = p.onX ? (p.x ?? "step") : ownX;
  const [legend, setLegend] = useState<LegendState>(EMPTY_LEGEND);
  const [log, setLog] = useState(false);
  const [base, setBase] = useState<SeriesMap>(() => toMap(p.series ?? []));
  /** `max_points` the drawn series were read with (0: not read yet). */
  const asked = useRef(p.series ? (p.maxPoints ?? 0) : 0);
  /** Runs a read already asked about (a run without the key has no series to wait for). */
  const tried = useRef(new Set<string>(p.series ? p.runs.map((r) => r.id) : []));
  const [zoom, setZoom] = useState<Zoom | null>(null);
  const [hover, setHover] = useState<Readout | null>(null);
  const [drag, setDrag] = useState<{ from: number; to: number } | null>(null);
  const [scheme, setScheme] = useState(0);
  const [width, setWidth] = useState(0);
  /** The panel has been on the screen (or near it): only then does it read and draw. */
  const [seen, setSeen] = useState(false);
  const t0 = useRef<Record<string, number>>({});
  /** What the chart was last laid out with (chart.js's full update). */
  const lastDraw = useRef<
    { frames: unknown; legend: LegendState; scheme: number; inside: boolean } | null
  >(null);

  const density = p.density ?? DENSITY;
  const want = wantFor(width, density);
  const ids = p.runs.map((r) => r.id);
  const idKey = ids.join(",");
  const liveKey = p.runs.filter((r) => r.live).map((r) => r.id).join(",");

  // Relative time counts from each run's first point, kept across zoomed reads.
  for (const [id, s] of Object.entries(base)) {
    if (s.walls.length && !(t0.current[id] <= s.walls[0])) t0.current[id] = Math.min(...s.walls);
  }
  // Zoomed: the range read at full detail; until it arrives (or for a run it had nothing of),
  // the points already there.
  const seriesOf = (id: string): PointSeries | undefined => zoom?.series?.[id] ?? base[id];
  // The faded raw line and the band need no more detail than the panel's pixels show; the
  // line and the readout keep every point.
  const columns = width ? Math.max(50, Math.round(width / COLUMN_PX)) : 0;
  const smoothOn = smoothing > 0;
  // What a smoothing change leaves as it was (x, raw line, band, marks), kept across it.
  // Shaped only once the panel is on the screen and its width known: nothing is drawn before.
  const frames = useMemo(() => {
    const out: Record<string, SeriesFrame> = {};
    if (!seen || !columns) return out;
    for (const r of p.runs) {
      const s = seriesOf(r.id);
      if (!s) continue;
      const t0r = t0.current[r.id] ?? 0;
      out[r.id] = shapeFrame(s, { x, smooth: smoothOn ? 1 : 0, t0: t0r, log, columns });
    }
    return out;
  }, [base, zoom, x, smoothOn, log, columns, idKey, seen]);
  const shaped = useMemo(() => {
    const out: Record<string, ShapedSeries> = {};
    for (const r of p.runs) {
      const s = seriesOf(r.id);
      const frame = frames[r.id];
      if (!s || !frame) continue;
      const o = { x, smooth: smoothing, t0: t0.current[r.id] ?? 0, log, columns };
      out[r.id] = shapeSeries(s, o, frame);
    }
    return out;
  }, [frames, smoothing]);
  const visible = p.runs.filter((r) => isVisible(legend, r.id) && seriesOf(r.id));
  const shown = visible.filter((r) => shaped[r.id]);

  // The panel's place on the page, its width and the colour scheme, from its first paint.
  useLayoutEffect(() => {
    alive.current = true;
    const dark = matchMedia("(prefers-color-scheme: dark)");
    const recolor = () => {
      colors.clear();
      setScheme((n) => n + 1);
    };
    dark.addEventListener("change", recolor);
    // The width now, so the first drawing already fits it (the observer reports it later).
    setWidth(box.current!.clientWidth);
    const resize = new ResizeObserver(() => setWidth(box.current?.clientWidth ?? 0));
    resize.observe(box.current!);
    // A panel on the first screen draws at once; one below it when scrolled near.
    const near = (r: DOMRect) =>
      r.width > 0 && r.bottom >= -AHEAD_PX && r.top <= innerHeight + AHEAD_PX;
    let sight: IntersectionObserver | null = null;
    if (near(root.current!.getBoundingClientRect())) {
      setSeen(true);
      // What the page did not give is asked for now, before the panels around draw theirs.
      read(box.current!.clientWidth);
    } else {
      sight = new IntersectionObserver((entries) => {
        if (!entries.some((e) => e.isIntersecting)) return;
        setSeen(true);
        sight?.disconnect();
      }, { rootMargin: `${AHEAD_PX}px 0px` });
      sight.observe(root.current!);
    }
    return () => {
      dark.removeEventListener("change", recolor);
      resize.disconnect();
      sight?.disconnect();
      alive.current = false;
    };
  }, []);

  // The chart, made once the panel is seen (a panel below the screen costs nothing until
  // then) and drawn once; the pointer is the panel's, not chart.js's. Made in a layout effect
  // so it exists when the data's layout effect below first runs.
  useLayoutEffect(() => {
    if (!seen) return;
    const ch = new Chart<"line", XY[]>(canvas.current!, {
      type: "line",
      data: { datasets: [] },
      options: {
        animation: false,
        maintainAspectRatio: false,
        parsing: false,
        normalized: false,
        events: [],
        plugins: { legend: { display: false }, tooltip: { enabled: false } },
      },
      plugins: [bandPlugin],
    });
    chart.current = ch;
    return () => {
      ch.destroy();
      lastDraw.current = null;
      chart.current = null;
    };
  }, [seen]);

  // New data, smoothing, axis, scale, legend or colours: replace the datasets, nothing else.
  // A layout effect: the canvas is drawn in the same task as the render that changed it, not
  // a frame later (a passive effect waits for the next animation frame).
  useLayoutEffect(() => {
    const ch = chart.current;
    if (!ch || !seen || !width) return;
    const drawn: DrawnRun[] = shown.map((r) => ({
      id: r.id,
      color: r.color,
      shaped: shaped[r.id],
      emphasis: emphasis(legend, r.id),
    }));
    const next = buildDatasets(drawn, cssVar("--failed"));
    const el = root.current!;
    // A smoothing change alone (the same frames, datasets, legend, colours and scale, the raw
    // line drawn, no zoom): only the lines' points move, and when the lines stay within what
    // the raw line, band and marks span, so does nothing else (see chart/redraw_lines.ts).
    const inside = linesInside(next);
    const last = lastDraw.current;
    if (
      last && smoothOn && !zoom && !log && last.frames === frames && last.legend === legend &&
      last.scheme === scheme && last.inside && inside &&
      sameDatasets(ch.data.datasets as unknown as PanelDataset[], next)
    ) {
      redrawLines(ch);
      el.dataset.drawnPoints = String(drawn.reduce((n, d) => n + drawnCount(d.shaped.line), 0));
      return;
    }
    reuseDatasets(ch, next);
    const grid = cssVar("--border");
    const text = cssVar("--text-muted");
    const fit = zoom ? yExtent(drawn.map((d) => d.shaped), zoom.range[0], zoom.range[1]) : null;
    const y = fit ? padded(fit, log) : null;
    ch.options.scales = {
      x: {
        type: "linear",
        min: zoom?.range[0],
        max: zoom?.range[1],
        grid: { color: grid },
        ticks: {
          color: text,
          maxTicksLimit: 6,
          maxRotation: 0,
          // Steps are whole numbers; so are ticks.
          precision: x === "step" ? 0 : undefined,
          callback: xTick(x),
        },
      },
      y: {
        type: log ? "logarithmic" : "linear",
        min: y?.min,
        max: y?.max,
        grid: { color: grid },
        ticks: { color: text, maxTicksLimit: 5, callback: (v) => fmtMetric(Number(v)) },
      },
    };
    ch.update("none");
    lastDraw.current = { frames, legend, scheme, inside };
    el.dataset.xRange = `${ch.scales.x.min},${ch.scales.x.max}`;
    el.dataset.drawnPoints = String(
      drawn.reduce((n, d) => n + drawnCount(d.shaped.line), 0),
    );
  }, [shaped, legend, zoom, log, scheme, idKey, seen, width > 0]);

  // Series the page did not give, or more detail than it gave when the panel is wider.
  const read = (px: number) => {
    const want = wantFor(px, density);
    const missing = ids.filter((id) => !tried.current.has(id));
    const coarse = want > asked.current && Object.values(base).some((s) => s.downsampled);
    const runs = coarse ? ids : missing;
    if (!runs.length) return;
    for (const id of runs) tried.current.add(id);
    if (coarse || !asked.current) asked.current = want;
    // Not cancelled by a later width: the runs are marked as asked for, so only this read
    // brings them.
    firstReads.ask({ runs, key: p.metric, max_points: asked.current }).then((got) => {
      if (!alive.current) return;
      setBase((b) => {
        const next: Record<string, PointSeries> = { ...b };
        for (const s of got) next[s.run_id] = replaceKeepingTail(b[s.run_id], fromApi(s));
        return next;
      });
    }).catch(() => {
      for (const id of runs) tried.current.delete(id);
    });
  };
  useEffect(() => {
    if (width && seen) read(width);
  }, [width > 0 && want, idKey, p.metric, seen]);

  // A page that reads its series again hands them over.
  const given = useRef(p.series);
  useEffect(() => {
    if (given.current === p.series || !p.series) return;
    given.current = p.series;
    asked.current = p.maxPoints ?? asked.current;
    setBase(toMap(p.series));
  }, [p.series]);

  // A zoomed range is read again at full detail (`range` in the axis' own terms).
  useEffect(() => {
    if (!zoom || zoom.series) return;
    const [from, to] = zoom.range;
    const margin = (to - from) * 0.02;
    const padRange: [number, number] = [from - margin, to + margin];
    // Hidden runs too: showing one again while zoomed needs no new read.
    const runs = ids;
    if (!runs.length) return;
    const body = (rs: string[], t: number) => {
      const q = queryRange(x, padRange, t);
      return { runs: rs, keys: [p.metric], max_points: want, x: q.x, range: q.range };
    };
    // Relative time starts at each run's own first point: one read per run.
    const reads = x === "relative"
      ? runs.map((id) => querySeries(body([id], t0.current[id] ?? 0)))
      : [querySeries(body(runs, 0))];
    let stop = false;
    Promise.all(reads).then((parts) => {
      if (stop) return;
      const got = toMap(parts.flat());
      setZoom((z) => z && z.range === zoom.range ? { ...z, series: got } : z);
    }).catch(() => {});
    return () => {
      stop = true;
    };
  }, [zoom]);

  // A zoom is in the old axis' terms: a new axis starts unzoomed.
  const lastX = useRef(x);
  useEffect(() => {
    if (lastX.current === x) return;
    lastX.current = x;
    setZoom(null);
    setHover(null);
  }, [x]);

  // Live runs: points over the page's one stream, and a read every 5 s that repairs gaps.
  useEffect(() => {
    const live = liveKey ? liveKey.split(",") : [];
    if (!live.length) return;
    const add = (id: string, pts: LivePoint[]) => {
      setBase((b) => ({ ...b, [id]: mergePoints(b[id] ?? emptySeries(id, p.metric), pts) }));
      setZoom((z) =>
        z && z.series && z.series[id]
          ? { ...z, series: { ...z.series, [id]: mergePoints(z.series[id], pts) } }
          : z
      );
    };
    const repair = () =>
      querySeries({ runs: live, keys: [p.metric], max_points: asked.current || want })
        .then((got) =>
          alive.current && setBase((b) => {
            const next: Record<string, PointSeries> = { ...b };
            for (const s of got) next[s.run_id] = replaceKeepingTail(b[s.run_id], fromApi(s));
            return next;
          })
        ).catch(() => {});
    let poll: ReturnType<typeof setInterval> | null = setInterval(repair, POLL_MS);
    // Every run has finished: one last read for anything the stream missed, then no more.
    const ended = () => {
      if (!poll) return;
      clearInterval(poll);
      poll = null;
      repair();
    };
    const stops = live.map((id) => livePoints.listen(id, p.metric, (pts) => add(id, pts), ended));
    return () => {
      for (const s of stops) s();
      if (poll) clearInterval(poll);
    };
  }, [liveKey, p.metric]);

  const pointerX = (e: PointerEvent | MouseEvent) =>
    e.clientX - box.current!.getBoundingClientRect().left;
  const inArea = (px: number) => {
    const a = chart.current?.chartArea;
    return !!a && px >= a.left && px <= a.right;
  };
  const showReadout = (px: number) => {
    const ch = chart.current;
    if (!ch || !inArea(px)) return setHover(null);
    const at = ch.scales.x.getValueForPixel(px);
    if (at === undefined) return setHover(null);
    const inputs: ReadoutInput[] = shown.map((r) => {
      const s = seriesOf(r.id)!;
      return {
        id: r.id,
        label: r.label,
        color: r.color,
        xs: shaped[r.id].xs,
        steps: s.steps,
        walls: s.walls,
        values: s.values,
        smoothed: shaped[r.id].smoothed,
        t0: t0.current[r.id] ?? 0,
      };
    });
    setHover(readout(inputs, at, smoothing > 0));
  };
  const onDown = (e: PointerEvent) => {
    if (e.button !== 0 || !inArea(pointerX(e))) return;
    box.current!.setPointerCapture?.(e.pointerId);
    setDrag({ from: pointerX(e), to: pointerX(e) });
  };
  const onMove = (e: PointerEvent) => {
    const px = pointerX(e);
    if (drag) {
      const a = chart.current!.chartArea;
      setDrag({ ...drag, to: Math.min(a.right, Math.max(a.left, px)) });
    }
    showReadout(px);
  };
  const onUp = () => {
    const ch = chart.current;
    if (!drag || !ch) return;
    setDrag(null);
    if (Math.abs(drag.to - drag.from) < DRAG_MIN_PX) return;
    const a = ch.scales.x.getValueForPixel(Math.min(drag.from, drag.to))!;
    const b = ch.scales.x.getValueForPixel(Math.max(drag.from, drag.to))!;
    setZoom({ range: [a, b], series: null });
  };
  const reset = () => setZoom(null);

  const crossPx = hover && chart.current ? chart.current.scales.x.getPixelForValue(hover.x) : null;
  const area = chart.current?.chartArea;
  return (
    <figure
      class="panel chart-panel"
      data-metric={p.metric}
      data-zoomed={zoom ? "true" : "false"}
      ref={root}
    >
      <PanelHead
        metric={p.metric}
        direction={p.direction}
        primary={!!p.primary}
        runs={visible.map((r) => ({ label: r.label, series: base[r.id] }))}
        smoothing={smoothing}
        onSmooth={p.onSmooth ? null : setOwnSmooth}
        x={x}
        onX={p.onX ? null : setOwnX}
        log={log}
        onLog={setLog}
        zoomed={!!zoom}
        onReset={reset}
        onRemove={p.onRemove}
      />
      <div
        class={`chart-box${p.tall ? " tall" : ""}`}
        ref={box}
        onPointerDown={onDown}
        onPointerMove={onMove}
        onPointerUp={onUp}
        onPointerLeave={() => !drag && setHover(null)}
        onDblClick={reset}
      >
        <canvas
          ref={canvas}
          role="img"
          aria-label={`${p.metric} by ${X_LABEL[x]}${
            p.runs.length > 1 ? `, ${p.runs.length} runs` : ""
          }`}
        />
        {drag && area && (
          <div
            class="chart-zoom-box"
            style={{
              left: `${Math.min(drag.from, drag.to)}px`,
              width: `${Math.abs(drag.to - drag.from)}px`,
              top: `${area.top}px`,
              height: `${area.bottom - area.top}px`,
            }}
          />
        )}
        {hover && area && crossPx !== null && (
          <PanelTip hover={hover} at={crossPx} area={area} width={box.current?.clientWidth ?? 0} />
        )}
      </div>
      {p.runs.length > 1 && (
        <PanelLegend metric={p.metric} runs={p.runs} legend={legend} onLegend={setLegend} />
      )}
    </figure>
  );
}
