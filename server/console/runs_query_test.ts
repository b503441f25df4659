import { assertEquals } from "../../tests/assert.ts";
import { runsPageQuery } from "./runs_query.ts";

Deno.test("runsPageQuery() adds the page's filters to where unless it names them, and names the field at fault", () => {
  assertEquals(
    runsPageQuery({
      where: '{"config": {"lr": {"lt": 0.01}}, "project": "nlp"}',
      order_by: "-config.lr",
      project: "vision",
      status: "SUCCEEDED",
    }, 500),
    {
      query: {
        where: { config: { lr: { lt: 0.01 } }, project: "nlp", status: "SUCCEEDED" },
        order_by: "-config.lr",
        limit: 500,
      },
    },
  );
  const table: [Parameters<typeof runsPageQuery>[0], string][] = [
    [{ where: "{lr" }, "where: is not JSON"],
    [{ where: "[1]" }, "where: must be a JSON object"],
    [{ where: '{"config": {"lr": {"lt": "x"}}}' }, "where.config.lr"],
    [{ order_by: "drop table" }, "order_by: must be created_at"],
    [{ where: "x".repeat(5000) }, "where: longer than 4000 characters"],
  ];
  for (const [fields, start] of table) {
    const r = runsPageQuery(fields, 50);
    if (!("error" in r)) throw new Error(`accepted ${JSON.stringify(fields)}`);
    assertEquals(r.error.startsWith(start), true, `${r.error} should start with ${start}`);
  }
});
