import { assertEquals } from "../../tests/assert.ts";
import { submissionOf } from "./job_form.ts";

const valid = { name: "lr-0.1", command: "python train.py --lr 0.1", working_dir: "/w", gpus: "1" };

Deno.test("submissionOf() turns a typed form into a submission: a one-line command runs in the shell, empty fields are left out", () => {
  const s = submissionOf({ ...valid, priority: " 5 ", project: "", experiment: "sweep" });
  assertEquals(s, {
    ok: true,
    submission: {
      name: "lr-0.1",
      command: "python train.py --lr 0.1",
      working_dir: "/w",
      gpus: 1,
      priority: 5,
      experiment: "sweep",
    },
  });
});

Deno.test("submissionOf() names every bad field with what is wrong", () => {
  const cases: [Record<string, string>, Record<string, string>][] = [
    [{ ...valid, gpus: "two" }, { gpus: '"two" is not a whole number' }],
    [{ ...valid, gpus: "" }, { gpus: "is required: a whole number" }],
    [{ ...valid, name: " ", working_dir: "" }, {
      name: "must not be empty",
      working_dir: "must not be empty",
    }],
    [{ ...valid, priority: "1.5", max_steps: "0" }, {
      priority: '"1.5" is not a whole number',
      max_steps: "Too small: expected number to be >=1",
    }],
  ];
  for (const [form, errors] of cases) {
    const s = submissionOf(form);
    assertEquals(s.ok ? {} : s.errors, errors, JSON.stringify(form));
  }
});
