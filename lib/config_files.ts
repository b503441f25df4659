/** What the server, the agent and the CLI share about their config files under GPUCTL_HOME. */
import type { z } from "zod";
import { parse as parseYaml } from "yaml";

/** The gpuctl home: GPUCTL_HOME, else ~/.gpuctl. */
export function gpuctlHome(env: { GPUCTL_HOME?: string; HOME?: string }): string {
  if (env.GPUCTL_HOME) return env.GPUCTL_HOME;
  if (!env.HOME) {
    throw new Error("Cannot find the gpuctl home: neither GPUCTL_HOME nor HOME is set");
  }
  return `${env.HOME}/.gpuctl`;
}

/** Parses a YAML config file's text with a schema; errors name the file and the field. */
export function parseYamlConfig<S extends z.ZodType>(
  text: string,
  path: string,
  schema: S,
): z.infer<S> {
  let doc: unknown;
  try {
    doc = parseYaml(text) ?? {};
  } catch (err) {
    throw new Error(`Cannot read "${path}": it is not valid YAML: ${(err as Error).message}`, {
      cause: err,
    });
  }
  const parsed = schema.safeParse(doc);
  if (!parsed.success) {
    const i = parsed.error.issues[0];
    throw new Error(`Cannot use "${path}": ${i.path.join(".") || "(top level)"}: ${i.message}`);
  }
  return parsed.data;
}
