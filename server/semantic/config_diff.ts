/** What differs between run configs: pure, over plain JSON. */

/**
 * A config flattened to dotted keys: `{model: {layers: 4}}` → `{"model.layers": 4}`. Arrays and
 * empty objects are values, not folders.
 */
export function flattenConfig(config: Record<string, unknown>, prefix = ""): Map<string, unknown> {
  const out = new Map<string, unknown>();
  for (const [k, v] of Object.entries(config)) {
    const key = prefix ? `${prefix}.${k}` : k;
    if (v !== null && typeof v === "object" && !Array.isArray(v) && Object.keys(v).length > 0) {
      for (const [fk, fv] of flattenConfig(v as Record<string, unknown>, key)) out.set(fk, fv);
    } else {
      out.set(key, v);
    }
  }
  return out;
}

/**
 * The config keys whose values differ between runs, sorted, with each run's value (null for a
 * run without the key); and how many keys are the same in every run.
 */
export function configDiff(
  configs: readonly { run_id: string; config: Record<string, unknown> }[],
): { diff: { key: string; values: Record<string, unknown> }[]; identical: number } {
  const flat = configs.map((c) => ({ run_id: c.run_id, values: flattenConfig(c.config) }));
  const keys = new Set(flat.flatMap((f) => [...f.values.keys()]));
  const diff: { key: string; values: Record<string, unknown> }[] = [];
  let identical = 0;
  for (const key of [...keys].sort()) {
    const seen = flat.map((f) => f.values.has(key) ? JSON.stringify(f.values.get(key)) : undefined);
    if (seen.every((s) => s !== undefined && s === seen[0])) {
      identical++;
      continue;
    }
    const values: Record<string, unknown> = {};
    for (const f of flat) values[f.run_id] = f.values.has(key) ? f.values.get(key) : null;
    diff.push({ key, values });
  }
  return { diff, identical };
}
