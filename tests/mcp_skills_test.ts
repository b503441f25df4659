/** The skills and the plugin name only tools the MCP server has, and parse as their readers do. */
import { parse } from "yaml";
import { assert, assertEquals } from "./assert.ts";
import { TOOLS } from "../mcp/mod.ts";

const ROOT = new URL("..", import.meta.url).pathname;
const SKILLS = ["run-experiment", "monitor-experiment", "analyze-results", "research-loop"];
const TOOL_NAMES = new Set(TOOLS.map((t) => t.name));

function frontmatter(text: string): Record<string, unknown> {
  const m = /^---\n([\s\S]*?)\n---\n/.exec(text);
  assert(m, "no frontmatter");
  return parse(m[1]);
}

Deno.test("each skill's frontmatter names it, describes it and pre-authorises only real gpuctl tools", async () => {
  for (const name of SKILLS) {
    const text = await Deno.readTextFile(`${ROOT}/skills/${name}/SKILL.md`);
    const fm = frontmatter(text);
    assertEquals(fm.name, name);
    assert(typeof fm.description === "string" && fm.description.length > 80, name);
    const allowed = String(fm["allowed-tools"]).split(",").map((t) => t.trim());
    const mcp = allowed.filter((t) => t.startsWith("mcp__"));
    assert(mcp.length >= 8, `${name}: ${mcp.length} MCP tools`);
    for (const t of mcp) {
      const tool = /^mcp__gpuctl__([a-z_]+)$/.exec(t)?.[1];
      assert(tool && TOOL_NAMES.has(tool), `${name}: ${t} is not a gpuctl tool`);
    }
    // A tool the body tells the agent to call must be one it may call.
    for (const used of text.matchAll(/`([a-z]+_[a-z_]+)(?: \{[^`]*\})?`/g)) {
      if (TOOL_NAMES.has(used[1])) {
        assert(mcp.includes(`mcp__gpuctl__${used[1]}`), `${name} uses ${used[1]} unauthorised`);
      }
    }
  }
});

Deno.test("the plugin bundles the stdio server and the skills; the HTTP example points at /mcp", async () => {
  const plugin = JSON.parse(await Deno.readTextFile(`${ROOT}/.claude-plugin/plugin.json`));
  assertEquals(plugin.name, "gpuctl");
  assertEquals(plugin.skills, "./skills/");
  const server = plugin.mcpServers.gpuctl;
  assertEquals(server.args.slice(-2), ["mcp", "stdio"]);
  const entry = server.args.find((a: string) => a.endsWith("/cli/main.ts"));
  await Deno.stat(entry.replace("${CLAUDE_PLUGIN_ROOT}", ROOT));
  const example = JSON.parse(await Deno.readTextFile(`${ROOT}/.mcp.json.example`));
  assertEquals(example.mcpServers.gpuctl.type, "http");
  assert(example.mcpServers.gpuctl.url.endsWith("/mcp"));
});
