/**
 * The framework tier's Python: a private virtualenv with the real training frameworks (torch
 * CPU, Lightning, Transformers + accelerate, TensorFlow + Keras, TensorBoard), made from the
 * machine's configured package index and cached between runs. Never the SDK's dependency:
 * only tests that run real framework scripts as jobs use it.
 */

/** What the framework tier installs, in one `pip install`. */
export const FRAMEWORK_PACKAGES = [
  "torch",
  "lightning",
  "transformers",
  "accelerate",
  "tensorflow-cpu",
  "keras",
  "tensorboard",
] as const;

/** Where the virtualenv lives: `$GPUCTL_FRAMEWORKS_VENV`, else `~/.cache/gpuctl-frameworks/venv`. */
export function frameworkVenvDir(): string {
  const configured = Deno.env.get("GPUCTL_FRAMEWORKS_VENV");
  if (configured) return configured;
  const home = Deno.env.get("HOME") ?? "/tmp";
  return `${home}/.cache/gpuctl-frameworks/venv`;
}

/** The marker `.ci/framework-venv` writes once every package imported. */
const READY_MARKER = ".gpuctl-ready";

/**
 * The venv's python when it is ready, else null with the reason (for `ignore` and the test
 * name). `.ci/framework-venv` creates it; tests never install on their own, so a plain
 * `deno task test` on a machine without it skips the tier and says how to enable it.
 */
export function frameworkPython(): { python: string; reason: null } | {
  python: null;
  reason: string;
} {
  const dir = frameworkVenvDir();
  try {
    Deno.statSync(`${dir}/${READY_MARKER}`);
    return { python: `${dir}/bin/python`, reason: null };
  } catch {
    return {
      python: null,
      reason: `no framework virtualenv at ${dir}: run .ci/framework-venv to create it`,
    };
  }
}
