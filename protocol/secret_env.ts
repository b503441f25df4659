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
