// The CLI's command registry and flag table (bindings/cli/commands.ts,
// flags.ts, output.ts, settings.ts), in process: the top-level help lists
// every command; each command's usage shows every flag it parses and it
// parses every flag its usage shows (one definition for both); --format,
// -o and --sink list and take what the format and sink registries hold;
// unknown names and bad values are usage errors (exit code 2) that name
// what is known; replicate()'s own option checks come out in the CLI's words.
import { describe, expect, it } from "vitest";
import { FORMATS } from "../bindings/formats/index.ts";
import { SINKS } from "../bindings/sinks/index.ts";
import { commandUsage, topUsage } from "../bindings/cli/command.ts";
import { COMMANDS, commandNamed } from "../bindings/cli/commands.ts";
import { CliError } from "../bindings/cli/errors.ts";
import { flagsOf, parseFlags, type Flag } from "../bindings/cli/flags.ts";
import { FORMAT, SINK, checkSink, chosenFormat, sinkOptions } from "../bindings/cli/output.ts";
import { sourceSettings } from "../bindings/cli/settings.ts";

const NAMES = ["tail", "capture", "decode", "slots", "ddl", "cache"];

/** Arguments that set `f` to a value it takes. */
const set = (f: Flag): string[] => (f.type === "boolean" ? [`--${f.name}`] : [`--${f.name}`, f.choices?.[0] ?? (f.name === "format" ? "jsonl" : f.name === "sink" ? "-" : "1")]);

/** The usage error `fn` throws. */
function usageError(fn: () => unknown): CliError {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(CliError);
    expect((e as CliError).exitCode).toBe(2);
    return e as CliError;
  }
  throw new Error("no error");
}

const tailFlags = flagsOf(commandNamed("tail")!.sections);
const tailSettings = (...args: string[]) => sourceSettings(parseFlags(tailFlags, args, false).values, {});
const tailFormat = (...args: string[]) => chosenFormat(parseFlags(tailFlags, args, false).values, tailFlags);

describe("the command registry", () => {
  it("the top-level help lists every command, with its arguments and summary", () => {
    expect(COMMANDS.map((c) => c.name)).toEqual(NAMES);
    const help = topUsage(COMMANDS);
    for (const c of COMMANDS) expect(help).toMatch(new RegExp(`^  ${c.name}\\b.*${c.summary.replace(/[().*+?[\]|\\]/g, "\\$&")}$`, "m"));
  });

  for (const c of COMMANDS) {
    it(`${c.name}: its usage shows every flag it parses, and it parses every flag its usage shows`, () => {
      const text = commandUsage(c);
      expect(text.startsWith(`usage: pgoutput-wasm ${c.name} ${c.synopsis}\n`)).toBe(true);
      const flags = flagsOf(c.sections);
      for (const f of flags) {
        expect(text, f.name).toMatch(new RegExp(`^  ${f.short ? `-${f.short}, ` : ""}--${f.name}\\b`, "m"));
        const { values } = parseFlags(flags, [...set(f), ...(c.positionals ? ["x"] : [])], c.positionals === true);
        expect(values[f.name], f.name).toBeDefined();
      }
      if (flags.length > 0) expect(text).toMatch(/^ {2}-h, --help {13}this help$/m);
      // Only those: every --flag the usage names at a line's start is one of them.
      const shown = [...text.matchAll(/^ {2}(?:-\w, )?--([a-z-]+)/gm)].map((m) => m[1]);
      expect(shown.sort()).toEqual([...flags.map((f) => f.name), ...(flags.length > 0 ? ["help"] : [])].sort());
    });
  }

  it("a flag another command has is not taken: capture has no --sink, tail no --seconds", () => {
    expect(() => parseFlags(flagsOf(commandNamed("capture")!.sections), ["x", "--sink", "-"], true)).toThrow(expect.objectContaining({ code: "ERR_PARSE_ARGS_UNKNOWN_OPTION" }));
    expect(() => parseFlags(tailFlags, ["--seconds", "1"], false)).toThrow(expect.objectContaining({ code: "ERR_PARSE_ARGS_UNKNOWN_OPTION" }));
  });

  it("a value outside a flag's choices: a usage error listing them", () => {
    expect(usageError(() => parseFlags(tailFlags, ["--streaming", "sometimes"], false)).message).toBe('--streaming must be off, on or parallel, not "sometimes"');
    expect(usageError(() => parseFlags(tailFlags, ["--ack", "later"], false)).message).toBe('--ack must be auto, manual or none, not "later"');
  });
});

describe("--format, -o and --sink: the registries' entries", () => {
  it("the help lists every format, every format's options and every sink", () => {
    for (const f of Object.values(FORMATS)) {
      expect(FORMAT.description).toMatch(new RegExp(`^  ${f.name} +${f.summary.replace(/[().*+?[\]|\\]/g, "\\$&")}$`, "m"));
    }
    for (const s of SINKS) for (const scheme of s.schemes) expect(SINK.description).toContain(scheme === "-" ? "  -" : `${scheme}...`);
    const option = commandUsage(commandNamed("tail")!);
    for (const f of Object.values(FORMATS)) {
      if (Object.keys(f.options).length > 0) expect(option).toMatch(new RegExp(`^ +${f.name} +${Object.keys(f.options).join(", ")}$`, "m"));
    }
  });

  it("each format by name; pretty is jsonl indented; shorthand flags and -o make the options", () => {
    expect(tailFormat().format.name).toBe("jsonl");
    expect(tailFormat("--format", "pretty")).toEqual({ format: FORMATS.jsonl, options: { pretty: true } });
    for (const name of Object.keys(FORMATS)) expect(tailFormat("--format", name).format).toBe(FORMATS[name]);
    expect(tailFormat("--tables", "a", "-o", "tables=b, c", "--transactions", "-o", "numbers-as-strings=no", "-o", "pretty").options)
      .toEqual({ tables: ["a", "b", "c"], transactions: true, "numbers-as-strings": false, pretty: true });
    expect(tailFormat("--format", "messages", "-o", "values").options).toEqual({ values: true });
  });

  it("unknown or unfit names and values: usage errors naming what is known", () => {
    expect(usageError(() => tailFormat("--format", "avro")).message).toBe(`unknown format "avro": one of ${[...Object.keys(FORMATS), "pretty"].join(", ")}`);
    expect(usageError(() => tailFormat("-o", "indent=2")).message).toBe('format jsonl has no option "indent" (it takes transactions, tables, pretty, numbers-as-strings)');
    expect(usageError(() => tailFormat("--format", "messages", "--tables", "t")).message).toBe('format messages has no option "tables" (it takes values, pretty)');
    expect(usageError(() => tailFormat("--format", "capture", "-o", "pretty")).message).toBe('format capture has no option "pretty"');
    expect(usageError(() => tailFormat("-o", "pretty=maybe")).message).toBe('-o pretty: a yes or no (true, false), not "maybe"');
    expect(usageError(() => tailFormat("-o", "tables")).message).toBe("-o tables needs a value: -o tables=VALUE");
    expect(usageError(() => checkSink("kafka://127.0.0.1:9092")).message).toBe(`no sink takes "kafka://127.0.0.1:9092": one of ${SINKS.flatMap((s) => s.schemes).join(", ")}`);
    expect(usageError(() => sinkOptions("file:out.jsonl", { subject: "a.{table}" })).message).toBe("--subject is for --sink nats:..., not file");
    expect(sinkOptions("nats://h?stream=CDC", { subject: "a.{table}" })).toEqual({ subject: "a.{table}" });
    expect(() => checkSink("file:out.jsonl")).not.toThrow();
    expect(() => checkSink("-")).not.toThrow();
    // Records whose headers hold what they say go only to sinks that carry headers.
    const ce = FORMATS.cloudevents!;
    expect(usageError(() => checkSink("file:out.jsonl", ce, { mode: "binary" })).message).toBe(
      "--format cloudevents with these options puts what each record says in headers, which file has no place for",
    );
    for (const target of ["-", "redis://127.0.0.1"]) expect(() => checkSink(target, ce, { mode: "binary" })).toThrow(/has no place for/);
    for (const target of ["nats://127.0.0.1?stream=S", "http://127.0.0.1/x"]) expect(() => checkSink(target, ce, { mode: "binary" })).not.toThrow();
    expect(() => checkSink("-", ce, {})).not.toThrow();
  });
});

describe("settings: checked once", () => {
  const c = ["-c", "postgres://u@127.0.0.1/db", "--publication", "p"];
  it("replicate()'s own checks, before anything starts, as usage errors in the CLI's words", () => {
    expect(usageError(() => tailSettings("--proto", "1", "--two-phase")).message).toBe("--two-phase needs --proto 3 or later");
    expect(usageError(() => tailSettings(...c, "--proto", "1", "--streaming", "on")).message).toBe("--streaming needs --proto 2 or later");
    expect(usageError(() => tailSettings(...c, "--proto", "3", "--streaming", "parallel")).message).toBe('--streaming "parallel" needs --proto 4');
    expect(usageError(() => tailSettings(...c, "--slot", "Bad-Name")).message).toBe('--slot "Bad-Name" may only contain lower-case letters, digits and underscores (at most 63)');
    expect(usageError(() => tailSettings(...c, "--start-lsn", "zz")).message).toBe('--start-lsn: not an LSN: "zz"');
  });

  it("what only the CLI knows: its own words", () => {
    expect(usageError(() => tailSettings(...c, "--failover")).message).toMatch(/^--failover needs a permanent slot/);
    expect(usageError(() => tailSettings("-c", "postgres://u@127.0.0.1/db")).message).toBe("--publication is required with a connection");
    expect(usageError(() => tailSettings("--slot", "s")).message).toMatch(/^--slot needs --connection/);
    expect(usageError(() => tailSettings("--heartbeat", "0")).message).toBe('--heartbeat must be a positive number of seconds, not "0"');
  });

  it("good settings pass: typed, reconnect unless --no-reconnect", () => {
    const s = tailSettings(...c, "--slot", "s1", "--start-lsn", "16/B374D848", "--proto", "4", "--streaming", "parallel", "--max-messages", "5");
    expect(s).toMatchObject({ mode: "connect", slot: "s1", startLsn: "16/B374D848", protoVersion: 4, streaming: "parallel", maxMessages: 5, reconnect: true });
    expect(tailSettings(...c, "--no-reconnect").reconnect).toBe(false);
    expect(tailSettings().mode).toBe("embedded");
  });
});
