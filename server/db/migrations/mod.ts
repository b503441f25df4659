/** The schema's history: every migration, in the order it is applied. */
import { migration001Initial } from "./001_initial.ts";
import { migration002MetricBlocks } from "./002_metric_blocks.ts";
import { migration003Trust } from "./003_trust.ts";
import { migration004Fencing } from "./004_fencing.ts";
import { migration005CheckpointFilesStopOn } from "./005_checkpoint_files_stop_on.ts";
import { migration006SlurmRuns } from "./006_slurm_runs.ts";
import { migration007Sweeps } from "./007_sweeps.ts";
import { migration008CheckpointState } from "./008_checkpoint_state.ts";
import { migration009Lineage } from "./009_lineage.ts";
import { migration010Budgets } from "./010_budgets.ts";
import { migration011PointResume } from "./011_point_resume.ts";
import { migration012MetricSummaries } from "./012_metric_summaries.ts";

/** One forward-only schema change. */
export interface Migration {
  version: number;
  name: string;
  sql: string;
}

/** Every migration, in the order it is applied. Append only; never edit a released one. */
export const MIGRATIONS: Migration[] = [
  migration001Initial,
  migration002MetricBlocks,
  migration003Trust,
  migration004Fencing,
  migration005CheckpointFilesStopOn,
  migration006SlurmRuns,
  migration007Sweeps,
  migration008CheckpointState,
  migration009Lineage,
  migration010Budgets,
  migration011PointResume,
  migration012MetricSummaries,
];
