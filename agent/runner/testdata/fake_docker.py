#!/usr/bin/env python3
"""A stand-in for the docker CLI in tests: no engine, the "container" is a local process.

Usage: fake_docker.py STATE_DIR ARGS...  (a test's `docker` shim passes STATE_DIR)

  run --name N [--label L] [--gpus G] [-v A:B] [-w DIR] [--env K=V]... [--env-file PATH] IMAGE ARGV...
      records its argv to STATE_DIR/N.argv.json, runs ARGV in DIR (in a new session)
      with only PATH and the --env variables (the image is ignored), and exits with its
      status like docker: 128 + N when killed by signal N, 127 when ARGV[0] is missing.
  kill [--signal S] N    signals the process group of the container N.
  inspect --format F N   prints the container's main pid ({{.State.Pid}}) or its state
                         ({{json .State}}) while it runs.
  rm [--force] N         nothing to remove: the "container" is gone once it ended.

The real engine (tests/docker_runner_test.ts) shows everything else; this stand-in is for
what it cannot show on a host without the NVIDIA container runtime: `--gpus`.
"""
import json
import os
import signal
import subprocess
import sys

NOT_RUNNING = "Error response from daemon: No such container: {}"


def pid_file(state, name):
    return os.path.join(state, name + ".pid")


def read_pid(state, name):
    try:
        with open(pid_file(state, name)) as f:
            return int(f.read().strip())
    except (OSError, ValueError):
        return None


def run(state, args):
    # Like an image's environment: PATH and HOME, then the --env variables.
    env = {"PATH": os.environ.get("PATH", ""), "HOME": os.environ.get("HOME", "/root")}
    name, workdir, i = None, None, 0
    while i < len(args) and args[i].startswith("-"):
        flag = args[i]
        if flag in ("--rm", "-i", "-t", "--init"):
            i += 1
            continue
        value = args[i + 1]
        if flag == "--name":
            name = value
        elif flag == "-w":
            workdir = value
        elif flag in ("--env", "-e"):
            key, _, val = value.partition("=")
            env[key] = val
        elif flag == "--env-file":
            with open(value) as f:
                for line in f.read().splitlines():
                    key, _, val = line.partition("=")
                    if key:
                        env[key] = val
        i += 2
    argv = args[i + 1:]
    with open(os.path.join(state, name + ".argv.json"), "w") as f:
        json.dump(["docker", "run"] + args, f)
    if read_pid(state, name) is not None:
        print(f'docker: Error response from daemon: Conflict. The container name "/{name}" is already in use.', file=sys.stderr)
        return 125
    try:
        proc = subprocess.Popen(argv, cwd=workdir, env=env, start_new_session=True, stdin=subprocess.DEVNULL)
    except FileNotFoundError:
        print(f'docker: Error response from daemon: failed to create task for container: exec: "{argv[0]}": executable file not found in $PATH: unknown.', file=sys.stderr)
        return 127
    except PermissionError:
        print(f'docker: Error response from daemon: exec: "{argv[0]}": permission denied: unknown.', file=sys.stderr)
        return 126
    with open(pid_file(state, name), "w") as f:
        f.write(str(proc.pid))

    def forward(signum, _frame):  # docker run's --sig-proxy
        try:
            os.killpg(proc.pid, signum)
        except ProcessLookupError:
            pass

    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, forward)
    code = proc.wait()
    os.unlink(pid_file(state, name))
    return 128 - code if code < 0 else code


def kill(state, args):
    sig, name = "KILL", args[-1]
    if args[0] in ("--signal", "-s"):
        sig = args[1]
    pid = read_pid(state, name)
    if pid is None:
        print(NOT_RUNNING.format(name), file=sys.stderr)
        return 1
    try:
        os.killpg(pid, getattr(signal, "SIG" + sig.removeprefix("SIG")))
    except ProcessLookupError:
        print(NOT_RUNNING.format(name), file=sys.stderr)
        return 1
    print(name)
    return 0


def inspect(state, args):
    pid = read_pid(state, args[-1])
    if pid is None:
        print("Error: No such object: " + args[-1], file=sys.stderr)
        return 1
    if "json" in args[-2]:
        print(json.dumps({"Running": True, "OOMKilled": False, "Pid": pid}))
    else:
        print(pid)
    return 0


def rm(state, args):
    return 0


def main():
    state, command, args = sys.argv[1], sys.argv[2], sys.argv[3:]
    with open(os.path.join(state, "calls.jsonl"), "a") as f:
        f.write(json.dumps([command] + args) + "\n")
    handlers = {"run": run, "kill": kill, "inspect": inspect, "rm": rm}
    if command not in handlers:
        print(f"fake docker: unsupported command {command!r}", file=sys.stderr)
        return 1
    return handlers[command](state, args)


if __name__ == "__main__":
    sys.exit(main())
