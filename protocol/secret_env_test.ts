import { assertEquals } from "../tests/assert.ts";
import { isSecretEnvName, maskSecretEnv, maskSecretValues, secretValues } from "./secret_env.ts";

Deno.test("isSecretEnvName() takes names that look secret in any case, and those listed", () => {
  const names = [
    "HF_TOKEN",
    "wandb_api_key",
    "AWS_SECRET_ACCESS_KEY",
    "DB_Password",
    "DB_URL",
    "X",
  ];
  assertEquals(names.filter((n) => isSecretEnvName(n, ["DB_URL"])), names.slice(0, 5));
});

Deno.test("maskSecretEnv() masks secret values and keeps the rest", () => {
  assertEquals(maskSecretEnv({ HF_TOKEN: "hf_x", MODE: "offline" }, []), {
    HF_TOKEN: "••••••",
    MODE: "offline",
  });
});

Deno.test("maskSecretValues() masks every occurrence, longest value first, and not short values", () => {
  const values = secretValues(
    { A_TOKEN: "abcd", B_TOKEN: "abcdefgh", SHORT_KEY: "ab", PLAIN: "abcdefgh-plain" },
    [],
  );
  assertEquals(values, ["abcdefgh", "abcd"]);
  assertEquals(
    maskSecretValues("x=abcdefgh y=abcd z=ab abcd", values),
    "x=•••••• y=•••••• z=ab ••••••",
  );
});
