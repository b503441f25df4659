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

/**
 * Terminal escapes and control characters, which a console or terminal does not show: CSI
 * (`ESC [ … final`), OSC (`ESC ] … BEL|ESC \`), other two-character `ESC x` sequences, and
 * C0/C1 controls except tab and newline. A secret split by one of them reads whole on screen.
 */
const TERMINAL_ESCAPES =
  // deno-lint-ignore no-control-regex -- matching control characters is the point
  /\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[@-_]|[\x00-\x08\x0b-\x1f\x7f-\x9f]/g;

/** `text` as a screen shows it: terminal escapes and control characters removed. */
export function stripTerminalEscapes(text: string): string {
  return text.replace(TERMINAL_ESCAPES, "");
}

/**
 * `text` with each of `values` masked, also where terminal escapes split one: then the text is
 * kept as a screen shows it (escapes removed), masked. Text without a secret keeps its escapes.
 */
export function maskSecretText(text: string, values: readonly string[]): string {
  if (values.length === 0) return text;
  const direct = maskSecretValues(text, values);
  const shown = stripTerminalEscapes(direct);
  if (shown === direct) return direct;
  const masked = maskSecretValues(shown, values);
  return masked === shown ? direct : masked;
}

/**
 * Names of flags and keys that hold a secret (`--hf-token`, `api_key`, `DB_PASSWORD`): a word
 * of the name is token, secret, password, passwd or auth, or it ends in a key word (`api_key`,
 * `access-key`). Narrower than {@linkcode SECRET_NAME_PATTERN}, so `max_tokens` and
 * `metric_key` stay shown.
 */
export const SECRET_ARG_PATTERN =
  /(?:^|[-_.])(?:token|secret|password|passwd|auth|credentials?|(?:api|access|secret|private|auth)[-_]?key)(?:$|[-_.])/i;

const FLAG_WITH_VALUE = /^(--?[A-Za-z0-9][\w.-]*)=(.*)$/s;

/**
 * Command-line arguments with the value of each secret-named flag masked (`--hf-token X`,
 * `--api-key=X`), and each of `values` masked wherever it appears.
 */
export function maskSecretArgv(argv: readonly string[], values: readonly string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = maskSecretText(String(argv[i]), values);
    const withValue = FLAG_WITH_VALUE.exec(arg);
    if (withValue && SECRET_ARG_PATTERN.test(withValue[1].replace(/^-+/, ""))) {
      out.push(`${withValue[1]}=${SECRET_MASK}`);
      continue;
    }
    out.push(arg);
    if (
      /^--?[A-Za-z]/.test(arg) && SECRET_ARG_PATTERN.test(arg.replace(/^-+/, "")) &&
      i + 1 < argv.length && !/^--?[A-Za-z]/.test(String(argv[i + 1]))
    ) {
      out.push(SECRET_MASK);
      i++;
    }
  }
  return out;
}

/** A shell command line with secret-named flags' values and each of `values` masked. */
export function maskSecretCommandLine(line: string, values: readonly string[]): string {
  return maskSecretText(line, values).replace(
    /(^|\s)(--?[A-Za-z0-9][\w.-]*)(=|\s+)("[^"]*"|'[^']*'|\S+)/g,
    (all, lead: string, flag: string, sep: string) =>
      SECRET_ARG_PATTERN.test(flag.replace(/^-+/, "")) ? `${lead}${flag}${sep}${SECRET_MASK}` : all,
  );
}

/**
 * Free-form JSON (a run's config or environment) with secrets masked: the value of each key
 * named as a secret, each of `values` in any string, and secret flags in an `argv` list.
 */
export function maskSecretsDeep(value: unknown, values: readonly string[], depth = 0): unknown {
  if (typeof value === "string") return maskSecretText(value, values);
  if (depth > 64 || value === null || typeof value !== "object") return value;
  if (Array.isArray(value)) return value.map((v) => maskSecretsDeep(v, values, depth + 1));
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) {
    if (
      SECRET_ARG_PATTERN.test(k) && (typeof v === "string" || typeof v === "number") &&
      String(v).length > 0
    ) {
      out[k] = SECRET_MASK;
    } else if (k === "argv" && Array.isArray(v) && v.every((a) => typeof a === "string")) {
      out[k] = maskSecretArgv(v, values);
    } else {
      out[k] = maskSecretsDeep(v, values, depth + 1);
    }
  }
  return out;
}
