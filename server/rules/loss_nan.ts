/** LOSS_NAN: a loss key's value is NaN or ±Inf; once per run and key. */
import { fmtValue } from "./_format.ts";
import { encodeMetricValue } from "../../protocol/metric_value.ts";
import { isLossKey } from "./loss_families.ts";
import type { RuleEvent } from "./rule_event.ts";

/** The loss keys that already raised LOSS_NAN: the rule fires once per run and key. */
export interface LossNanState {
  fired: Set<string>;
}

/** A fresh LOSS_NAN state. */
export function createLossNanState(): LossNanState {
  return { fired: new Set() };
}

/** LOSS_NAN when a loss key's value is NaN or ±Inf, the first time for that key. */
export function detectLossNan(
  state: LossNanState,
  key: string,
  step: number,
  value: number,
): RuleEvent | null {
  if (Number.isFinite(value) || !isLossKey(key) || state.fired.has(key)) return null;
  state.fired.add(key);
  return {
    type: "LOSS_NAN",
    severity: "critical",
    message: `Loss "${key}" is ${fmtValue(value)} at step ${step}`,
    data: { key, step, value: encodeMetricValue(value) },
  };
}
