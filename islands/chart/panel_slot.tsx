/**
 * Where a composed chart panel will be, as the server renders it: the panel's frame, title
 * and box at the panel's height, so the page does not move when the panel mounts. Pages with
 * several runs per panel mount `ChartPanel` only in the browser, because its legend swatches
 * carry `style` attributes that the console's CSP refuses in server HTML (`style-src 'self'`);
 * set from script after mount, the same styles are allowed.
 */
import { useEffect, useState } from "preact/hooks";
import { directionArrow } from "../_format.ts";

/** False on the server and in the hydrating render, true from the first effect on. */
export function useMounted(): boolean {
  const [mounted, setMounted] = useState(false);
  useEffect(() => setMounted(true), []);
  return mounted;
}

export function PanelSlot({ metric, direction, primary, tall }: {
  metric: string;
  direction: "min" | "max" | null;
  primary?: boolean;
  tall?: boolean;
}) {
  return (
    <figure class="panel chart-panel panel-slot" data-metric={metric}>
      <figcaption class="chart-head">
        <code class="chart-key">
          {primary && <span class="chart-star" title="primary metric">★</span>}
          {primary && " "}
          {metric} {directionArrow(direction)}
        </code>
      </figcaption>
      <div class={`chart-box${tall ? " tall" : ""}`} />
    </figure>
  );
}
