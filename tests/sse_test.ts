import { assert, assertEquals, assertStringIncludes } from "./assert.ts";
import { createHarness, type Harness } from "./_harness.ts";
import { openSse } from "./_sse_client.ts";
import { topics } from "../server/bus/bus.ts";
import { sseStreamsOf } from "../server/http/sse.ts";

function serve(h: Harness) {
  const abort = new AbortController();
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, signal: abort.signal, onListen: () => {} },
    h.app.fetch,
  );
  return {
    base: `http://127.0.0.1:${server.addr.port}`,
    port: server.addr.port,
    async stop() {
      abort.abort();
      await server.finished;
    },
  };
}

const job = (name: string) => ({ name, command: ["true"], working_dir: "/", gpus: 0 });

Deno.test("events stream: a client that reconnects with Last-Event-ID misses nothing and gets nothing twice", async () => {
  const h = await createHarness();
  const s = await serve(h);
  try {
    const first = await openSse(`${s.base}/api/events/stream`, h.tokens.read);
    for (let i = 0; i < 3; i++) await h.call("POST", "/api/jobs", { body: job(`a${i}`) });
    await first.until((c) => c.messages.length === 3);
    const lastSeen = first.messages[2].id;
    await first.close();

    // While disconnected, more events happen.
    for (let i = 0; i < 4; i++) await h.call("POST", "/api/jobs", { body: job(`b${i}`) });
    const second = await openSse(`${s.base}/api/events/stream`, h.tokens.read, lastSeen);
    await second.until((c) => c.messages.length === 4);
    await h.call("POST", "/api/jobs", { body: job("live") });
    await second.until((c) => c.messages.length === 5);
    const names = second.messages.map((m) => m.data.message.match(/"(\w+)"/)[1]);
    assertEquals(names, ["b0", "b1", "b2", "b3", "live"]);
    const ids = [...first.messages, ...second.messages].map((m) => m.id);
    assertEquals(new Set(ids).size, ids.length);
    assert(ids.every((id, i) => i === 0 || id > ids[i - 1]), "ids increase");
    await second.close();
  } finally {
    await s.stop();
    await h.close();
  }
});

Deno.test("metrics stream: SDK points arrive live, and a resumed stream fills the gap exactly", async () => {
  const h = await createHarness();
  const s = await serve(h);
  try {
    const run = (await h.call("POST", "/api/sdk/runs", { body: { project: "p" } })).json;
    const url = `${s.base}/api/runs/${run.id}/metrics/stream`;
    const live = await openSse(url, h.tokens.read);
    await h.call("POST", `/api/sdk/runs/${run.id}/log`, {
      body: { points: [{ key: "loss", step: 0, value: 1 }, { key: "loss", step: 1, value: 0.5 }] },
    });
    // The open stream gets them (until() fails the test when they do not come).
    await live.until((c) => c.messages.length === 1);
    assertEquals(live.messages[0].data.points.map((p: { step: number }) => p.step), [0, 1]);
    const resumeAt = live.messages[0].id;
    await live.close();

    for (let i = 2; i < 1000; i += 100) {
      const points = Array.from(
        { length: 100 },
        (_, j) => ({ key: "loss", step: i + j, value: 1 / (i + j) }),
      );
      await h.call("POST", `/api/sdk/runs/${run.id}/log`, { body: { points } });
    }
    const resumed = await openSse(url, h.tokens.read, resumeAt);
    const count = (c: typeof resumed) => c.messages.reduce((n, m) => n + m.data.points.length, 0);
    await resumed.until((c) => count(c) === 1000);
    const steps = resumed.messages.flatMap((m) =>
      m.data.points.map((p: { step: number }) => p.step)
    );
    assertEquals(steps, Array.from({ length: 1000 }, (_, i) => i + 2));
    await resumed.close();
  } finally {
    await s.stop();
    await h.close();
  }
});

Deno.test("metrics stream: a resume with more points missed than one page gets them all", async () => {
  const h = await createHarness();
  const s = await serve(h);
  try {
    const run = (await h.call("POST", "/api/sdk/runs", { body: { project: "p" } })).json;
    // 6,000 points missed: more than the 5,000 of one backlog page.
    for (let i = 0; i < 6000; i += 1000) {
      const points = Array.from(
        { length: 1000 },
        (_, j) => ({ key: "loss", step: i + j, value: j }),
      );
      await h.call("POST", `/api/sdk/runs/${run.id}/log`, { body: { points } });
    }
    const resumed = await openSse(`${s.base}/api/runs/${run.id}/metrics/stream`, h.tokens.read, 0);
    const steps = (c: typeof resumed) =>
      c.messages.flatMap((m) => m.data.points.map((p: { step: number }) => p.step));
    await resumed.until((c) => steps(c).length === 6000);
    assertEquals(steps(resumed), Array.from({ length: 6000 }, (_, i) => i));
    await resumed.close();
  } finally {
    await s.stop();
    await h.close();
  }
});

Deno.test("many-runs metrics stream: points of every run in write order, a resume fills the gap exactly, and it ends when every run has", async () => {
  const h = await createHarness();
  const s = await serve(h);
  try {
    const a = (await h.call("POST", "/api/sdk/runs", { body: { project: "p" } })).json;
    const b = (await h.call("POST", "/api/sdk/runs", { body: { project: "p" } })).json;
    const log = (run: string, body: unknown) =>
      h.call("POST", `/api/sdk/runs/${run}/log`, { body });
    const point = (step: number) => ({ points: [{ key: "loss", step, value: 1 / (step + 1) }] });
    const url = `${s.base}/api/runs/metrics:stream?runs=${a.id},${b.id}`;
    const points = (c: { messages: { data: { points: { run_id: string; step: number }[] } }[] }) =>
      c.messages.flatMap((m) => m.data.points.map((p) => `${p.run_id}@${p.step}`));

    const live = await openSse(url, h.tokens.read);
    await log(a.id, point(0));
    await log(b.id, point(0));
    await log(a.id, point(1));
    await live.until((c) => points(c).length === 3);
    assertEquals(points(live), [`${a.id}@0`, `${b.id}@0`, `${a.id}@1`]);
    const resumeAt = live.messages[live.messages.length - 1].id;
    await live.close();

    // While no one listens, both runs go on; a resumed stream gets exactly what it missed.
    for (let step = 2; step < 6; step++) {
      await log(b.id, point(step - 1));
      await log(a.id, point(step));
    }
    const resumed = await openSse(url, h.tokens.read, resumeAt);
    await resumed.until((c) => points(c).length === 8);
    assertEquals(points(resumed), [
      `${b.id}@1`,
      `${a.id}@2`,
      `${b.id}@2`,
      `${a.id}@3`,
      `${b.id}@3`,
      `${a.id}@4`,
      `${b.id}@4`,
      `${a.id}@5`,
    ]);
    // One run ending does not end the stream; the second does, naming both.
    await log(a.id, { status: "SUCCEEDED" });
    await log(b.id, point(5));
    await resumed.until((c) => points(c).length === 9);
    await log(b.id, { status: "FAILED" });
    await resumed.until((c) => c.ended);
    assertEquals(resumed.events, [{
      event: "end",
      data: { runs: [{ run_id: a.id, status: "SUCCEEDED" }, { run_id: b.id, status: "FAILED" }] },
    }]);
    await resumed.close();

    // Bad input names the field and the problem.
    const none = await h.call("GET", "/api/runs/metrics:stream?runs=");
    assertEquals(none.status, 400);
    assertStringIncludes(none.text, "runs");
    const unknown = await h.call("GET", `/api/runs/metrics:stream?runs=${a.id},r-missing`);
    assertEquals([unknown.status, unknown.json.error.code], [404, "NotFound"]);
    assertStringIncludes(unknown.json.error.message, "r-missing");
  } finally {
    await s.stop();
    await h.close();
  }
});

Deno.test("logs stream: lines arrive in order and `after` resumes", async () => {
  const h = await createHarness();
  const s = await serve(h);
  try {
    const run = (await h.call("POST", "/api/sdk/runs", { body: { project: "p" } })).json;
    await h.call("POST", `/api/sdk/runs/${run.id}/log`, {
      body: { logs: [{ text: "one" }, { text: "two" }] },
    });
    const c = await openSse(`${s.base}/api/runs/${run.id}/logs/stream?after=0`, h.tokens.read);
    await c.until((x) => x.messages.length >= 1);
    await h.call("POST", `/api/sdk/runs/${run.id}/log`, { body: { logs: [{ text: "three" }] } });
    await c.until((x) => x.messages.flatMap((m) => m.data.lines).length === 3);
    assertEquals(
      c.messages.flatMap((m) => m.data.lines.map((l: { text: string }) => l.text)),
      ["one", "two", "three"],
    );
    await c.close();
  } finally {
    await s.stop();
    await h.close();
  }
});

Deno.test("idle streams get a keep-alive comment", async () => {
  const h = await createHarness({ sse: { keepAliveMs: 50 } });
  const s = await serve(h);
  try {
    const c = await openSse(`${s.base}/api/events/stream`, h.tokens.read);
    await c.until((x) => x.comments.filter((l) => l === "keep-alive").length >= 2, 3000);
    await c.close();
  } finally {
    await s.stop();
    await h.close();
  }
});

Deno.test("a client that stops reading is dropped once its buffer passes the bound", async () => {
  const h = await createHarness({ sse: { maxBufferedBytes: 256 * 1024 } });
  const s = await serve(h);
  try {
    const run = (await h.call("POST", "/api/sdk/runs", { body: { project: "p" } })).json;
    const topic = topics.logs(run.id);
    const conn = await Deno.connect({ hostname: "127.0.0.1", port: s.port });
    const request = `GET /api/runs/${run.id}/logs/stream HTTP/1.1\r\nHost: x\r\n` +
      `Authorization: Bearer ${h.tokens.read}\r\n\r\n`;
    await conn.write(new TextEncoder().encode(request));
    // Read only the response head, then never read again.
    const head = new Uint8Array(1024);
    await conn.read(head);
    assert(new TextDecoder().decode(head).startsWith("HTTP/1.1 200"));
    for (let i = 0; i < 100 && h.ctx.bus.listenerCount(topic) === 0; i++) {
      await new Promise((r) => setTimeout(r, 10));
    }
    assertEquals(h.ctx.bus.listenerCount(topic), 1);
    // A second client of the same stream that does read.
    const reader = await openSse(`${s.base}/api/runs/${run.id}/logs/stream`, h.tokens.read);
    assertEquals(h.ctx.bus.listenerCount(topic), 2);
    const big = "x".repeat(16 * 1024);
    let seq = 0;
    // Far more than the socket buffers hold: the server must give up on the silent client.
    while (seq < 8000 && h.ctx.bus.listenerCount(topic) > 1) {
      seq++;
      h.ctx.bus.publish(topic, { lines: [{ seq, ts: "t", stream: "stdout", text: big }] });
      // Let the reading client keep up (a busy machine may read slowly), so only the silent
      // one can fall behind by more than the bound.
      if (seq % 8 === 0) await reader.until((c) => c.messages.length >= seq, 10_000);
    }
    assertEquals(h.ctx.bus.listenerCount(topic), 1, "only the silent client was dropped");
    assert(seq < 8000, `still subscribed after ${seq * big.length} bytes`);
    await reader.until((c) => c.messages.length === seq, 10_000);
    assertEquals(reader.messages.map((m) => m.id), Array.from({ length: seq }, (_, i) => i + 1));
    await reader.close();
    conn.close();
    // The server still serves others.
    assertEquals((await h.call("GET", "/api/auth/whoami")).status, 200);
  } finally {
    await s.stop();
    await h.close();
  }
});

Deno.test("a reading client is not dropped for one message larger than the bound", async () => {
  const h = await createHarness({ sse: { maxBufferedBytes: 16 * 1024 } });
  const s = await serve(h);
  try {
    const run = (await h.call("POST", "/api/sdk/runs", { body: { project: "p" } })).json;
    const reader = await openSse(`${s.base}/api/runs/${run.id}/metrics/stream`, h.tokens.read);
    // About 100 KB in one message: a big SDK batch, or an agent's frame of 2,000 points.
    const points = Array.from({ length: 2000 }, (_, i) => ({ key: "loss", step: i, value: i }));
    await h.call("POST", `/api/sdk/runs/${run.id}/log`, { body: { points } });
    await reader.until((c) => c.messages.length === 1);
    assertEquals(reader.messages[0].data.points.length, 2000);
    assertEquals(h.ctx.bus.listenerCount(topics.metrics(run.id)), 1);
    await reader.close();
  } finally {
    await s.stop();
    await h.close();
  }
});

Deno.test("under ingest, many clients that never read are each dropped at the bound while readers get every point", async () => {
  const bound = 64 * 1024;
  const h = await createHarness({ sse: { maxBufferedBytes: bound } });
  const s = await serve(h);
  const silent: Deno.TcpConn[] = [];
  try {
    const run = (await h.call("POST", "/api/sdk/runs", { body: { project: "p" } })).json;
    const topic = topics.metrics(run.id);
    const path = `/api/runs/${run.id}/metrics/stream`;
    for (let i = 0; i < 20; i++) {
      const conn = await Deno.connect({ hostname: "127.0.0.1", port: s.port });
      await conn.write(
        new TextEncoder().encode(
          `GET ${path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${h.tokens.read}\r\n\r\n`,
        ),
      );
      silent.push(conn); // never read
    }
    // Another token: a token holds at most 20 streams.
    const readers = [
      await openSse(`${s.base}${path}`, h.tokens.write),
      await openSse(`${s.base}${path}`, h.tokens.write),
    ];
    await waitFor("22 subscribers", () => h.ctx.bus.listenerCount(topic) === 22);
    const count = (c: (typeof readers)[0]) =>
      c.messages.reduce((n, m) => n + m.data.points.length, 0);
    // Real ingest: SDK batches of 2,000 points (about 100 KB a message) until every silent
    // client is dropped; past the kernel's socket buffers each one holds at most `bound`.
    let step = 0;
    while (h.ctx.bus.listenerCount(topic) > 2 && step < 2_000_000) {
      const points = Array.from({ length: 2000 }, (_, i) => ({
        key: "loss",
        step: step + i,
        value: (step + i) / 3,
      }));
      const res = await h.call("POST", `/api/sdk/runs/${run.id}/log`, { body: { points } });
      assertEquals(res.status, 200);
      step += 2000;
      for (const r of readers) await r.until((c) => count(c) === step, 10_000);
    }
    assertEquals(h.ctx.bus.listenerCount(topic), 2, `silent clients kept after ${step} points`);
    for (const r of readers) assertEquals(count(r), step);
    // deno-lint-ignore no-console -- what this test saw
    console.log(`20 silent clients dropped after ${step} points (${bound / 1024} KiB bound each)`);
    for (const r of readers) await r.close();
  } finally {
    for (const c of silent) c.close();
    await s.stop();
    await h.close();
  }
});

/** Opens a stream without reading it; the status and the response to cancel. */
async function rawStream(url: string, token: string) {
  const abort = new AbortController();
  const res = await fetch(url, {
    headers: { authorization: `Bearer ${token}` },
    signal: abort.signal,
  });
  return {
    res,
    async close() {
      abort.abort();
      await res.body?.cancel().catch(() => {});
    },
  };
}

async function waitFor(what: string, cond: () => boolean, ms = 5000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`not within ${ms} ms: ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

Deno.test("streams are capped per token and in total with a 429 naming the cap, and a closed one gives back its slot and subscriptions", async () => {
  const h = await createHarness({ sse: { maxStreams: 3, maxStreamsPerToken: 2 } });
  const s = await serve(h);
  const streams = sseStreamsOf(h.ctx);
  const url = `${s.base}/api/events/stream`;
  const open: Awaited<ReturnType<typeof rawStream>>[] = [];
  try {
    for (let i = 0; i < 2; i++) open.push(await rawStream(url, h.tokens.read));
    assertEquals(open.map((o) => o.res.status), [200, 200]);
    const third = await rawStream(url, h.tokens.read);
    assertEquals(third.res.status, 429);
    const perToken = await third.res.json();
    assertEquals(perToken.error.code, "TooManyStreams");
    assertStringIncludes(perToken.error.message, "at most 2 (max_sse_streams_per_token");
    open.push(await rawStream(url, h.tokens.write));
    assertEquals(open[2].res.status, 200);
    const fourth = await rawStream(url, h.tokens.admin);
    assertEquals(fourth.res.status, 429);
    assertStringIncludes((await fourth.res.json()).error.message, "at most 3 (max_sse_streams in");
    assertEquals([streams.open(), h.ctx.bus.listenerCount(topics.events)], [3, 3]);

    // A client that goes away gives back its slot and its subscription.
    await open.shift()!.close();
    await waitFor("the aborted stream released", () => streams.open() === 2);
    assertEquals(h.ctx.bus.listenerCount(topics.events), 2);
    const again = await rawStream(url, h.tokens.read);
    assertEquals(again.res.status, 200);
    open.push(again);
  } finally {
    for (const o of open) await o.close();
    await waitFor("every stream released", () => streams.open() === 0);
    assertEquals(h.ctx.bus.listenerCount(topics.events), 0, "no subscription outlives its stream");
    await s.stop();
    await h.close();
  }
});

Deno.test("a finished run's log and metric streams send event: end and close by themselves", async () => {
  const h = await createHarness();
  const s = await serve(h);
  try {
    const run = (await h.call("POST", "/api/sdk/runs", { body: { project: "p" } })).json;
    await h.call("POST", `/api/sdk/runs/${run.id}/log`, {
      body: { logs: [{ text: "one" }], points: [{ key: "loss", step: 0, value: 1 }] },
    });
    await h.call("POST", `/api/sdk/runs/${run.id}/log`, { body: { status: "SUCCEEDED" } });
    for (const kind of ["logs", "metrics"]) {
      const c = await openSse(`${s.base}/api/runs/${run.id}/${kind}/stream?after=0`, h.tokens.read);
      await c.until((x) => x.ended);
      assertEquals(c.messages.length, 1, `${kind}: the backlog comes first`);
      assertEquals(c.events, [{ event: "end", data: { run_id: run.id, status: "SUCCEEDED" } }]);
      await c.close();
    }
    assertEquals(sseStreamsOf(h.ctx).open(), 0);
    const topicsOfRun = [topics.events, topics.logs(run.id), topics.metrics(run.id)];
    assertEquals(topicsOfRun.map((t) => h.ctx.bus.listenerCount(t)), [0, 0, 0]);
  } finally {
    await s.stop();
    await h.close();
  }
});

Deno.test("a run that finishes while its log stream is open ends the stream after its last line", async () => {
  const h = await createHarness();
  const s = await serve(h);
  try {
    const run = (await h.call("POST", "/api/sdk/runs", { body: { project: "p" } })).json;
    const c = await openSse(`${s.base}/api/runs/${run.id}/logs/stream`, h.tokens.read);
    await h.call("POST", `/api/sdk/runs/${run.id}/log`, { body: { logs: [{ text: "last" }] } });
    await c.until((x) => x.messages.length === 1);
    assertEquals(c.ended, false);
    await h.call("POST", `/api/sdk/runs/${run.id}/log`, { body: { status: "FAILED" } });
    await c.until((x) => x.ended);
    assertEquals(c.messages.flatMap((m) => m.data.lines.map((l: { text: string }) => l.text)), [
      "last",
    ]);
    assertEquals(c.events.map((e) => [e.event, e.data.status]), [["end", "FAILED"]]);
    await c.close();
  } finally {
    await s.stop();
    await h.close();
  }
});

Deno.test("a log stream opened before its run starts still carries the lines once it does", async () => {
  const h = await createHarness();
  const s = await serve(h);
  try {
    const { jobs: jobsDb } = await import("../server/db/mod.ts");
    const { dispatchJob, markRunning } = await import("../server/jobs/transitions.ts");
    const id = (await h.call("POST", "/api/jobs", { body: job("early") })).json.id;
    const runId = h.ctx.db.tx(() =>
      dispatchJob(h.ctx, jobsDb.getJob(h.ctx.db, id)!, "n", []).run_id
    );
    // Opened while the run is QUEUED: the start (a RUN_ event) wakes the stream without ending
    // it, and a stream that then went quiet for good was the bug.
    const stream = await openSse(`${s.base}/api/runs/${runId}/logs/stream`, h.tokens.read);
    h.ctx.db.tx(() => markRunning(h.ctx, jobsDb.getJob(h.ctx.db, id)!, 1, h.ctx.now()));
    // seq 0: the first line a client may number, which must not be taken for "before".
    await h.call("POST", `/api/sdk/runs/${runId}/log`, {
      body: { logs: [{ seq: 0, stream: "stdout", text: "after the start" }] },
    });
    await stream.until((c) => c.messages.length === 1);
    assertEquals(stream.messages[0].data.lines[0].text, "after the start");
    await stream.close();
  } finally {
    await s.stop();
    await h.close();
  }
});
