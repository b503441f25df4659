// deno-lint-ignore-file no-console -- a benchmark reports on the console
/**
 * The peers' Python: a private virtualenv with TensorBoard, torch (CPU), Optuna and Ray Tune,
 * installed with plain `pip install` from the machine's configured index (`pip config list`),
 * never into the project's own test path. The framework tier's venv is used as it is when it
 * already has them; else `$GPUCTL_PEERS_VENV` or `~/.cache/gpuctl-peers/venv` is made (once).
 */

/** The import name of each package, and what `pip install` is given for it. */
export const PACKAGES = {
  tensorboard: "tensorboard",
  torch: "torch",
  optuna: "optuna",
  ray: "ray[tune]",
} as const;
export type Package = keyof typeof PACKAGES;

export interface PeersPython {
  python: string;
  /** Each package's version, or null when it does not import here. */
  versions: Record<Package, string | null>;
  /** Why a package is missing (the install's last words), by package. */
  missing: Partial<Record<Package, string>>;
}

const PROBE = `
import importlib, json
out = {}
for name, module in [("tensorboard", "tensorboard"), ("torch", "torch"), ("optuna", "optuna"), ("ray", "ray.tune")]:
    try:
        m = importlib.import_module(module)
        out[name] = getattr(importlib.import_module(module.split(".")[0]), "__version__", "?")
    except Exception:
        out[name] = None
print(json.dumps(out))
`;

async function probe(python: string): Promise<Record<Package, string | null> | null> {
  try {
    const out = await new Deno.Command(python, {
      args: ["-c", PROBE],
      stdout: "piped",
      stderr: "null",
      env: { TF_CPP_MIN_LOG_LEVEL: "3" },
    }).output();
    if (!out.success) return null;
    return JSON.parse(new TextDecoder().decode(out.stdout).trim().split("\n").at(-1)!);
  } catch {
    return null; // no such interpreter
  }
}

const complete = (v: Record<Package, string | null> | null) =>
  v !== null && Object.values(v).every((x) => x !== null);

/** Finds or makes the venv; installs what is missing, one package at a time. */
export async function peersPython(env: Record<string, string | undefined>): Promise<PeersPython> {
  const home = env.HOME ?? "/root";
  const frameworks = `${env.GPUCTL_FRAMEWORKS_VENV ?? `${home}/.cache/gpuctl-frameworks/venv`}`;
  const own = env.GPUCTL_PEERS_VENV ?? `${home}/.cache/gpuctl-peers/venv`;
  const existing = await probe(`${frameworks}/bin/python`);
  if (complete(existing)) {
    return { python: `${frameworks}/bin/python`, versions: existing!, missing: {} };
  }
  const python = `${own}/bin/python`;
  let versions = await probe(python);
  if (versions === null) {
    console.log(`peers: making a virtualenv at ${own}`);
    await Deno.mkdir(own.replace(/\/[^/]+$/, ""), { recursive: true });
    const made = await new Deno.Command("python3", { args: ["-m", "venv", own] }).output();
    if (!made.success) throw new Error(`python3 -m venv ${own} failed`);
    versions = { tensorboard: null, torch: null, optuna: null, ray: null };
  }
  const missing: Partial<Record<Package, string>> = {};
  for (const name of Object.keys(PACKAGES) as Package[]) {
    if (versions[name] !== null) continue;
    console.log(`peers: pip install ${PACKAGES[name]}`);
    // The default index is unreachable here: fail over to the configured ones at once.
    const out = await new Deno.Command(`${own}/bin/pip`, {
      args: ["install", "--quiet", PACKAGES[name]],
      env: { PIP_RETRIES: "0" },
      stdout: "piped",
      stderr: "piped",
    }).output();
    if (!out.success) {
      const words = new TextDecoder().decode(out.stderr).split("\n")
        .filter((l) => l.trim() && !l.includes("is neither a file nor a directory"));
      missing[name] = words.at(-1)?.trim() ?? "pip install failed";
    }
  }
  versions = (await probe(python)) ?? versions;
  for (const name of Object.keys(PACKAGES) as Package[]) {
    if (versions[name] === null) missing[name] ??= "installed, but does not import";
  }
  return { python, versions, missing };
}
