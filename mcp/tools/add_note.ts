/** `add_note`: writes a note on a run or an experiment: what was tried, learnt, to try next. */
import { z } from "zod";
import { noteRequest } from "../../protocol/lineage.ts";
import { addNote } from "../../server/lineage/service.ts";
import { defineTool } from "../_tool.ts";

/** `add_note`: `POST /api/notes`. */
export const addNoteTool = defineTool({
  name: "add_note",
  title: "Add a note",
  description: "Adds a note to a run (run_id) or an experiment (experiment: " +
    '"<project>/<experiment>"): the logbook of what was tried, what was learnt and what to try ' +
    "next, shown with the run and in the experiment's workspace. Needs a write token.",
  kind: "control",
  input: noteRequest,
  output: z.looseObject({
    id: z.string(),
    run_id: z.string().nullable(),
    project: z.string(),
    experiment: z.string().nullable(),
    text: z.string(),
  }),
  run(ctx, args, call) {
    const n = addNote(ctx, args, call.principal.name);
    const where = n.run_id ? `run ${n.run_id}` : `experiment ${n.project}/${n.experiment}`;
    return { data: { ...n }, summary: `Note ${n.id} added to ${where}.` };
  },
});
