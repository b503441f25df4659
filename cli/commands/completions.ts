// `gpuctl completions bash|zsh|fish`: scripts made from the command declarations, so that a
// new command or flag completes without anyone editing a script.

import { type Command, EXIT_OK, UsageError } from "../command.ts";
import { defineCommand } from "../define_command.ts";

const SHELLS = ["bash", "zsh", "fish"] as const;

const quote = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

/** The bash script (zsh loads it through bashcompinit). */
export function bashScript(commands: readonly Command[]): string {
  const top = commands.map((c) => c.name).join(" ");
  const cases = commands.map((c) => {
    if (c.subcommands?.length) {
      const subs = c.subcommands.map((s) => s.name).join(" ");
      const inner = c.subcommands.map((s) =>
        `        ${s.name}) words=${quote((s.flags ?? []).join(" "))} ;;`
      ).join("\n");
      return `    ${c.name})\n      if [ "$COMP_CWORD" -eq 2 ]; then words=${quote(subs)}; else\n` +
        `      case "$3" in\n${inner}\n      esac; fi ;;`;
    }
    return `    ${c.name}) words=${quote((c.flags ?? ["--help"]).join(" "))} ;;`;
  }).join("\n");
  // Positional parameters, not COMP_WORDS[i]: zsh's bashcompinit counts array indexes from 1.
  return `# gpuctl completion for bash: eval "$(gpuctl completions bash)"
_gpuctl() {
  local words="" cur
  set -- "\${COMP_WORDS[@]}"
  eval "cur=\\"\\\${$((COMP_CWORD + 1))}\\""
  if [ "$COMP_CWORD" -eq 1 ]; then
    words=${quote(top)}
  else
    case "$2" in
${cases}
    esac
  fi
  COMPREPLY=($(compgen -W "$words" -- "$cur"))
  if [ \${#COMPREPLY[@]} -eq 0 ]; then COMPREPLY=($(compgen -f -- "$cur")); fi
}
complete -F _gpuctl gpuctl
`;
}

/** The zsh script: the bash one through zsh's bashcompinit. */
export function zshScript(commands: readonly Command[]): string {
  return `# gpuctl completion for zsh: eval "$(gpuctl completions zsh)"
autoload -U +X compinit && compinit
autoload -U +X bashcompinit && bashcompinit
${bashScript(commands).split("\n").slice(1).join("\n")}`;
}

/** The fish script. */
export function fishScript(commands: readonly Command[]): string {
  const lines = [
    "# gpuctl completion for fish: gpuctl completions fish | source",
    "complete -c gpuctl -f",
  ];
  const top = commands.map((c) => c.name).join(" ");
  const flagLines = (condition: string, flags: readonly string[]) =>
    flags.filter((f) => f.startsWith("--")).map((f) =>
      `complete -c gpuctl -n ${quote(condition)} -l ${f.slice(2)}`
    );
  for (const c of commands) {
    lines.push(
      `complete -c gpuctl -n ${quote(`not __fish_seen_subcommand_from ${top}`)} -a ${c.name} -d ${
        quote(c.summary)
      }`,
    );
    const seen = `__fish_seen_subcommand_from ${c.name}`;
    if (c.subcommands?.length) {
      const subs = c.subcommands.map((s) => s.name).join(" ");
      for (const s of c.subcommands) {
        lines.push(
          `complete -c gpuctl -n ${
            quote(`${seen}; and not __fish_seen_subcommand_from ${subs}`)
          } ` +
            `-a ${s.name} -d ${quote(s.summary)}`,
        );
        lines.push(
          ...flagLines(`${seen}; and __fish_seen_subcommand_from ${s.name}`, s.flags ?? []),
        );
      }
    } else {
      lines.push(...flagLines(seen, c.flags ?? []));
    }
  }
  return lines.join("\n") + "\n";
}

/** `gpuctl completions`, over the command list it is given (main.ts's). */
export function completionsCommand(commands: () => readonly Command[]): Command {
  return defineCommand({
    name: "completions",
    summary: "print a shell completion script: bash, zsh or fish",
    args: ["SHELL"],
    examples: [
      `eval "$(gpuctl completions bash)"   # in ~/.bashrc`,
      "gpuctl completions fish > ~/.config/fish/completions/gpuctl.fish",
    ],
    flags: {},
    run({ args }, ctx) {
      const shell = SHELLS.find((s) => s === args[0]);
      if (!shell) {
        return Promise.reject(
          new UsageError(`SHELL must be ${SHELLS.join(", ")}, got "${args[0]}"`),
        );
      }
      const script = { bash: bashScript, zsh: zshScript, fish: fishScript }[shell](commands());
      ctx.io.out(script.trimEnd());
      return Promise.resolve(EXIT_OK);
    },
  });
}
