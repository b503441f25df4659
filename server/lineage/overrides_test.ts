import { assertEquals, assertThrows } from "../../tests/assert.ts";
import { ValidationError } from "../errors.ts";
import { applyOverrides, overridesLabel, setArg } from "./overrides.ts";

Deno.test("setArg() replaces --name VALUE and --name=VALUE in place, appends a missing one", () => {
  const argv = ["python", "train.py", "--lr", "0.1", "--bs=32"];
  assertEquals(setArg(argv, "lr", 0.01), ["python", "train.py", "--lr", "0.01", "--bs=32"]);
  assertEquals(setArg(argv, "bs", 64), ["python", "train.py", "--lr", "0.1", "--bs=64"]);
  assertEquals(setArg(argv, "seed", "2"), [...argv, "--seed", "2"]);
  assertEquals(
    argv,
    ["python", "train.py", "--lr", "0.1", "--bs=32"],
    "the parent's argv is untouched",
  );
});

Deno.test("setArg() adds a bare flag for true and removes a flag with its value for false or null", () => {
  const argv = ["python", "t.py", "--lr", "0.1", "--amp", "--bs=32"];
  assertEquals(setArg(argv, "lr", null), ["python", "t.py", "--amp", "--bs=32"]);
  assertEquals(setArg(argv, "amp", false), ["python", "t.py", "--lr", "0.1", "--bs=32"]);
  assertEquals(setArg(argv, "bs", null), ["python", "t.py", "--lr", "0.1", "--amp"]);
  assertEquals(setArg(argv, "amp", true), argv);
  assertEquals(setArg(argv, "compile", true), [...argv, "--compile"]);
});

Deno.test("applyOverrides() sets env (null removes), records args and config, passes config as GPUCTL_PARAM_", () => {
  const out = applyOverrides(
    {
      command: ["python", "t.py", "--lr", "0.1"],
      env: { A: "1", B: "2" },
      config: { lr: 0.1, depth: 4 },
    },
    { args: { lr: 0.01 }, env: { B: null, C: "3" }, config: { depth: 8, "model.act": "gelu" } },
  );
  assertEquals(out.command, ["python", "t.py", "--lr", "0.01"]);
  assertEquals(out.env, {
    A: "1",
    C: "3",
    GPUCTL_PARAM_DEPTH: "8",
    GPUCTL_PARAM_MODEL_ACT: "gelu",
  });
  assertEquals(out.config, { lr: 0.01, depth: 8, "model.act": "gelu" });
  assertEquals(
    overridesLabel({ args: { lr: 0.01, amp: null }, env: { B: null } }),
    "lr=0.01 -amp -B",
  );
});

Deno.test("applyOverrides() appends quoted arguments to a shell string and refuses a removal, naming the field", () => {
  const out = applyOverrides({ command: "python t.py --lr 0.1", env: {}, config: {} }, {
    args: { lr: "0.01", tag: "it's" },
  });
  assertEquals(out.command, "python t.py --lr 0.1 --lr 0.01 --tag 'it'\\''s'");
  const err = assertThrows(
    () => applyOverrides({ command: "python t.py", env: {}, config: {} }, { args: { lr: null } }),
    "overrides.args.lr",
  ) as ValidationError;
  assertEquals(err.details, [{
    field: "overrides.args.lr",
    problem: "the parent's command is a shell string: an argument can be set there, not removed",
  }]);
});
