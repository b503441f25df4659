/**
 * `<data_dir>/state.json`: the attempts this agent runs, with what it needs to reattach to
 * them after its own restart. Written whole, atomically (temp file + rename), after every
 * change; read once at start, tolerating a damaged file (its attempts are then unknown).
 */
import { z } from "zod";
import { dispatchSpec } from "../protocol/agent.ts";
import type { CheckpointWatcherState } from "./checkpoints/mod.ts";
import type { HandleState } from "./runner/types.ts";
import type { TailerState } from "./tensorboard/mod.ts";
import { RUNNER_KINDS } from "../protocol/vocabulary.ts";

/** One attempt as persisted. */
export interface PersistedAttempt {
  spec: z.infer<typeof dispatchSpec>;
  /** The runner's `state()`; null while the runner is starting it. */
  handle: HandleState | null;
  state: "STARTING" | "RUNNING" | "STOPPING";
  /** Whether `job_state RUNNING` was spooled. */
  running_sent: boolean;
  /** The last output line seq put in a spooled `logs` frame. */
  last_line_seq: number;
  tensorboard: TailerState | null;
  checkpoints: CheckpointWatcherState | null;
  /** The step of the next system-metrics sample. */
  sys_step: number;
  /** The grace period of a cancel in progress (repeated after a restart), else null. */
  cancel_grace_s: number | null;
}

/** The whole file. */
export interface AgentState {
  version: 1;
  attempts: PersistedAttempt[];
}

const persistedAttempt = z.object({
  spec: dispatchSpec,
  handle: z.looseObject({ run_id: z.string(), runner: z.enum(RUNNER_KINDS) })
    .nullable(),
  state: z.enum(["STARTING", "RUNNING", "STOPPING"]),
  running_sent: z.boolean(),
  last_line_seq: z.number().int().min(0),
  // Owned by their modules, which tolerate a doubtful shape themselves.
  tensorboard: z.custom<TailerState>((v) => typeof v === "object").nullable(),
  checkpoints: z.custom<CheckpointWatcherState>((v) => typeof v === "object").nullable(),
  sys_step: z.number().int().min(0),
  cancel_grace_s: z.number().min(0).nullable().default(null),
});

const agentState = z.object({ version: z.literal(1), attempts: z.array(z.unknown()) });

/** What reading the file found: attempts, plus a sentence for each one that was unreadable. */
export interface LoadedState {
  attempts: PersistedAttempt[];
  problems: string[];
}

/** Reads `path`; a missing file holds no attempts, a damaged one is reported, never thrown. */
export async function loadState(path: string): Promise<LoadedState> {
  let text: string;
  try {
    text = await Deno.readTextFile(path);
  } catch (err) {
    if (err instanceof Deno.errors.NotFound) return { attempts: [], problems: [] };
    return { attempts: [], problems: [`Cannot read ${path}: ${(err as Error).message}`] };
  }
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (err) {
    return { attempts: [], problems: [`Cannot parse ${path}: ${(err as Error).message}`] };
  }
  const file = agentState.safeParse(raw);
  if (!file.success) {
    return { attempts: [], problems: [`Cannot use ${path}: ${file.error.issues[0].message}`] };
  }
  const attempts: PersistedAttempt[] = [];
  const problems: string[] = [];
  for (const [i, entry] of file.data.attempts.entries()) {
    const parsed = persistedAttempt.safeParse(entry);
    if (parsed.success) attempts.push(parsed.data as PersistedAttempt);
    else {
      const issue = parsed.error.issues[0];
      problems.push(
        `Cannot use attempt ${i} of ${path}: field "${issue.path.join(".")}" ${issue.message}`,
      );
    }
  }
  return { attempts, problems };
}

/** Writes the state atomically. */
export async function saveState(path: string, state: AgentState): Promise<void> {
  const tmp = `${path}.tmp`;
  await Deno.writeTextFile(tmp, JSON.stringify(state));
  await Deno.rename(tmp, path);
}

/**
 * Serialises saves of a changing state: a save asked for while one is writing runs once more
 * afterwards (with the newest state), so the file never falls behind and writes never pile up.
 */
export class StateWriter {
  #path: string;
  #snapshot: () => AgentState;
  #writing: Promise<void> | null = null;
  #again = false;
  #onError: (err: unknown) => void;

  constructor(path: string, snapshot: () => AgentState, onError: (err: unknown) => void) {
    this.#path = path;
    this.#snapshot = snapshot;
    this.#onError = onError;
  }

  /** Saves the current state soon; resolves when a save that includes it finished. */
  save(): Promise<void> {
    if (this.#writing) {
      // The loop below writes once more before its promise resolves.
      this.#again = true;
      return this.#writing;
    }
    this.#writing = this.#loop();
    return this.#writing;
  }

  async #loop(): Promise<void> {
    try {
      do {
        this.#again = false;
        try {
          await saveState(this.#path, this.#snapshot());
        } catch (err) {
          this.#onError(err);
        }
      } while (this.#again);
    } finally {
      this.#writing = null;
    }
  }
}
