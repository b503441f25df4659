/**
 * What a chart panel is given. One panel draws one metric of several runs; pages render it
 * as an island on its own (Run detail) or compose several inside their own island
 * (the Experiments workspace, Compare), sharing smoothing and x axis through the `on…`
 * callbacks.
 *
 * @module
 */
import type { MetricDirection } from "../../protocol/vocabulary.ts";
import type { Series } from "../../protocol/objects.ts";
import type { XMode } from "./x_axis.ts";
import type { PackedSeries } from "./packed.ts";

/** A run a panel draws. */
export interface PanelRun {
  id: string;
  /** Legend text (the run's name); the id shows on hover. */
  label: string;
  /** `runColor(id)`: the same colour in every page. */
  color: string;
  /** Still growing: the panel follows its points live. */
  live: boolean;
}

/** One series as `POST /api/runs/metrics:query` returns it (the protocol's `Series`). */
export type ApiSeries = Series;

/** The props of `islands/ChartPanel.tsx` as an island (JSON only). */
export interface ChartPanelProps {
  metric: string;
  direction: MetricDirection | null;
  /** The scope's primary metric: drawn with ★. */
  primary?: boolean;
  runs: PanelRun[];
  /**
   * The series the page was rendered with (one per run that has the key, asked with
   * `maxPoints`), so the first paint needs no request; read when the panel is first on the
   * screen when absent. As the API writes them, or packed (`chart/packed.ts`).
   */
  series?: ApiSeries[] | PackedSeries[];
  /** What `series` was asked with. */
  maxPoints?: number;
  /**
   * Points a read asks for per pixel of the panel's width: 2 keeps a single panel's lines
   * smooth; a page of many panels reads 1, and its chart.js draws half as many points.
   * @default 2
   */
  density?: number;
  /** Smoothing weight, 0 (raw) to 0.999. @default 0 */
  smooth?: number;
  /** @default "step" */
  x?: XMode;
  /** A taller box (a panel at full width). */
  tall?: boolean;
}

/**
 * The props when a page island composes panels: the page owns smoothing and the x axis
 * (one slider for every panel, kept in the URL) and may offer to remove the panel. A panel
 * given `onSmooth`/`onX` shows no slider or axis switch of its own.
 */
export interface ComposedPanelProps extends ChartPanelProps {
  onSmooth?: (weight: number) => void;
  onX?: (x: XMode) => void;
  onRemove?: () => void;
}
