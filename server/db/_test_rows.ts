/** Rows the store's own tests start from. */
import type { Database } from "./database.ts";
import { ensureProject } from "./projects.ts";
import { insertRun } from "./runs.ts";

/** A running SDK run `id` in project `p`, in its own transaction. */
export function addSdkRun(db: Database, id: string, name = id): void {
  db.tx(() => {
    ensureProject(db, "p", "t");
    insertRun(db, {
      id,
      job_id: null,
      attempt: 1,
      project: "p",
      experiment: null,
      name,
      source: "sdk",
      status: "RUNNING",
      config: {},
      env: {},
      max_steps: null,
      created_at: "t",
      started_at: "t",
    });
  });
}
