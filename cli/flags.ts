// Flag declarations that many commands share, and the zod field helpers they are made of.

import { z } from "zod";
import type { FlagSpec } from "./define_command.ts";

/** A required text value: "is required" when missing, "must not be empty" when blank. */
export function requiredText(max = 200) {
  return z.string({ error: "is required" }).trim().min(1, "must not be empty").max(
    max,
    `must be at most ${max} characters`,
  );
}

/** An optional text value. */
export function optionalText(max = 200) {
  return requiredText(max).optional();
}

/** An optional whole number within bounds, read from its text. */
export function optionalInt(min: number, max: number) {
  return z.string().regex(/^-?\d+$/, "must be a whole number").transform(Number).pipe(
    z.number().min(min, `must be at least ${min}`).max(max, `must be at most ${max}`),
  ).optional();
}

/** An optional number (seconds and the like) within bounds, read from its text. */
export function optionalNumber(min: number, max: number) {
  return z.string().regex(/^\d+(\.\d+)?$/, "must be a number").transform(Number).pipe(
    z.number().min(min, `must be at least ${min}`).max(max, `must be at most ${max}`),
  ).optional();
}

/** A repeatable text flag (absent: an empty list). */
export function textList(max = 200) {
  return z.array(requiredText(max)).default([]);
}

/** `--server` and `--token`: every command that talks to a server has them. */
export const CONNECTION_FLAGS = {
  server: {
    schema: optionalText(2000),
    arg: "URL",
    help: "the gpuctl server (else GPUCTL_SERVER_URL, cli.yaml, server.json, server.yaml)",
  },
  token: {
    schema: optionalText(2000),
    arg: "TOKEN",
    help: "the token to use (else GPUCTL_TOKEN, cli.yaml, server.yaml)",
  },
} satisfies Record<string, FlagSpec>;

/** `--json`: the API's objects, unchanged. */
export const JSON_FLAG = {
  json: { schema: z.boolean().optional(), help: "print the API's JSON instead of a table" },
} satisfies Record<string, FlagSpec>;

/** `--limit` and `--cursor` of the list commands. */
export const PAGE_FLAGS = {
  limit: { schema: optionalInt(1, 1000), arg: "N", help: "at most N items (default 50)" },
  cursor: {
    schema: z.string().regex(/^\d{1,18}$/, "must be a cursor a list printed").optional(),
    arg: "CURSOR",
    help: "the next page: the cursor the previous page printed",
  },
} satisfies Record<string, FlagSpec>;

/** `--project` and `--experiment` of the list commands. */
export const SCOPE_FILTER_FLAGS = {
  project: { arg: "P", schema: optionalText(), help: "only this project's" },
  experiment: { arg: "E", schema: optionalText(), help: "only this experiment's" },
} satisfies Record<string, FlagSpec>;

/** What every command that prints data takes: `--json` and the connection. */
export const DATA_FLAGS = { ...JSON_FLAG, ...CONNECTION_FLAGS } satisfies Record<string, FlagSpec>;

/** What every list command takes: paging, `--json` and the connection. */
export const LIST_FLAGS = { ...PAGE_FLAGS, ...DATA_FLAGS } satisfies Record<string, FlagSpec>;

/** Items a list shows when `--limit` is not given. */
export const DEFAULT_LIMIT = 50;

/** The `limit` and `cursor` query of a list command's flags. */
export function pageQuery(flags: { limit?: number; cursor?: string }) {
  return { limit: flags.limit ?? DEFAULT_LIMIT, cursor: flags.cursor };
}
