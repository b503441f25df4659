/** Hugging Face Hub causes: a gated or private repo refused (401/403), the hub unreachable or offline. */
import {
  type CauseEntry,
  excerpt,
  exitCodeEvidence,
  findLine,
  logEvidence,
  present,
} from "./cause.ts";

// The Hugging Face Hub refused the request: a gated or private repository without access, a
// missing or invalid token, a repository id that does not exist.
const HUB_AUTH = [
  /GatedRepoError:/,
  /Cannot access gated repo for url/,
  /You are trying to access a gated repo/,
  /is restricted and you are not in the authorized list/,
  /\b40[13] Client Error\b.*(?:huggingface\.co|hf\.co|Request ID|gated|Repository Not Found)/,
  /RepositoryNotFoundError/,
  /Invalid user token|Invalid credentials in Authorization header/,
];

/** The Hugging Face Hub refused access: a gated or private repo, a missing or bad token. */
export const HUB_AUTH_CAUSE: CauseEntry = {
  id: "hub_auth",
  title: "Hugging Face Hub access refused",
  retry: "fails_again",
  retry_advice: "A retry will fail the same way: the Hub refuses the same request with the same " +
    "token until access is granted or the token is fixed.",
  fixes: [
    "Request access on the model's page (gated models such as Llama, Gemma, FLUX need it) " +
    "with the account whose token the job uses",
    "Give the job a token: add `HF_TOKEN` to the job's `env` and list it in `secret_env` " +
    "(a login in your own shell does not reach the job), with at least read access",
    "Check the repository id and revision for typos: a private or missing repo also answers " +
    "401/404",
  ],
  match(facts) {
    const hit = findLine(facts, HUB_AUTH);
    if (!hit) return null;
    const repo = findLine(facts, [/Access to model ([\w.-]+\/[\w.-]+) is restricted/])?.match[1] ??
      /huggingface\.co\/(?!api\/)([\w.-]+\/[\w.-]+)/.exec(hit.line.text)?.[1];
    return {
      confidence: 0.94,
      likely_cause: `The Hugging Face Hub refused access${repo ? ` to "${repo}"` : ""}: the ` +
        `repository is gated or private, or the job has no valid token: ` +
        `"${excerpt(hit.line.raw, 160)}"`,
      evidence: present(logEvidence(hit.line), exitCodeEvidence(facts)),
    };
  },
};

const HUB_HOST = /huggingface\.co|hf\.co\b/;
// The Hub could not be reached: timeouts, refused or failed connections, name resolution,
// and the Transformers/Hub messages that say so when the file is not cached either.
const HUB_UNREACHABLE = [
  /We couldn't connect to '?https?:\/\/huggingface\.co/,
  /LocalEntryNotFoundError/,
  /cannot find the requested files in the (?:local|disk) cache/,
  /Connection error, and we cannot find the requested files/,
  /OfflineModeIsEnabled/,
  /(?:ReadTimeout|ConnectTimeout|MaxRetryError|ConnectionError|NewConnectionError|Read timed out|Max retries exceeded|timed out|Network is unreachable|Name or service not known|Temporary failure in name resolution).*(?:huggingface\.co|hf\.co)/,
  /HTTPSConnectionPool\(host='[^']*(?:huggingface\.co|hf\.co)'/,
];

/** The Hugging Face Hub could not be reached (a timeout, no network, offline mode). */
export const HUB_UNREACHABLE_CAUSE: CauseEntry = {
  id: "hub_unreachable",
  title: "Hugging Face Hub unreachable",
  retry: "may_help",
  retry_advice: "A retry may help: the Hub (or the network to it) did not answer in time, " +
    "which is often transient. If the node has no route to the Hub at all, cache the files " +
    "first; a retry there fails the same way.",
  fixes: [
    "Download the model and dataset once where the network works (`huggingface-cli download " +
    "<repo>`) into a cache every node sees (`HF_HOME` in the job's env), then set " +
    "`HF_HUB_OFFLINE=1`",
    "Behind a proxy or a firewall, set `HTTPS_PROXY` in the job's env, or `HF_ENDPOINT` to a " +
    "mirror",
    "Raise the download timeout (`HF_HUB_DOWNLOAD_TIMEOUT=60`, `HF_HUB_ETAG_TIMEOUT=60`)",
  ],
  match(facts) {
    const hit = findLine(facts, HUB_UNREACHABLE);
    if (!hit) return null;
    const offline = /OfflineModeIsEnabled/.test(hit.line.text);
    const rank = /^\s*\[rank(\d+)\]/.exec(hit.line.raw)?.[1];
    return {
      confidence: HUB_HOST.test(hit.line.text) || /LocalEntry|cached|cache/.test(hit.line.text)
        ? 0.91
        : 0.85,
      likely_cause: offline
        ? `Offline mode is on (HF_HUB_OFFLINE) and the files are not in the cache: ` +
          `"${excerpt(hit.line.raw, 160)}"`
        : `The Hugging Face Hub could not be reached${rank ? ` from rank ${rank}` : ""}: ` +
          `"${excerpt(hit.line.raw, 160)}"`,
      evidence: present(logEvidence(hit.line), exitCodeEvidence(facts)),
      ...(offline
        ? {
          retry: "fails_again" as const,
          retry_advice: "A retry will fail the same way: offline mode stays on and the files " +
            "are still not in the cache. Download them first or turn offline mode off.",
        }
        : {}),
    };
  },
};
