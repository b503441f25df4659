/**
 * The user jobs run as (`job_user` in agent.yaml). An agent that runs as root starts each
 * job's command through `setpriv` (util-linux), which changes the real and effective user
 * and group and the supplementary groups and then execs the command in place: no new
 * process, session or group, so cancel still reaches the whole tree through the group.
 * The wrapper around the job stays the agent's, so the output and exit-status files in the
 * run dir are written by the agent's user and need not be readable by the job.
 */

/** A user from the host's user database. */
export interface JobUser {
  name: string;
  uid: number;
  gid: number;
  home: string;
  shell: string;
}

/** Parses one `passwd` line (`name:x:uid:gid:gecos:home:shell`); null when malformed. */
export function parsePasswdLine(line: string): JobUser | null {
  const f = line.trim().split(":");
  if (f.length < 7) return null;
  const uid = Number(f[2]);
  const gid = Number(f[3]);
  if (f[0] === "" || !Number.isInteger(uid) || !Number.isInteger(gid) || f[2] === "") return null;
  return { name: f[0], uid, gid, home: f[5], shell: f[6] };
}

/** Looks a user up with `getent passwd` (so NSS sources such as LDAP count); null: none. */
export function lookupUser(name: string): JobUser | null {
  try {
    const out = new Deno.Command("getent", {
      args: ["passwd", name],
      stdin: "null",
      stdout: "piped",
      stderr: "null",
    }).outputSync();
    if (!out.success) return null;
    return parsePasswdLine(new TextDecoder().decode(out.stdout).split("\n")[0]);
  } catch {
    return null;
  }
}

/** The argv prefix that runs a command as `user` (the agent must be root). */
export function switchUserArgv(setpriv: string, user: JobUser): string[] {
  return [setpriv, `--reuid=${user.uid}`, `--regid=${user.gid}`, "--init-groups", "--"];
}

/**
 * Whether an agent running as `agentUid` must switch to `user` for jobs, or why it cannot.
 * Only root can: other agents may name only themselves.
 */
export function userSwitch(
  user: JobUser,
  agentUid: number | null,
): { switch: boolean; problem: string | null } {
  if (agentUid === user.uid) return { switch: false, problem: null };
  if (agentUid === 0) return { switch: true, problem: null };
  return {
    switch: false,
    problem: `the agent runs as uid ${agentUid ?? "unknown"}, and only an agent running as ` +
      `root can start jobs as "${user.name}" (uid ${user.uid}): run the agent as root, or ` +
      `remove job_user to run jobs as the agent's own user`,
  };
}
