/**
 * Test support: builds the C stand-in for libnvidia-ml (testdata/fake_nvml.c) and sets
 * the environment variables it reads in nvmlInit_v2.
 */
import { fileURLToPath } from "node:url";

const SOURCE = fileURLToPath(new URL("./testdata/fake_nvml.c", import.meta.url));

/** Every variable the stand-in reads; see the header of testdata/fake_nvml.c. */
const FAKE_NVML_VARIABLES = [
  "FAKE_NVML_INIT_ERROR",
  "FAKE_NVML_GPUS",
  "FAKE_NVML_NOT_SUPPORTED",
  "FAKE_NVML_FAILING",
  "FAKE_NVML_COMPUTE_PROCS",
  "FAKE_NVML_GRAPHICS_PROCS",
  "FAKE_NVML_MANY_PROCS",
  "FAKE_NVML_LOST",
] as const;

/** A stand-in variable and its value. */
export type FakeNvmlEnv = Partial<Record<(typeof FAKE_NVML_VARIABLES)[number], string>>;

/**
 * Compiles the stand-in into `<dir>/<variant>/libnvidia-ml.so.1` and returns that path.
 * `v1Only` leaves out the _v3 process queries, as in drivers older than 450.
 */
export async function compileFakeNvml(
  dir: string,
  options: { v1Only?: boolean } = {},
): Promise<string> {
  const outDir = `${dir}/${options.v1Only ? "v1" : "v3"}`;
  await Deno.mkdir(outDir, { recursive: true });
  const out = `${outDir}/libnvidia-ml.so.1`;
  const args = ["-shared", "-fPIC", "-Wall", "-Werror", "-o", out, SOURCE];
  if (options.v1Only) args.unshift("-DFAKE_NVML_V1_ONLY");
  let result: Deno.CommandOutput;
  try {
    result = await new Deno.Command("cc", { args, stdout: "null", stderr: "piped" }).output();
  } catch (err) {
    throw new Error(
      `Cannot compile the NVML stand-in: "cc" could not be run; install a C compiler (gcc)`,
      { cause: err },
    );
  }
  if (!result.success) {
    const stderr = new TextDecoder().decode(result.stderr);
    throw new Error(`Cannot compile the NVML stand-in "${SOURCE}": cc said:\n${stderr}`);
  }
  return out;
}

/**
 * Replaces the stand-in's configuration: unsets every FAKE_NVML_* variable, then sets
 * `env`. The stand-in reads them in nvmlInit_v2 (FAKE_NVML_LOST on every call), in this
 * process, so set them before openNvml().
 */
export function setFakeNvmlEnv(env: FakeNvmlEnv = {}): void {
  for (const name of FAKE_NVML_VARIABLES) Deno.env.delete(name);
  for (const [name, value] of Object.entries(env)) Deno.env.set(name, value);
}
