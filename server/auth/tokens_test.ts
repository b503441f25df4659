import { assert, assertEquals, assertFalse } from "../../tests/assert.ts";
import { generateToken, hashSecret, parseToken, scopeAllows, secretMatches } from "./tokens.ts";

Deno.test("generateToken() makes gpc_<id>_<secret> and stores only the secret's hash", () => {
  const { token, id, hash } = generateToken();
  assert(/^gpc_[a-z0-9]{10}_[A-Za-z0-9]{40}$/.test(token), token);
  const parsed = parseToken(token)!;
  assertEquals(parsed.id, id);
  assertEquals(hash, hashSecret(parsed.secret));
  assertFalse(hash.includes(parsed.secret));
  assertEquals(hash.length, 64);
});

Deno.test("generateToken() never repeats", () => {
  const seen = new Set(Array.from({ length: 200 }, () => generateToken().token));
  assertEquals(seen.size, 200);
});

Deno.test("parseToken() refuses strings without the token shape", () => {
  for (const bad of ["", "gpc_", "gpc_abc_def", "Bearer x", "gpc_UPPER123_" + "a".repeat(40)]) {
    assertEquals(parseToken(bad), null, bad);
  }
});

Deno.test("secretMatches() accepts the secret and refuses anything else", () => {
  const { token, hash } = generateToken();
  const { secret } = parseToken(token)!;
  assert(secretMatches(secret, hash));
  assertFalse(secretMatches(secret.slice(0, -1) + (secret.endsWith("a") ? "b" : "a"), hash));
  assertFalse(secretMatches(secret, "00"));
});

Deno.test("scopeAllows() ranks read < write < admin and keeps agent apart", () => {
  const table: [Parameters<typeof scopeAllows>[0], Parameters<typeof scopeAllows>[1], boolean][] = [
    ["read", "read", true],
    ["read", "write", false],
    ["write", "read", true],
    ["write", "write", true],
    ["write", "admin", false],
    ["admin", "write", true],
    ["admin", "admin", true],
    ["admin", "agent", false],
    ["agent", "read", false],
    ["agent", "agent", true],
  ];
  for (const [have, need, want] of table) {
    assertEquals(scopeAllows(have, need), want, `${have} -> ${need}`);
  }
});
