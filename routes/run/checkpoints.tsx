/**
 * The run page's Checkpoints tab: each checkpoint with its state, the metrics at its step, its
 * evaluations, and an evaluate form.
 */
import { fmtBytes, fmtInt, fmtMetric } from "../../islands/_format.ts";
import { RelTime } from "../../islands/_ui.tsx";
import type { RunDetail } from "../../server/console/run_detail.ts";

export function CheckpointsTab({ d, canWrite, now, next }: {
  d: RunDetail;
  canWrite: boolean;
  now: number;
  next: string;
}) {
  const r = d.recommendation;
  if (!d.checkpoints.length) {
    return (
      <p class="muted empty">
        No checkpoints. Files the job writes into its{" "}
        <code>checkpoint_dir</code>, or that the SDK registers with{" "}
        <code>run.log_checkpoint(path)</code>, show here.
      </p>
    );
  }
  return (
    <>
      {r && (
        <div class="banner" role="note">
          {r.checkpoint
            ? (
              <>
                <strong>Recommended: step {fmtInt(r.checkpoint.step)}</strong>{" "}
                <code class="cmd">{r.checkpoint.path}</code>
                <p class="small">{r.reason}</p>
              </>
            )
            : <p>{r.reason}</p>}
        </div>
      )}
      <section class="panel">
        <div class="table-wrap">
          <table>
            <thead>
              <tr>
                <th class="num">Step</th>
                <th class="num">Epoch</th>
                <th class="num">Size</th>
                <th>Path</th>
                <th>Saved</th>
                <th>Metrics at step</th>
                <th class="num">Evaluations</th>
                {canWrite && (
                  <th>
                    <span class="sr-only">Evaluate</span>
                  </th>
                )}
              </tr>
            </thead>
            <tbody>
              {d.checkpoints.map((c) => (
                <tr
                  data-checkpoint={c.id}
                  class={r?.checkpoint?.checkpoint_id === c.id ? "recommended" : ""}
                >
                  <td class="num">
                    {fmtInt(c.step)}
                    {r?.checkpoint?.checkpoint_id === c.id && <span class="badge">best</span>}
                  </td>
                  <td class="num">{fmtInt(c.epoch)}</td>
                  <td class="num">{fmtBytes(c.size_bytes)}</td>
                  <td>
                    <code class="cmd">{c.path}</code>
                    {c.overwritten && (
                      <div class="small tone-warning">overwritten by a later run</div>
                    )}
                    {c.state === "gone" && (
                      <div class="small tone-warning">gone: the file no longer exists</div>
                    )}
                    {c.state === "incomplete" && (
                      <div class="small tone-warning">incomplete: {c.problem}</div>
                    )}
                  </td>
                  <td>
                    <RelTime at={c.created_at} now={now} />
                  </td>
                  <td class="small">
                    {Object.entries(c.metrics).slice(0, 4).map(([k, v]) => (
                      <div>
                        <code>{k}</code> {fmtMetric(v as number)}
                      </div>
                    ))}
                  </td>
                  <td class="num">{c.evaluations.length}</td>
                  {canWrite && (
                    <td>
                      {c.state === "valid" && (
                        <form
                          method="post"
                          action={`/checkpoints/${encodeURIComponent(c.id)}/evaluate`}
                          class="inline-form"
                        >
                          <input type="hidden" name="next" value={next} />
                          <input type="hidden" name="confirmed" value="1" />
                          <label class="sr-only" for={`suite-${c.id}`}>Suite</label>
                          <input id={`suite-${c.id}`} name="suite" value="heldout" required />
                          {!d.evalCommand && (
                            <>
                              <label class="sr-only" for={`cmd-${c.id}`}>Evaluation command</label>
                              <input
                                id={`cmd-${c.id}`}
                                name="command"
                                placeholder="eval command"
                                title="The project has no eval_command: the command that evaluates $GPUCTL_CHECKPOINT_PATH"
                                required
                              />
                            </>
                          )}
                          <button type="submit" class="small">Evaluate</button>
                        </form>
                      )}
                    </td>
                  )}
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      </section>
    </>
  );
}
