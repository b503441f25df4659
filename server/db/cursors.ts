/** The server's per-node, per-stream cursors: the highest data-frame seq applied. */
import type { StreamName } from "../../protocol/agent.ts";
import type { Database } from "./database.ts";

export function getCursor(db: Database, nodeId: string, stream: StreamName): number {
  const row = db.prepare("SELECT last_seq FROM cursors WHERE node_id = ? AND stream = ?").get(
    nodeId,
    stream,
  ) as { last_seq: number } | undefined;
  return row?.last_seq ?? 0;
}

export function setCursor(db: Database, nodeId: string, stream: StreamName, seq: number): void {
  db.prepare(
    `INSERT INTO cursors (node_id, stream, last_seq) VALUES (?, ?, ?)
     ON CONFLICT (node_id, stream) DO UPDATE SET last_seq = excluded.last_seq`,
  ).run(nodeId, stream, seq);
}
