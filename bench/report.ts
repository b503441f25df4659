// deno-lint-ignore-file no-console -- a benchmark reports on the console
/**
 * The bench's rows: each measure with its baseline from the same run and its target, printed
 * as it comes, as a Markdown table at the end, and written to `bench/results/latest.json`
 * (value, baseline, ratio, target, whether it was met, the machine's cores) for the README.
 */

/** A number with its unit, and the words a person reads beside it. */
export interface Measure {
  value: number;
  unit: string;
  /** Detail for the table (percentiles, the cold reading). @default the value and unit */
  text?: string;
}

/** What the measure should be: at most or at least `value` (in the measure's unit). */
export interface Target {
  op: "<=" | ">=";
  value: number;
  /** A second condition the number alone does not show (e.g. a share of the baseline). */
  also?: { op: "<=" | ">="; ratio: number };
}

export interface BenchRow {
  name: string;
  value: Measure;
  /** The same work done the plain way in the same run; null when there is none. */
  baseline: Measure | null;
  /** Null for a measure with no number to meet (the note says what is wanted). */
  target: Target | null;
  note?: string;
}

export type Report = (row: BenchRow) => void;

const fmt = (n: number) =>
  Math.abs(n) >= 1000 ? Math.round(n).toLocaleString("en") : String(Number(n.toPrecision(3)));

const show = (m: Measure) => m.text ?? `${fmt(m.value)} ${m.unit}`;

/** Whether a value passes a target, with its baseline for a ratio condition. */
export function meets(row: BenchRow): boolean | null {
  const t = row.target;
  if (!t) return null;
  const pass = (op: "<=" | ">=", a: number, b: number) => op === "<=" ? a <= b : a >= b;
  if (!pass(t.op, row.value.value, t.value)) return false;
  if (t.also) {
    if (!row.baseline || row.baseline.unit !== row.value.unit) return null;
    return pass(t.also.op, row.value.value / row.baseline.value, t.also.ratio);
  }
  return true;
}

function targetText(row: BenchRow): string {
  const t = row.target;
  if (!t) return row.note ?? "—";
  const sign = (op: "<=" | ">=") => op === "<=" ? "≤" : "≥";
  const also = t.also
    ? ` and ${sign(t.also.op)} ${Math.round(t.also.ratio * 100)} % of baseline`
    : "";
  return `${sign(t.op)} ${fmt(t.value)} ${row.value.unit}${also}`;
}

/** Collects rows, prints each as it comes, and writes the table and the JSON at the end. */
export class BenchReport {
  readonly rows: BenchRow[] = [];

  add: Report = (row) => {
    this.rows.push(row);
    const met = meets(row);
    console.log(
      `${row.name}: ${show(row.value)}  (baseline ${row.baseline ? show(row.baseline) : "—"}; ` +
        `target ${targetText(row)}${met === null ? "" : met ? ", met" : ", NOT met"})`,
    );
  };

  table(): string {
    const lines = [
      "| measure | value | baseline (same run) | target | met |",
      "| --- | --- | --- | --- | --- |",
    ];
    for (const r of this.rows) {
      const met = meets(r);
      lines.push(
        `| ${r.name} | ${show(r.value)} | ${r.baseline ? show(r.baseline) : "—"} | ${
          targetText(r)
        } | ${met === null ? "—" : met ? "yes" : "no"} |`,
      );
    }
    return lines.join("\n");
  }

  /** The rows as JSON, with the machine they were measured on. */
  json(now: Date): unknown {
    return {
      measured_at: now.toISOString(),
      machine: {
        cores: navigator.hardwareConcurrency,
        os: `${Deno.build.os} ${Deno.osRelease()}`,
        arch: Deno.build.arch,
        deno: Deno.version.deno,
      },
      rows: this.rows.map((r) => ({
        name: r.name,
        value: r.value.value,
        unit: r.value.unit,
        text: show(r.value),
        baseline: r.baseline?.value ?? null,
        baseline_unit: r.baseline?.unit ?? null,
        baseline_text: r.baseline ? show(r.baseline) : null,
        ratio: r.baseline && r.baseline.unit === r.value.unit
          ? Number((r.value.value / r.baseline.value).toPrecision(3))
          : null,
        target: targetText(r),
        met: meets(r),
      })),
    };
  }

  async write(path: string, now = new Date()): Promise<void> {
    await Deno.mkdir(new URL(".", `file://${path}`).pathname, { recursive: true });
    await Deno.writeTextFile(path, JSON.stringify(this.json(now), null, 2) + "\n");
    console.log(`\n${this.table()}\n\nwritten: ${path}`);
  }
}
