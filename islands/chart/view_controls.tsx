/**
 * The controls a page with composed chart panels shows once for all of them: the smoothing
 * slider and the x-axis switch (the panels, given `onSmooth`/`onX`, show none of their own).
 */
import { X_MODES, type XMode } from "./x_axis.ts";

const X_LABEL: Record<XMode, string> = { step: "step", relative: "relative", wall: "wall" };

export function SmoothSlider({ value, onChange }: {
  value: number;
  onChange: (v: number) => void;
}) {
  return (
    <label class="smooth-control" title="Smoothing (debiased EMA, as TensorBoard)">
      <span>Smoothing</span>
      <input
        type="range"
        name="smooth"
        min="0"
        max="0.999"
        step="0.001"
        value={value}
        onInput={(e) => onChange(Number((e.target as HTMLInputElement).value))}
      />
      <output class="num" data-smooth={value}>{value.toFixed(2)}</output>
    </label>
  );
}

export function XSwitch({ value, onChange }: { value: XMode; onChange: (x: XMode) => void }) {
  return (
    <div class="x-switch" role="group" aria-label="x axis">
      {X_MODES.map((m) => (
        <button
          type="button"
          class="small"
          data-x={m}
          aria-pressed={value === m}
          onClick={() => onChange(m)}
        >
          {X_LABEL[m]}
        </button>
      ))}
    </div>
  );
}
