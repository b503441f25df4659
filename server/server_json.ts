/**
 * Writes and removes `$GPUCTL_HOME/server.json` (see protocol/server_json.ts): the CLI on
 * this host reads it to find the server wherever `--port` put it.
 */
import { SERVER_JSON, type ServerJson, serverJson } from "../protocol/server_json.ts";
import { writePrivateFile } from "./private_files.ts";

/** The URL a local client uses for a server listening on `hostname:port`. */
export function localUrl(hostname: string, port: number): string {
  const host = hostname === "0.0.0.0" || hostname === "::" || hostname === "localhost"
    ? "127.0.0.1"
    : hostname.includes(":")
    ? `[${hostname}]`
    : hostname;
  return `http://${host}:${port}`;
}

/** Writes server.json (0600, atomically) for this server process. */
export async function writeServerJson(home: string, content: ServerJson): Promise<string> {
  const path = `${home}/${SERVER_JSON}`;
  await writePrivateFile(path, JSON.stringify(serverJson.parse(content), null, 2) + "\n");
  return path;
}

/**
 * Removes server.json when it is still this process's: a second server started on the same
 * home since then owns the file now.
 */
export async function removeServerJson(home: string, pid: number): Promise<void> {
  const path = `${home}/${SERVER_JSON}`;
  let text: string;
  try {
    text = await Deno.readTextFile(path);
  } catch (err) {
    if (err instanceof Deno.errors.NotFound) return;
    throw err;
  }
  if (ownerPid(text) !== pid && ownerPid(text) !== null) return;
  await Deno.remove(path).catch((err) => {
    if (!(err instanceof Deno.errors.NotFound)) throw err;
  });
}

function ownerPid(text: string): number | null {
  try {
    const parsed = serverJson.safeParse(JSON.parse(text));
    return parsed.success ? parsed.data.pid : null;
  } catch {
    return null;
  }
}
