/**
 * The training repository the loop experiments on: a git repository in a temp dir holding
 * `train.py`, and one git work tree per code idea (`git worktree add`), so an edit under test
 * never changes the code of a run already queued or training from another folder. An edit is
 * left uncommitted: the run's snapshot records the commit and the diff.
 */
import { git } from "../../tests/_git.ts";

const TRAIN = new URL("./train.py", import.meta.url);

/** A change to one line of the recipe at the top of train.py. */
export interface CodeEdit {
  /** What the edit does, for names and notes: `cosine schedule`. */
  label: string;
  /** The line as it stands in the original script. */
  from: string;
  to: string;
}

/** The code ideas the loop may try, each a one-line change of train.py's recipe. */
export const CODE_EDITS: readonly CodeEdit[] = [
  { label: "cosine schedule", from: 'SCHEDULE = "constant"', to: 'SCHEDULE = "cosine"' },
  { label: "warmup 5 steps", from: "WARMUP_STEPS = 0", to: "WARMUP_STEPS = 5" },
  { label: "momentum 0.9", from: "MOMENTUM = 0.0", to: "MOMENTUM = 0.9" },
];

/** train.py's text with `edit` applied; an error when the line is not there. */
export function applyEdit(source: string, edit: CodeEdit): string {
  const line = new RegExp(`^${edit.from.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}$`, "m");
  if (!line.test(source)) throw new Error(`train.py has no line ${JSON.stringify(edit.from)}`);
  return source.replace(line, edit.to);
}

/** The repository and the work trees made from it. */
export class TrainingRepo {
  private trees = 0;
  private constructor(readonly root: string, readonly commit: string, readonly source: string) {}

  /** A fresh repository under `dir` with train.py committed on `main`. */
  static async create(dir: string): Promise<TrainingRepo> {
    const root = `${dir}/model`;
    await Deno.mkdir(root, { recursive: true });
    const source = await Deno.readTextFile(TRAIN);
    await git(root, "init", "-q", "-b", "main");
    await Deno.writeTextFile(`${root}/train.py`, source);
    await Deno.writeTextFile(`${root}/.gitignore`, "__pycache__/\n");
    await git(root, "add", ".");
    await git(root, "commit", "-q", "-m", "baseline recipe");
    const commit = (await git(root, "rev-parse", "HEAD")).trim();
    return new TrainingRepo(root, commit, source);
  }

  /**
   * A new work tree at the base commit whose train.py is `source` (the parent's code with the
   * edit applied): the folder a code idea's run and its later forks train in.
   */
  async workTree(source: string): Promise<string> {
    const path = `${this.root}-trees/idea-${++this.trees}`;
    await git(this.root, "worktree", "add", "-q", "--detach", path, this.commit);
    await Deno.writeTextFile(`${path}/train.py`, source);
    return path;
  }
}
