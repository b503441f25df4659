import { assertEquals } from "../../tests/assert.ts";
import { Bus } from "./bus.ts";

Deno.test("Bus delivers to every listener of a topic and nothing to others", () => {
  const bus = new Bus();
  const got: string[] = [];
  bus.subscribe<string>("a", (m) => got.push(`1:${m}`));
  bus.subscribe<string>("a", (m) => got.push(`2:${m}`));
  bus.subscribe<string>("b", (m) => got.push(`b:${m}`));
  bus.publish("a", "x");
  assertEquals(got, ["1:x", "2:x"]);
});

Deno.test("Bus keeps delivering when a listener throws, and reports it", () => {
  const errors: string[] = [];
  const bus = new Bus((topic) => errors.push(topic));
  const got: number[] = [];
  bus.subscribe("t", () => {
    throw new Error("bad listener");
  });
  bus.subscribe<number>("t", (m) => got.push(m));
  bus.publish("t", 7);
  assertEquals(got, [7]);
  assertEquals(errors, ["t"]);
});

Deno.test("Bus unsubscribe removes the listener and forgets empty topics", () => {
  const bus = new Bus();
  const off = bus.subscribe("t", () => {});
  assertEquals(bus.listenerCount(), 1);
  off();
  off();
  assertEquals(bus.listenerCount(), 0);
  assertEquals(bus.listenerCount("t"), 0);
});
