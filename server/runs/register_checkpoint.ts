/**
 * Registering a run's checkpoint, and noticing when its file belongs to another run: every
 * job started in one working dir writes `checkpoints/ckpt-100.pt`, so the same path on the
 * same host registered by a later run means the earlier run's file is gone.
 */
import type { Checkpoint } from "../../protocol/objects.ts";
import type { CheckpointIn } from "../../protocol/rest/sdk.ts";
import { checkpoints as checkpointsDb, nodes as nodesDb } from "../db/mod.ts";
import type { StoredCheckpoint } from "../db/checkpoints.ts";
import type { StoredRun } from "../db/runs.ts";
import type { Context } from "../context.ts";
import { emitEvent } from "../events/emit.ts";

/** The facts compared when two runs registered one path. */
export interface FileSeen {
  run_id: string;
  size_bytes: number | null;
  /** ISO 8601, or null when not reported. */
  mtime: string | null;
  /** The content fingerprint, or null when not reported. */
  fingerprint: string | null;
}

/**
 * Which of two registrations of one path lost its file: the older modification time when
 * both are known (a replayed frame of an older run may arrive last), else the earlier
 * registration. Null when both saw the very same file (same size, mtime and, when both
 * have one, fingerprint): a run that only found another run's file did not replace it.
 */
export function overwrittenOf(earlier: FileSeen, later: FileSeen): "earlier" | "later" | null {
  if (earlier.mtime !== null && later.mtime !== null) {
    const a = Date.parse(earlier.mtime);
    const b = Date.parse(later.mtime);
    if (a === b) {
      const sameBytes = earlier.fingerprint === null || later.fingerprint === null ||
        earlier.fingerprint === later.fingerprint;
      return earlier.size_bytes === later.size_bytes && sameBytes ? null : "earlier";
    }
    return a < b ? "earlier" : "later";
  }
  return "earlier";
}

/** The host a run's paths live on: its node's hostname, else the hostname the SDK reported. */
export function hostOfRun(ctx: Context, run: StoredRun): string | null {
  if (run.node_id) return nodesDb.getNode(ctx.db, run.node_id)?.hostname ?? run.node_id;
  const h = run.env?.hostname;
  return typeof h === "string" && h !== "" ? h : null;
}

/**
 * Stores one checkpoint of a run (inside the caller's transaction) and marks whichever record
 * of the same path lost its file, with a CHECKPOINT_OVERWRITTEN event on that record's run
 * (also when the run reports the file saved again, with a new mtime). Returns the checkpoint,
 * whether it is new, and whether it is a new file at a path the run had registered.
 */
export function registerCheckpoint(
  ctx: Context,
  run: StoredRun,
  c: CheckpointIn,
  metrics: Record<string, unknown>,
  atIso: string,
): { checkpoint: Checkpoint; created: boolean; rewritten: boolean } {
  const { checkpoint, created, rewritten } = checkpointsDb.upsertCheckpoint(ctx.db, {
    id: ctx.newId("c"),
    run_id: run.id,
    step: c.step ?? null,
    epoch: c.epoch ?? null,
    path: c.path,
    size_bytes: c.size_bytes ?? null,
    mtime: mtimeIso(c),
    host: hostOfRun(ctx, run),
    metrics,
    created_at: atIso,
    fingerprint: c.fingerprint ?? null,
    problem: c.state === "incomplete" ? c.problem ?? "its bytes are not a complete file" : null,
  });
  if (created || rewritten) {
    let newest = true;
    for (const other of checkpointsDb.samePathOfOtherRuns(ctx.db, checkpoint)) {
      const lost = overwrittenOf(other, checkpoint);
      if (lost === "earlier") markLost(ctx, other, checkpoint.run_id, atIso);
      else if (lost === "later") {
        newest = false;
        if (!checkpoint.overwritten) {
          markLost(ctx, checkpoint, other.run_id, atIso);
          checkpoint.overwritten = true;
          checkpoint.overwritten_by_run = other.run_id;
        }
      }
    }
    // Saved again after the run that had overwritten it: the file is this run's once more.
    if (rewritten && newest && checkpoint.overwritten) {
      checkpointsDb.clearOverwritten(ctx.db, checkpoint.id);
      checkpoint.overwritten = false;
      checkpoint.overwritten_by_run = null;
    }
  }
  const stored = checkpointsDb.getStoredCheckpoint(ctx.db, checkpoint.id)!;
  return { checkpoint: checkpointsDb.publicCheckpoint(stored), created, rewritten };
}

const mtimeIso = (c: CheckpointIn) =>
  c.mtime !== undefined ? new Date(c.mtime * 1000).toISOString() : null;

/**
 * The file at a checkpoint's path vanished (`state: "gone"`, reported by the agent that ran
 * `run`): every record of that path on the run's host that held it, or an older file, is
 * marked gone, whichever run it belongs to. Returns how many were marked.
 */
export function checkpointGone(
  ctx: Context,
  run: StoredRun,
  c: CheckpointIn,
  atIso: string,
): number {
  return checkpointsDb.markGone(ctx.db, hostOfRun(ctx, run), c.path, mtimeIso(c), atIso).length;
}

function markLost(ctx: Context, lost: StoredCheckpoint, byRun: string, atIso: string): void {
  if (!checkpointsDb.markOverwritten(ctx.db, lost.id, byRun, atIso)) return;
  emitEvent(ctx, {
    type: "CHECKPOINT_OVERWRITTEN",
    severity: "warning",
    run_id: lost.run_id,
    message: `Checkpoint ${lost.id} "${lost.path}" of run ${lost.run_id}` +
      (lost.step !== null ? ` (step ${lost.step})` : "") +
      ` was overwritten by run ${byRun}, which saved to the same path: the file no longer ` +
      "holds this run's weights; give each run its own folder (GPUCTL_RUN_DIR)",
    data: { checkpoint_id: lost.id, path: lost.path, step: lost.step, overwritten_by_run: byRun },
  });
}
