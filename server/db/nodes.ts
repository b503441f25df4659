/**
 * Node records: what an agent said of its host when it connected, its ONLINE/OFFLINE status,
 * heartbeats, and the lease its agent declared.
 */
import { type NodeRecord, slurmPoolOf } from "../../protocol/objects.ts";
import type { Database } from "./database.ts";
import { json } from "./_rows.ts";

interface NodeRow {
  id: string;
  hostname: string;
  status: NodeRecord["status"];
  gpus: string;
  cpu_count: number | null;
  memory_mb: number | null;
  disk_free_mb: number | null;
  labels: string;
  agent_version: string | null;
  cpu_slots: number;
  avoid_foreign_gpus: number;
  fake_gpus: number;
  telemetry: string;
  last_heartbeat_at: string | null;
  created_at: string;
}

const toNode = (r: NodeRow): NodeRecord => ({
  id: r.id,
  hostname: r.hostname,
  status: r.status,
  gpus: json(r.gpus, []),
  cpu_count: r.cpu_count,
  memory_mb: r.memory_mb,
  disk_free_mb: r.disk_free_mb,
  labels: json(r.labels, {}),
  agent_version: r.agent_version,
  cpu_slots: r.cpu_slots,
  avoid_foreign_gpus: r.avoid_foreign_gpus === 1,
  fake_gpus: r.fake_gpus === 1,
  pool: slurmPoolOf(json(r.labels, {})),
  telemetry: json(r.telemetry, {}),
  last_heartbeat_at: r.last_heartbeat_at,
  created_at: r.created_at,
});

/** Records what an agent said about its host when it connected. */
export function upsertNode(
  db: Database,
  n: Omit<NodeRecord, "created_at" | "telemetry" | "pool">,
  at: string,
): void {
  db.prepare(
    `INSERT INTO nodes (id, hostname, status, gpus, cpu_count, memory_mb, disk_free_mb, labels,
       agent_version, cpu_slots, avoid_foreign_gpus, fake_gpus, last_heartbeat_at, created_at, updated_at)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
     ON CONFLICT (id) DO UPDATE SET hostname = excluded.hostname, status = excluded.status,
       gpus = excluded.gpus, cpu_count = excluded.cpu_count, memory_mb = excluded.memory_mb,
       disk_free_mb = excluded.disk_free_mb, labels = excluded.labels,
       agent_version = excluded.agent_version, cpu_slots = excluded.cpu_slots,
       avoid_foreign_gpus = excluded.avoid_foreign_gpus, fake_gpus = excluded.fake_gpus,
       last_heartbeat_at = excluded.last_heartbeat_at, updated_at = excluded.updated_at`,
  ).run(
    n.id,
    n.hostname,
    n.status,
    JSON.stringify(n.gpus),
    n.cpu_count,
    n.memory_mb,
    n.disk_free_mb,
    JSON.stringify(n.labels),
    n.agent_version,
    n.cpu_slots,
    n.avoid_foreign_gpus ? 1 : 0,
    n.fake_gpus ? 1 : 0,
    n.last_heartbeat_at,
    at,
    at,
  );
}

export function getNode(db: Database, id: string): NodeRecord | null {
  const row = db.prepare("SELECT * FROM nodes WHERE id = ?").get(id) as NodeRow | undefined;
  return row ? toNode(row) : null;
}

export function listNodes(db: Database): NodeRecord[] {
  return (db.prepare("SELECT * FROM nodes ORDER BY id").all() as unknown as NodeRow[]).map(toNode);
}

export function setNodeStatus(
  db: Database,
  id: string,
  status: NodeRecord["status"],
  at: string,
): boolean {
  return Number(
    db.prepare("UPDATE nodes SET status = ?, updated_at = ? WHERE id = ? AND status != ?").run(
      status,
      at,
      id,
      status,
    ).changes,
  ) > 0;
}

export function recordHeartbeat(
  db: Database,
  id: string,
  telemetry: Record<string, unknown>,
  diskFreeMb: number | null,
  at: string,
): void {
  db.prepare(
    `UPDATE nodes SET telemetry = ?, disk_free_mb = COALESCE(?, disk_free_mb), last_heartbeat_at = ?,
       updated_at = ? WHERE id = ?`,
  ).run(JSON.stringify(telemetry), diskFreeMb, at, at, id);
}

/**
 * The lease a node's agent declared in its hello: it stops its own jobs after this many
 * seconds out of contact. Null: the agent holds no lease, so its lost jobs are never
 * requeued by themselves.
 */
export function setFenceAfter(db: Database, id: string, fenceAfterS: number | null): void {
  db.prepare("UPDATE nodes SET fence_after_s = ? WHERE id = ?").run(fenceAfterS, id);
}

export function fenceAfterOf(db: Database, id: string): number | null {
  const row = db.prepare("SELECT fence_after_s FROM nodes WHERE id = ?").get(id) as
    | { fence_after_s: number | null }
    | undefined;
  return row?.fence_after_s ?? null;
}
