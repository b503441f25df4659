/**
 * The permissions the agent runs with: exactly what it needs (processes, NVML through FFI,
 * the server's socket, its data and the jobs' files, its configuration, host facts). The
 * same list is in deno.json's `agent` task and the README; a test keeps them in step.
 */
export const AGENT_PERMISSIONS: readonly string[] = [
  "--allow-run",
  "--allow-ffi",
  "--allow-net",
  "--allow-read",
  "--allow-write",
  "--allow-env",
  "--allow-sys",
];
