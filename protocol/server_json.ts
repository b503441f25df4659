/**
 * `$GPUCTL_HOME/server.json`: where the server of this home is listening right now. The
 * server writes it once it listens and removes it on a clean exit; the CLI on the same host
 * reads it, so a server started with `--port N` is found without configuring anything.
 */
import { z } from "zod";

/** The file's name inside GPUCTL_HOME. */
export const SERVER_JSON = "server.json";

/** The file's content. */
export const serverJson = z.object({
  /** The loopback URL of the server, e.g. `http://127.0.0.1:8600`. */
  url: z.url(),
  /** The server process; a file whose process is gone was left by a crash. */
  pid: z.number().int().min(1),
  started_at: z.iso.datetime({ offset: true }),
});
export type ServerJson = z.infer<typeof serverJson>;
