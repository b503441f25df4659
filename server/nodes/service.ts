/**
 * GPU hosts: what the API lists, and what happens to the store when an agent says hello,
 * sends a heartbeat or falls silent. The agent gateway (`server/gateway/`) owns the sockets
 * and the clocks; it calls these for every change of a node's record.
 */
import type { NodeRecord, Page } from "../../protocol/objects.ts";
import { nodes as nodesDb } from "../db/mod.ts";
import type { Context } from "../context.ts";
import { notFound } from "../errors.ts";

/** `GET /api/nodes`: every node the server has heard of, by id. */
export function listNodes(ctx: Context): Page<NodeRecord> {
  return { items: nodesDb.listNodes(ctx.db), next_cursor: null };
}

/** `GET /api/nodes/{id}`. */
export function getNode(ctx: Context, id: string): NodeRecord {
  const node = nodesDb.getNode(ctx.db, id);
  if (!node) throw notFound("Node", id);
  return node;
}
