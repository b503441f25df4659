/**
 * Which of a job's variables are secret, and how they are shown. A secret's value reaches
 * the job's process and nothing else: every API answer, event and log line shows the mask,
 * whatever the caller's scope (a write token would see no more than it submitted, and
 * masking for everyone means no face can forget a scope check).
 */

/** What a secret value is shown as. */
export const SECRET_MASK = "••••••";

/** Names that are secret whether or not `secret_env` lists them (`HF_TOKEN`, `WANDB_API_KEY` …). */
export const SECRET_NAME_PATTERN = /TOKEN|KEY|SECRET|PASSWORD/i;

/** Whether the variable `name` is secret, given the job's `secret_env`. */
export function isSecretEnvName(name: string, secretEnv: readonly string[]): boolean {
  return SECRET_NAME_PATTERN.test(name) || secretEnv.includes(name);
}

/** `env` with every secret value replaced by {@linkcode SECRET_MASK}. */
export function maskSecretEnv(
  env: Record<string, string>,
  secretEnv: readonly string[],
): Record<string, string> {
  const shown: Record<string, string> = {};
  for (const [name, value] of Object.entries(env)) {
    shown[name] = isSecretEnvName(name, secretEnv) ? SECRET_MASK : value;
  }
  return shown;
}

/** Shorter secret values are not masked in output: they would mask ordinary text. */
export const MIN_MASKED_OUTPUT_LENGTH = 4;

/** The values of a job's secret variables that its output is masked for, longest first. */
export function secretValues(env: Record<string, string>, secretEnv: readonly string[]): string[] {
  const values = Object.entries(env)
    .filter(([name, value]) =>
      isSecretEnvName(name, secretEnv) && value.length >= MIN_MASKED_OUTPUT_LENGTH
    )
    .map(([, value]) => value);
  return [...new Set(values)].sort((a, b) => b.length - a.length);
}

/** `text` with every occurrence of each of `values` replaced by {@linkcode SECRET_MASK}. */
export function maskSecretValues(text: string, values: readonly string[]): string {
  let out = text;
  for (const value of values) {
    if (out.includes(value)) out = out.split(value).join(SECRET_MASK);
  }
  return out;
}
