/** Input fields the tools share. */
import { z } from "zod";

/** A gpuctl id (job, run, checkpoint). */
export const idField = (what: string) =>
  z.string().regex(/^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/, "must be a gpuctl id").describe(what);

export const runIdField = () => idField('The run id, e.g. "r-3kx9q2m7ta"');
