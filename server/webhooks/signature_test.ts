import { createHmac } from "node:crypto";
import { assertEquals } from "../../tests/assert.ts";
import { signBody, verifySignature } from "./signature.ts";

const now = new Date("2026-03-01T12:00:00Z");
const ts = Math.floor(now.getTime() / 1000);
const body = '{"id":1,"type":"LOSS_NAN"}';

Deno.test("signBody() is sha256= and the hex HMAC of '<timestamp>.<body>'", () => {
  const hex = createHmac("sha256", "k").update(`${ts}.${body}`).digest("hex");
  assertEquals(signBody("k", ts, body), `sha256=${hex}`);
});

Deno.test("verifySignature() accepts the signature it was given and nothing else", () => {
  const sig = signBody("k", ts, body);
  const cases: [string, string | number, string, string, boolean][] = [
    ["k", ts, body, sig, true],
    ["k", String(ts), body, sig, true],
    ["other", ts, body, sig, false],
    ["k", ts + 1, body, sig, false],
    ["k", ts, body + " ", sig, false],
    ["k", ts, body, sig.slice(0, -1), false],
    ["k", ts, body, "sha256=", false],
    ["k", "nonsense", body, sig, false],
  ];
  for (const [secret, t, b, s, want] of cases) {
    assertEquals(verifySignature(secret, t, b, s, { now }), want, `${secret} ${t} ${b} ${s}`);
  }
});

Deno.test("verifySignature() refuses a timestamp outside the tolerance (a replay)", () => {
  const old = ts - 301;
  assertEquals(verifySignature("k", old, body, signBody("k", old, body), { now }), false);
  assertEquals(
    verifySignature("k", old, body, signBody("k", old, body), { now, toleranceS: 600 }),
    true,
  );
  const future = ts + 301;
  assertEquals(verifySignature("k", future, body, signBody("k", future, body), { now }), false);
});
