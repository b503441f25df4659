/**
 * Creating a project or an experiment as a person does it from a form: a name already taken
 * is refused (the REST routes update instead), so typing an existing name never changes what
 * is there.
 */
import type { Experiment, Project } from "../../protocol/objects.ts";
import type { ExperimentCreate, ProjectCreate } from "../../protocol/rest/projects.ts";
import type { Context } from "../context.ts";
import { projects as projectsDb } from "../db/mod.ts";
import { invalidField, quoted } from "../errors.ts";
import { createExperiment, createProject } from "./service.ts";

/** Creates a new project; a taken name is a validation error on `name`. */
export function addProject(ctx: Context, input: ProjectCreate): Project {
  return ctx.db.tx(() => {
    if (projectsDb.getProject(ctx.db, input.name)) {
      throw invalidField("project", "name", `a project named ${quoted(input.name)} already exists`);
    }
    return createProject(ctx, input).project;
  });
}

/**
 * Creates a new experiment in an existing project; a missing project is a validation error
 * on `project`, a name the project already has one on `name`.
 */
export function addExperiment(ctx: Context, input: ExperimentCreate): Experiment {
  return ctx.db.tx(() => {
    if (!projectsDb.getProject(ctx.db, input.project)) {
      throw invalidField(
        "experiment",
        "project",
        `project ${quoted(input.project)} does not exist: create it first`,
      );
    }
    if (projectsDb.getExperiment(ctx.db, input.project, input.name)) {
      throw invalidField(
        "experiment",
        "name",
        `project ${quoted(input.project)} already has an experiment named ${quoted(input.name)}`,
      );
    }
    return createExperiment(ctx, input).experiment;
  });
}
