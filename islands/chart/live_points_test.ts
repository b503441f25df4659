import { assertEquals } from "../../tests/assert.ts";
import { createLivePoints, groupPoints, type StreamPoint, streamUrl } from "./live_points.ts";
import type { LivePoint } from "./series.ts";

/** A stand-in for the page's shared EventSources: records what is open and delivers. */
function fakeStreams() {
  const opened: { url: string; after: unknown }[] = [];
  const live = new Map<string, (d: unknown) => void>();
  const ends = new Map<string, () => void>();
  return {
    opened,
    live,
    sub(
      url: string,
      h: { message?: (d: unknown) => void; end?: () => void; after?: string | number | null },
    ): () => void {
      opened.push({ url, after: h.after });
      live.set(url, h.message!);
      if (h.end) ends.set(url, h.end);
      return () => {
        live.delete(url);
        ends.delete(url);
      };
    },
    end() {
      for (const e of ends.values()) e();
    },
    send(points: StreamPoint[]) {
      for (const l of live.values()) l({ points });
    },
  };
}

const tick = () => new Promise((r) => setTimeout(r, 0));
const pt = (run_id: string, key: string, seq: number, step: number): StreamPoint => ({
  run_id,
  key,
  seq,
  step,
  value: step / 10,
  wall_time: 1000 + step,
});

Deno.test("streamUrl() names each run once, in a stable order", () => {
  assertEquals(streamUrl(["b", "a", "b"]), "/api/runs/metrics:stream?runs=a,b");
});

Deno.test("groupPoints() groups a message's points by run and key and ignores junk", () => {
  const g = groupPoints({
    points: [pt("a", "loss", 1, 1), pt("b", "loss", 2, 1), pt("a", "loss", 3, 2)],
  });
  assertEquals([...g.keys()], ["a\0loss", "b\0loss"]);
  assertEquals(g.get("a\0loss")!.map((p) => p.step), [1, 2]);
  assertEquals(groupPoints({ nope: 1 }).size, 0);
  assertEquals(groupPoints(null).size, 0);
});

Deno.test("one stream serves every panel's runs, opened once per batch of changes", async () => {
  const f = fakeStreams();
  const hub = createLivePoints(f.sub);
  const got: Record<string, LivePoint[]> = { aLoss: [], aAcc: [], bLoss: [] };
  const stops = [
    hub.listen("a", "loss", (p) => got.aLoss.push(...p)),
    hub.listen("a", "acc", (p) => got.aAcc.push(...p)),
    hub.listen("b", "loss", (p) => got.bLoss.push(...p)),
  ];
  await tick();
  assertEquals(f.opened, [{ url: "/api/runs/metrics:stream?runs=a,b", after: null }]);
  f.send([
    pt("a", "loss", 7, 1),
    pt("b", "loss", 8, 1),
    pt("c", "loss", 9, 1),
    pt("a", "acc", 10, 1),
  ]);
  assertEquals([got.aLoss.length, got.aAcc.length, got.bLoss.length], [1, 1, 1]);
  assertEquals(got.aLoss[0], { step: 1, value: 0.1, wall_time: 1001 });

  // The last listener of run b leaves: the stream re-opens for a alone, after the last seq.
  stops[2]();
  await tick();
  assertEquals(f.opened.at(-1), { url: "/api/runs/metrics:stream?runs=a", after: 10 });
  assertEquals(f.live.size, 1, "the old stream is closed");
  // Another key of a run already streamed changes nothing.
  const more = hub.listen("a", "lr", () => {});
  await tick();
  assertEquals(f.opened.length, 2);
  more();
  stops[0]();
  stops[1]();
  await tick();
  assertEquals([hub.openUrl(), f.live.size], [null, 0]);
});

Deno.test("listeners hear when the stream ends because every run in it finished", async () => {
  const f = fakeStreams();
  const hub = createLivePoints(f.sub);
  let ended = 0;
  const stop = hub.listen("a", "loss", () => {}, () => ended++);
  const other = hub.listen("a", "acc", () => {});
  await tick();
  f.end();
  assertEquals(ended, 1);
  stop();
  f.end();
  assertEquals(ended, 1, "a listener that left hears nothing more");
  other();
});
