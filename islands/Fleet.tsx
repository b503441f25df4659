/**
 * Every GPU of every node: utilisation and memory bars, the gpuctl job that holds it or the
 * foreign processes on it, and the node's heartbeat age; offline nodes greyed. As rows on the
 * dashboard, as one card per host on the Nodes page. GPU readings come with each heartbeat,
 * which no stream carries, so the nodes are read again every few seconds.
 */
import { fmtMb } from "./_format.ts";
import { type LiveEvent, useJson, useNow } from "./_live.ts";
import { Bar, RelTime, StatusBadge } from "./_ui.tsx";

interface GpuReading {
  index: number;
  memory_used_mb: number | null;
  memory_total_mb: number | null;
  util_pct: number | null;
  temp_c: number | null;
  power_w: number | null;
  processes?: { pid: number; used_mb: number | null }[];
}

export interface FleetNode {
  id: string;
  hostname: string;
  status: string;
  gpus: { index: number; name: string; memory_total_mb: number; fake?: boolean }[];
  cpu_count: number | null;
  memory_mb: number | null;
  disk_free_mb: number | null;
  agent_version: string | null;
  labels: Record<string, string>;
  telemetry: {
    gpus?: GpuReading[];
    cpu_pct?: number | null;
    mem_used_mb?: number | null;
    foreign?: { gpu_index: number; pid: number; used_mb: number | null }[];
  };
  last_heartbeat_at: string | null;
}

/** A job holding GPUs, as the jobs list says. */
export interface Holder {
  id: string;
  name: string;
  node_id: string | null;
  gpu_indices: number[];
  run_id: string | null;
}

export interface FleetProps {
  nodes: FleetNode[];
  holders: Holder[];
  variant: "rows" | "cards";
  now: number;
}

const nodeChange = (e: LiveEvent) => e.type.startsWith("NODE_");
const jobChange = (e: LiveEvent) => /^(JOB_|RUN_)/.test(e.type);

export default function Fleet({ nodes: n0, holders: h0, variant, now: rendered }: FleetProps) {
  const nodes = useJson<{ items: FleetNode[] }>("/api/nodes", { items: n0 }, {
    refreshOn: nodeChange,
    everyMs: 5_000,
  }).items;
  const running = useJson<{ items: Holder[] }>("/api/jobs?status=RUNNING&limit=200", {
    items: h0,
  }, { refreshOn: jobChange, everyMs: 10_000 }).items;
  const now = useNow(rendered, 5_000);
  if (nodes.length === 0) {
    return (
      <p class="muted empty">
        No GPU host has connected. Start an agent on one:{" "}
        <code>deno task agent --server URL --token TOKEN</code> (or{" "}
        <code>deno task start --fake-gpus 2</code> to try gpuctl without GPUs).
      </p>
    );
  }
  const holderOf = (node: string, gpu: number) =>
    running.find((j) => j.node_id === node && j.gpu_indices.includes(gpu)) ?? null;
  if (variant === "rows") {
    return (
      <div class="table-wrap">
        <table class="fleet-table">
          <thead>
            <tr>
              <th>Node</th>
              <th>GPU</th>
              <th class="bar-col">Utilisation</th>
              <th class="bar-col">Memory</th>
              <th>Held by</th>
              <th>Heartbeat</th>
            </tr>
          </thead>
          <tbody>
            {nodes.flatMap((node) =>
              node.gpus.map((g) => {
                const r = reading(node, g.index);
                const holder = holderOf(node.id, g.index);
                return (
                  <tr
                    key={`${node.id}/${g.index}`}
                    class={node.status === "OFFLINE" ? "offline" : ""}
                  >
                    <td>
                      <a href={`/nodes#node-${node.id}`}>{node.id}</a>
                      {node.status === "OFFLINE" && (
                        <>
                          <StatusBadge status="OFFLINE" />
                        </>
                      )}
                    </td>
                    <td>
                      <span class="muted">{g.index}</span> {g.name}
                    </td>
                    <UtilCells r={r} total={g.memory_total_mb} />
                    <td>
                      <HolderCell holder={holder} foreign={foreignOn(node, g.index)} />
                    </td>
                    <td>
                      <RelTime at={node.last_heartbeat_at} now={now} />
                    </td>
                  </tr>
                );
              })
            )}
          </tbody>
        </table>
      </div>
    );
  }
  return (
    <div class="node-cards">
      {nodes.map((node) => {
        const t = node.telemetry ?? {};
        const model = [...new Set(node.gpus.map((g) => g.name))].join(", ") || "no GPUs";
        return (
          <section
            key={node.id}
            id={`node-${node.id}`}
            class={`panel node-card ${node.status === "OFFLINE" ? "offline" : ""}`}
          >
            <header class="node-head">
              <h2>{node.id}</h2>
              <StatusBadge status={node.status} />
              <span class="muted">{node.hostname !== node.id ? node.hostname : ""}</span>
              <span class="node-beat muted">
                heartbeat <RelTime at={node.last_heartbeat_at} now={now} />
              </span>
            </header>
            <dl class="facts">
              <div>
                <dt>GPUs</dt>
                <dd>
                  {node.gpus.length} × {model}
                  {node.gpus[0] ? ` · ${fmtMb(node.gpus[0].memory_total_mb)} each` : ""}
                  {node.gpus.some((g) => g.fake) ? " (fake)" : ""}
                </dd>
              </div>
              <div>
                <dt>CPU</dt>
                <dd>
                  {node.cpu_count ?? "–"} cores
                  {t.cpu_pct !== undefined && t.cpu_pct !== null
                    ? ` · ${Math.round(t.cpu_pct)}% busy`
                    : ""}
                </dd>
              </div>
              <div>
                <dt>Memory</dt>
                <dd>{fmtMb(t.mem_used_mb)} / {fmtMb(node.memory_mb)}</dd>
              </div>
              <div>
                <dt>Disk free</dt>
                <dd>{fmtMb(node.disk_free_mb)}</dd>
              </div>
              <div>
                <dt>Agent</dt>
                <dd>{node.agent_version ?? "–"}</dd>
              </div>
              {Object.keys(node.labels ?? {}).length > 0 && (
                <div>
                  <dt>Labels</dt>
                  <dd>{Object.entries(node.labels).map(([k, v]) => `${k}=${v}`).join(", ")}</dd>
                </div>
              )}
            </dl>
            {node.gpus.length > 0 && (
              <div class="table-wrap">
                <table class="gpu-table">
                  <thead>
                    <tr>
                      <th>GPU</th>
                      <th class="bar-col">Utilisation</th>
                      <th class="bar-col">Memory</th>
                      <th class="num">Temp</th>
                      <th class="num">Power</th>
                      <th>Processes</th>
                    </tr>
                  </thead>
                  <tbody>
                    {node.gpus.map((g) => {
                      const r = reading(node, g.index);
                      return (
                        <tr key={g.index}>
                          <td>
                            <span class="muted">{g.index}</span> {g.name}
                          </td>
                          <UtilCells r={r} total={g.memory_total_mb} />
                          <td class="num">
                            {r?.temp_c !== null && r?.temp_c !== undefined
                              ? `${Math.round(r.temp_c)} °C`
                              : "–"}
                          </td>
                          <td class="num">
                            {r?.power_w !== null && r?.power_w !== undefined
                              ? `${Math.round(r.power_w)} W`
                              : "–"}
                          </td>
                          <td>
                            <HolderCell
                              holder={holderOf(node.id, g.index)}
                              foreign={foreignOn(node, g.index)}
                            />
                          </td>
                        </tr>
                      );
                    })}
                  </tbody>
                </table>
              </div>
            )}
          </section>
        );
      })}
    </div>
  );
}

function reading(node: FleetNode, index: number): GpuReading | null {
  if (node.status === "OFFLINE") return null;
  return node.telemetry?.gpus?.find((x) => x.index === index) ?? null;
}

function foreignOn(node: FleetNode, index: number) {
  return (node.telemetry?.foreign ?? []).filter((f) => f.gpu_index === index);
}

function UtilCells({ r, total }: { r: GpuReading | null; total: number }) {
  const util = r?.util_pct ?? null;
  const used = r?.memory_used_mb ?? null;
  const cap = r?.memory_total_mb ?? total;
  return (
    <>
      <td class="bar-col">
        <Bar fraction={util === null ? null : util / 100} tone="util" />
        <span class="small">{util === null ? "–" : `${Math.round(util)}%`}</span>
      </td>
      <td class="bar-col">
        <Bar fraction={used === null || !cap ? null : used / cap} tone="mem" />
        <span class="small">{used === null ? "–" : `${fmtMb(used)} / ${fmtMb(cap)}`}</span>
      </td>
    </>
  );
}

function HolderCell(
  { holder, foreign }: {
    holder: Holder | null;
    foreign: { pid: number; used_mb: number | null }[];
  },
) {
  return (
    <span class="holders">
      {holder
        ? (
          <a
            href={holder.run_id
              ? `/runs/${encodeURIComponent(holder.run_id)}`
              : `/jobs#${holder.id}`}
          >
            {holder.name}
          </a>
        )
        : foreign.length === 0 && <span class="muted">free</span>}
      {foreign.map((f) => (
        <span key={f.pid} class="foreign" title="a process gpuctl did not start">
          pid {f.pid} (foreign{f.used_mb !== null ? `, ${fmtMb(f.used_mb)}` : ""})
        </span>
      ))}
    </span>
  );
}
