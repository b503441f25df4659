/** A context over an in-memory store with a fixed clock, and runs made the way the SDK makes them. */
import { type Context, createContext } from "../context.ts";
import { openDatabase } from "../db/mod.ts";
import type { SdkLogBatch, SdkRunRegistration } from "../../protocol/rest/sdk.ts";
import { ingestBatch, registerSdkRun } from "./service.ts";

/** A fresh store; the clock starts at 2026-01-01T00:00:00Z and moves a second per call. */
export function testContext(): Context {
  let ticks = 0;
  let ids = 0;
  return createContext({
    db: openDatabase(":memory:"),
    now: () => new Date(Date.UTC(2026, 0, 1) + 1000 * ticks++),
    newId: (prefix) => `${prefix}-${String(++ids).padStart(4, "0")}`,
    backupDir: "/nonexistent",
    seriesCache: false,
  });
}

/** Registers an SDK run and, when given, stores one batch for it; returns its id. */
export function sdkRun(ctx: Context, r: SdkRunRegistration, batch?: SdkLogBatch): string {
  const { run } = registerSdkRun(ctx, r);
  if (batch) ingestBatch(ctx, run.id, batch);
  return run.id;
}
