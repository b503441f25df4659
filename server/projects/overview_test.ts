import { assert, assertEquals, assertThrows } from "../../tests/assert.ts";
import { NotFoundError, type ValidationError } from "../errors.ts";
import { sdkRun, testContext } from "../runs/_test_context.ts";
import { addExperiment, addProject } from "./add.ts";
import { experimentIdOf, experimentsOverview, matchesFilter } from "./overview.ts";
import { listProjects } from "./service.ts";

Deno.test("matchesFilter() keeps one project's experiments and searches both names, any case", () => {
  const e = { project: "Vision", name: "lr-sweep" };
  const table: [Parameters<typeof matchesFilter>[1], boolean][] = [
    [{}, true],
    [{ project: "Vision" }, true],
    [{ project: "nlp" }, false],
    [{ q: "SWEEP" }, true],
    [{ q: "visi" }, true],
    [{ q: "  " }, true],
    [{ q: "bert" }, false],
    [{ project: "Vision", q: "bert" }, false],
  ];
  for (const [f, want] of table) assertEquals(matchesFilter(e, f), want, JSON.stringify(f));
});

Deno.test("experimentsOverview() lists every project with its experiment count, the newest active first", () => {
  const ctx = testContext();
  sdkRun(ctx, { project: "vision", experiment: "old" });
  sdkRun(ctx, { project: "nlp", experiment: "bert" });
  sdkRun(ctx, { project: "vision", experiment: "new" });
  const all = experimentsOverview(ctx, {});
  assertEquals(all.projects.map((p) => [p.name, p.experiments]), [["nlp", 1], ["vision", 2]]);
  assertEquals(all.experiments.map((e) => e.name), ["new", "bert", "old"]);
  assertEquals(all.all.length, 3);
  // With no experiment asked for, the resolution is the first listed one's.
  assertEquals(all.resolution?.experiment.name, "new");
  const vision = experimentsOverview(ctx, { project: "vision", q: "OL" });
  assertEquals(vision.experiments.map((e) => e.name), ["old"]);
  assertEquals(vision.projects.length, 2);
  assertEquals(experimentsOverview(ctx, { project: "none" }).experiments, []);
  const bert = all.all.find((e) => e.name === "bert")!;
  assertEquals(
    experimentsOverview(ctx, { project: "vision" }, bert.id).resolution?.experiment,
    bert,
  );
  assert(assertThrows(() => experimentsOverview(ctx, {}, "e-none")) instanceof NotFoundError);
});

Deno.test("addProject() and addExperiment() create new names and refuse taken ones by field", () => {
  const ctx = testContext();
  assertEquals(addProject(ctx, { name: "vision", description: "images" }).name, "vision");
  const taken = assertThrows(() => addProject(ctx, { name: "vision", description: "x" }));
  assertEquals((taken as ValidationError).details, [{
    field: "name",
    problem: 'a project named "vision" already exists',
  }]);
  assertEquals(listProjects(ctx).items[0].description, "images");
  assertEquals(addExperiment(ctx, { project: "vision", name: "sweep" }).project, "vision");
  const twice = assertThrows(() => addExperiment(ctx, { project: "vision", name: "sweep" }));
  assertEquals((twice as ValidationError).details[0].field, "name");
  const orphan = assertThrows(() => addExperiment(ctx, { project: "nlp", name: "bert" }));
  assertEquals((orphan as ValidationError).details[0].field, "project");
  assertEquals(listProjects(ctx).items.map((p) => p.name), ["vision"]);
});

Deno.test("experimentIdOf() finds the experiment a definition's scope id names", () => {
  const ctx = testContext();
  const e = addExperiment(ctx, { project: addProject(ctx, { name: "p" }).name, name: "a/b" });
  assertEquals(experimentIdOf(ctx, "p/a/b"), e.id);
  assertEquals(experimentIdOf(ctx, "p/none"), null);
  assertEquals(experimentIdOf(ctx, "nothing"), null);
});
