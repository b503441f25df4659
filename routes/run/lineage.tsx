/**
 * The console's provenance and lineage parts: a run's Code tab (its commit and its diff, each
 * line classed as added, removed, hunk or header — colours come from style.css, never inline
 * styles, for the strict CSP), its mark and notes with their forms, and an experiment's tree.
 */
import type { Lineage, LineageNode, Note } from "../../protocol/lineage.ts";
import type { Provenance } from "../../protocol/provenance.ts";
import type { RunMark } from "../../protocol/objects.ts";
import { fmtBytes, fmtMetric } from "../../islands/_format.ts";
import { Id, RelTime, StatusBadge } from "../../islands/_ui.tsx";
import { markRequest, noteRequest } from "../../protocol/lineage.ts";
import { confirmedAction } from "../../server/console/actions.tsx";
import type { PageRoute } from "../../server/console/page.tsx";
import { pathSegment } from "../../server/console/shell.tsx";
import { validationError } from "../../server/errors.ts";
import { addNote, markRun } from "../../server/lineage/service.ts";

/** The class of one line of a git diff. */
export function diffLineClass(line: string): string {
  if (line.startsWith("diff --git ")) return "diff-file";
  if (line.startsWith("@@")) return "diff-hunk";
  if (
    /^(index |--- |\+\+\+ |new file|deleted file|old mode|new mode|similarity|rename |Binary files)/
      .test(line)
  ) {
    return "diff-meta";
  }
  if (line.startsWith("+")) return "diff-add";
  if (line.startsWith("-")) return "diff-del";
  return "diff-ctx";
}

/** A diff's lines with their classes; a binary patch's base85 lines become one summary line. */
export function diffLines(diff: string): { text: string; cls: string }[] {
  const out: { text: string; cls: string }[] = [];
  let binary = 0;
  for (const line of diff.replace(/\n$/, "").split("\n")) {
    if (binary > 0) {
      if (line === "") {
        out.push({ text: `(binary patch, ${binary - 1} lines)`, cls: "diff-meta" });
        binary = 0;
      } else binary++;
      continue;
    }
    if (line === "GIT binary patch") {
      binary = 1;
      continue;
    }
    out.push({ text: line, cls: diffLineClass(line) });
  }
  if (binary > 0) out.push({ text: `(binary patch, ${binary - 1} lines)`, cls: "diff-meta" });
  return out;
}

/** The Code tab. */
export function CodeTab({ code, runId }: { code: Provenance | null; runId: string }) {
  if (code === null) {
    return (
      <section class="panel code-tab">
        <p class="muted empty">
          No code was recorded for this run: its agent takes a snapshot of a job's working dir as it
          starts it (runs from the SDK or an import have none).
        </p>
      </section>
    );
  }
  const g = code.git;
  return (
    <section class="panel code-tab">
      <dl class="facts">
        <dt>working dir</dt>
        <dd>
          <code>{code.working_dir}</code>
        </dd>
        {g && (
          <>
            <dt>commit</dt>
            <dd>
              <code class="commit">{g.commit ?? "no commit yet"}</code>
              {g.branch && " "}
              {g.branch && <span class="muted">on {g.branch}</span>}
            </dd>
            <dt>remote</dt>
            <dd>{g.remote_url ? <code>{g.remote_url}</code> : <span class="muted">none</span>}</dd>
            <dt>changes</dt>
            <dd>
              {g.diff === null
                ? (g.diff_omitted ?? "none")
                : g.diff === ""
                ? "none: the work tree matched the commit"
                : `${fmtBytes(g.diff_bytes)} of diff against the commit`}
            </dd>
            <dt>untracked</dt>
            <dd>
              {g.untracked_count === 0 ? <span class="muted">none</span> : (
                <span>
                  {g.untracked_count} file{g.untracked_count === 1 ? "" : "s"}, not recorded:{" "}
                  {g.untracked.slice(0, 20).map((f, i) => (
                    <>
                      {i > 0 && ", "}
                      <code>{f}</code>
                    </>
                  ))}
                  {g.untracked_count > 20 && " …"}
                </span>
              )}
            </dd>
          </>
        )}
        {code.files && (
          <>
            <dt>files</dt>
            <dd>
              not a git work tree: SHA-256 <code>{code.files.sha256.slice(0, 16)}</code> of{" "}
              {code.files.files.map((f, i) => (
                <>
                  {i > 0 && ", "}
                  <code title={f.sha256}>{f.path}</code>
                </>
              ))}
            </dd>
          </>
        )}
        <dt>recreate</dt>
        <dd>
          <code class="cmd">gpuctl run checkout {runId} ./{runId}</code>
        </dd>
      </dl>
      {code.problems.length > 0 && (
        <ul class="small muted">
          {code.problems.map((p, i) => <li key={i}>{p}</li>)}
        </ul>
      )}
      {g?.diff && (
        <pre class="diff" aria-label="The diff against the commit">
          {diffLines(g.diff).map((l, i) => <span key={i} class={l.cls}>{`${l.text}\n`}</span>)}
        </pre>
      )}
    </section>
  );
}

function MarkBadge({ mark }: { mark: RunMark }) {
  return <span class={`mark mark-${mark.mark}`} title={mark.reason}>{mark.mark}</span>;
}

/** The run's place in its tree: parent, mark, notes; with write, the forms to mark and note. */
export function LineagePanel({ runId, parent, mark, notes, canWrite, next, now }: {
  runId: string;
  parent: string | null;
  mark: RunMark | null;
  notes: Note[];
  canWrite: boolean;
  next: string;
  now: number;
}) {
  const base = `/runs/${encodeURIComponent(runId)}`;
  return (
    <section class="panel lineage-panel">
      <h2>Lineage</h2>
      <p>
        {parent
          ? (
            <>
              child of <a href={`/runs/${encodeURIComponent(parent)}`}>{parent}</a>
            </>
          )
          : <span class="muted">a root: no parent run</span>}
        {mark && (
          <>
            {" · "}
            <MarkBadge mark={mark} /> {mark.reason}{" "}
            <span class="muted small">
              by {mark.by}, <RelTime at={mark.at} now={now} />
            </span>
          </>
        )}
      </p>
      {notes.length > 0 && (
        <ul class="notes">
          {notes.map((n) => (
            <li>
              <span class="muted small">
                {n.author}, <RelTime at={n.created_at} now={now} />:
              </span>{" "}
              {n.text}
            </li>
          ))}
        </ul>
      )}
      {canWrite && (
        <div class="lineage-forms">
          <form method="post" action={`${base}/mark`} class="inline-form">
            <input type="hidden" name="next" value={next} />
            <label class="sr-only" for="mark-verdict">Mark</label>
            <select id="mark-verdict" name="mark" class="small">
              <option value="kept">kept</option>
              <option value="discarded">discarded</option>
            </select>
            <label class="sr-only" for="mark-reason">Reason</label>
            <input
              id="mark-reason"
              name="reason"
              class="small"
              placeholder="why, in one line"
              required
            />
            <button type="submit" class="small" data-action="mark">Mark</button>
          </form>
          <form method="post" action={`${base}/note`} class="inline-form">
            <input type="hidden" name="next" value={next} />
            <label class="sr-only" for="note-text">Note</label>
            <input id="note-text" name="text" class="small" placeholder="a note" required />
            <button type="submit" class="small" data-action="note">Add note</button>
          </form>
        </div>
      )}
    </section>
  );
}

function TreeNode({ n }: { n: LineageNode }) {
  const pm = n.primary_metric;
  const changed = n.fork_overrides
    ? Object.entries({ ...n.fork_overrides.args, ...n.fork_overrides.config })
      .map(([k, v]) => `${k}=${typeof v === "string" ? v : JSON.stringify(v)}`).join(" ")
    : "";
  return (
    <li data-tree-run={n.run_id} class={n.mark ? `marked-${n.mark.mark}` : undefined}>
      <span class="tree-node">
        <StatusBadge status={n.status} />{" "}
        <a href={`/runs/${encodeURIComponent(n.run_id)}`}>{n.name}</a> <Id id={n.run_id} />
        {changed && <code class="small">{changed}</code>}
        {pm && (
          <span class="metric">
            {pm.key} {fmtMetric(pm.best ?? pm.latest)}
          </span>
        )}
        {n.mark && (
          <>
            {" "}
            <MarkBadge mark={n.mark} /> <span class="muted small">{n.mark.reason}</span>
          </>
        )}
        {n.resume_from && <span class="muted small">from checkpoint {n.resume_from}</span>}
      </span>
      {n.children.length > 0 && (
        <ul>
          {n.children.map((c) => <TreeNode key={c.run_id} n={c} />)}
        </ul>
      )}
    </li>
  );
}

/** An experiment's runs as a tree, with its notes. */
export function LineageTree({ tree, notes, now }: { tree: Lineage; notes: Note[]; now: number }) {
  return (
    <section class="panel lineage-tree">
      <h2>
        Lineage{" "}
        <span class="muted small">
          {tree.runs} runs · {tree.kept} kept · {tree.discarded} discarded
          {tree.best_kept && (
            <>
              {" · best kept "}
              <a href={`/runs/${encodeURIComponent(tree.best_kept)}`}>{tree.best_kept}</a>
            </>
          )}
        </span>
      </h2>
      <ul class="tree">
        {tree.roots.map((n) => <TreeNode key={n.run_id} n={n} />)}
      </ul>
      {notes.length > 0 && (
        <>
          <h3 class="small muted">Notes</h3>
          <ul class="notes">
            {notes.map((n) => (
              <li>
                <span class="muted small">
                  {n.run_id
                    ? <a href={`/runs/${encodeURIComponent(n.run_id)}`}>{n.run_id}</a>
                    : "experiment"} · {n.author}, <RelTime at={n.created_at} now={now} />:
                </span>{" "}
                {n.text}
              </li>
            ))}
          </ul>
        </>
      )}
    </section>
  );
}

/** The run page's write forms: mark and note (confirmed actions; write scope checked there). */
export const lineagePageRoutes: PageRoute[] = [
  {
    method: "POST",
    path: "/runs/:id/mark",
    scope: "write",
    action: "marking a run",
    handler: (p) => {
      const id = pathSegment(p, 1);
      return confirmedAction(p, {
        question: "",
        yes: "",
        fallback: `/runs/${encodeURIComponent(id)}`,
        confirm: false,
        run: (fields) => {
          const input = markRequest.safeParse({ mark: fields.mark, reason: fields.reason ?? "" });
          if (!input.success) throw validationError("mark", input.error);
          const run = markRun(p.ctx, id, input.data, p.principal!.name);
          return `Run ${run.id} marked ${input.data.mark}`;
        },
      });
    },
  },
  {
    method: "POST",
    path: "/runs/:id/note",
    scope: "write",
    action: "adding a note to a run",
    handler: (p) => {
      const id = pathSegment(p, 1);
      return confirmedAction(p, {
        question: "",
        yes: "",
        fallback: `/runs/${encodeURIComponent(id)}`,
        confirm: false,
        run: (fields) => {
          const input = noteRequest.safeParse({ run_id: id, text: fields.text ?? "" });
          if (!input.success) throw validationError("note", input.error);
          addNote(p.ctx, input.data, p.principal!.name);
          return `Note added to run ${id}`;
        },
      });
    },
  },
];
