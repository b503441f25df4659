import { z } from "zod";
import { assertEquals, assertStringIncludes, assertThrows } from "../tests/assert.ts";
import { UsageError } from "./command.ts";
import { type CommandSpec, flagKind, helpText, parseCommandLine } from "./define_command.ts";
import { optionalInt, requiredText, textList } from "./flags.ts";

const flags = {
  maxSteps: { arg: "N", schema: optionalInt(1, 100), help: "the last step" },
  project: { short: "p", arg: "P", schema: requiredText(), help: "the project" },
  tag: { arg: "T", schema: textList(), help: "a tag" },
  dry: { schema: z.boolean().optional(), help: "do nothing" },
};

const spec: CommandSpec<typeof flags> = {
  name: "demo run",
  summary: "run a demo",
  args: ["NAME", "[MORE…]"],
  rest: "CMD…",
  examples: ["gpuctl demo run x -- true"],
  flags,
  run: () => Promise.resolve(0),
};

Deno.test("one declaration gives the parser its kinds: booleans, repeatable lists, strings", () => {
  assertEquals(
    [
      flagKind(spec.flags.maxSteps.schema),
      flagKind(spec.flags.tag.schema),
      flagKind(spec.flags.dry.schema),
    ],
    ["string", "multiple", "boolean"],
  );
});

Deno.test("parseCommandLine() validates flags with their schemas and splits off the argv after --", () => {
  const got = parseCommandLine(spec, [
    "x",
    "-p",
    "proj",
    "--max-steps",
    "7",
    "--tag",
    "a",
    "--tag",
    "b",
    "--",
    "python",
    "--lr",
    "3",
  ]);
  assertEquals(got.flags, { maxSteps: 7, project: "proj", tag: ["a", "b"] });
  assertEquals([got.args, got.rest], [["x"], ["python", "--lr", "3"]]);
});

Deno.test("parseCommandLine() names the flag or argument in each usage error", () => {
  const fails = (args: string[], message: string) => {
    const err = assertThrows(() => parseCommandLine(spec, args), message);
    assertEquals(err instanceof UsageError, true);
  };
  fails(["x"], "--project is required");
  fails(["x", "-p", "p", "--max-steps", "0"], "--max-steps must be at least 1");
  fails(["x", "-p", "p", "--max-steps", "ten"], "--max-steps must be a whole number");
  fails(["-p", "p"], "NAME is required");
  fails(["x", "-p", "p", "--nope"], "--nope");
  fails(["x", "-p", "p", "--"], "nothing after --");
});

Deno.test("helpText() lists every flag with its help, marks the repeatable ones, ends with an example", () => {
  const help = helpText(spec);
  assertStringIncludes(help, "usage: gpuctl demo run NAME [MORE…] --project P [options] -- CMD…");
  assertStringIncludes(help, "--max-steps N");
  assertStringIncludes(help, "-p, --project P");
  assertStringIncludes(help, "a tag (repeatable)");
  assertStringIncludes(help, "example:\n  $ gpuctl demo run x -- true");
});
