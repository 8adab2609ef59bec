/**
 * `pgoutput-wasm tail`: streams changes from a logical replication slot to
 * a sink (stdout by default), one JSON line per change (docs/cli-output.md)
 * or any other format. Without a connection it starts an embedded
 * PostgreSQL, runs a demo workload and stops once the workload is written.
 * The source → format → sink run is stream-command.ts's.
 */
import type { Command } from "./command.ts";
import { usage } from "./errors.ts";
import { BACKFILL, DDL, HELD_MEMORY, NO_RECONNECT, NUMBERS_AS_STRINGS, RUN_FLAGS, SNAPSHOT, SOURCE_FLAGS, TABLES, TRANSACTIONS, UNTIL, flagsOf } from "./flags.ts";
import { openSink } from "../sinks/index.ts";
import { FORMAT, OPTION, SINK, SUBJECT, checkSink, chosenFormat, sinkOptions } from "./output.ts";
import { sourceSettings } from "./settings.ts";
import { streamCommand } from "./stream-command.ts";
import { METRICS, parseMetricsAddress } from "./metrics-server.ts";

const sections = [
  { title: "connection", flags: [...SOURCE_FLAGS, NO_RECONNECT] },
  { title: "output", flags: [TABLES, TRANSACTIONS, FORMAT, OPTION, NUMBERS_AS_STRINGS, SINK, SUBJECT, ...RUN_FLAGS, SNAPSHOT, METRICS, DDL, UNTIL, BACKFILL, HELD_MEMORY] },
];

export const tail: Command = {
  name: "tail",
  synopsis: "[options]",
  summary: "stream changes from a replication slot, one JSON line per change",
  examples: [
    "npx pgoutput-wasm tail                  # a throwaway embedded PostgreSQL 18 and a demo workload",
    "npx pgoutput-wasm tail -c postgres://user@db/app --publication app --slot app_cdc --create-slot",
  ],
  description: `Streams changes from a logical replication slot as JSON Lines on stdout, one
line per change (shape: docs/cli-output.md, after wal2json's format-version 2),
or in another --format, to another --sink.

Without --connection (and no PG* variables): starts a throwaway PostgreSQL 18
(the npm embedded build), creates a demo schema, publication and slot, runs
a demo workload while streaming it, and exits by itself once the workload
has been written (--follow keeps it running until Ctrl-C). Its data
directory (under the temp directory, pgoutputwasm-pg18-*) is removed on
exit, however the run ends (a signal too; after a kill -9 the server stops
by itself, and the next run removes what is left); nothing is kept between
runs (see pgoutput-wasm cache --help).
As root, PostgreSQL runs as the system user pgoutputwasm, created on first
use (a system account: no home directory, no login shell) and left in place
(userdel pgoutputwasm removes it); where that user cannot read the npm
binaries, they are copied to a temporary folder for the run
(pgoutputwasm-bin-*), removed with it.`,
  sections,
  notes: `stderr shows a live status line (messages/s, MiB/s, LSN, lag behind the server's
WAL end; with another --sink also what it confirms per second, what is in flight
to it and the slot's lag) and a summary on exit when it is a terminal. Ctrl-C or
SIGTERM stops cleanly: what is in flight to the sink is waited for (10 s at
most), what it confirmed is acknowledged, exit code 0 (under npx, 130: npm
runs the command through a shell that dies of the Ctrl-C, and re-raises it); a
second Ctrl-C leaves at once, exit code 130. A closed stdout (tail | head)
stops cleanly too. SIGHUP (the terminal closed) and SIGQUIT end it at once: the
embedded server and its folders removed, it dies by that signal (129, 131).
Errors: one line with a hint, exit code 1 (2 for bad options).`,
  async run(values) {
    const settings = sourceSettings(values);
    const { format, options } = chosenFormat(values, flagsOf(sections));
    const target = values.sink as string;
    checkSink(target, format, options);
    const sinkFlags = sinkOptions(target, values);
    const metrics = typeof values.metrics === "string" ? parseMetricsAddress(values.metrics) : undefined;
    return streamCommand({
      label: "tail", settings, maxHeldBytes: heldMemory(values["held-memory"] as string | undefined), format, formatOptions: options, target, writtenUnit: "lines",
      openSink: () => openSink(target, sinkFlags), metrics,
    });
  },
};

/** --held-memory MIB, in bytes. */
function heldMemory(text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  const mib = Number(text);
  if (!/^\d+(\.\d+)?$/.test(text) || !(mib >= 0)) throw usage(`--held-memory must be a number of MiB, not ${JSON.stringify(text)}`);
  return Math.round(mib * (1 << 20));
}
