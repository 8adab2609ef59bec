/**
 * `pgoutput-wasm tail`: streams changes from a logical replication slot and
 * prints one JSON line per change (docs/cli-output.md). Without a
 * connection it starts an embedded PostgreSQL, runs a demo workload and
 * stops once the workload has been printed.
 *
 * Acknowledgements (`--ack auto`, the default): a transaction is
 * acknowledged once its lines were written to stdout, so the slot's
 * confirmed position never passes what was printed; Ctrl-C / SIGTERM stops
 * cleanly and reports it to the server before exiting 0.
 */
import { parseArgs } from "node:util";
import { createInterface } from "node:readline";
import { formatLsn, parseLsn } from "../lsn.ts";
import { jsonl } from "../formats/jsonl.ts";
import { Pipeline } from "../pipeline/run.ts";
import { snapshotSource, streamSource } from "../pipeline/sources.ts";
import { SinkError } from "../pipeline/sink.ts";
import { writableSink } from "../sinks/stdout.ts";
import { CliError, explain, usage } from "./errors.ts";
import { StatusLine } from "./status.ts";
import { CONNECT_TIMEOUT_MS, Interrupted, SOURCE_OPTIONS, openSource, sourceSettings, type Source, type SourceFlags } from "./source.ts";

export const TAIL_USAGE = `usage: pgoutput-wasm tail [options]

Streams changes from a logical replication slot as JSON Lines on stdout, one
line per change (shape: docs/cli-output.md, after wal2json's format-version 2).

Without --connection (and no PG* variables): starts a throwaway PostgreSQL 18
(the npm embedded build), creates a demo schema, publication and slot, runs
a demo workload while streaming it, and exits by itself once the workload
has been printed (--follow keeps it running until Ctrl-C). Its data
directory (under the temp directory, pgoutputwasm-pg18-*) is removed on
exit, however the run ends (a signal too; after a kill -9 the server stops
by itself, and the next run removes what is left); nothing is kept between
runs (see pgoutput-wasm cache --help).
As root, PostgreSQL runs as the system user pgoutputwasm, created on first
use (a system account: no home directory, no login shell) and left in place
(userdel pgoutputwasm removes it); where that user cannot read the npm
binaries, they are copied to a temporary folder for the run
(pgoutputwasm-bin-*), removed with it.

connection:
  -c, --connection STR   postgres://user:password@host:port/database, or keyword/value
                         pairs: "host=db port=5432 dbname=app user=u password='p w'"
                         (default: the PG* variables PGHOST, PGPORT, PGUSER,
                         PGPASSWORD, PGDATABASE, when set); errors never show the password;
                         connect_timeout=SECONDS in it: how long to wait for the server (default ${CONNECT_TIMEOUT_MS / 1000})
  --publication NAME     publication(s) to stream: repeat or comma-separate (required)
  --slot NAME            slot to stream from (default: a temporary slot, changes from now on)
  --create-slot          create --slot if it does not exist
  --temporary            create --slot as a temporary slot (dropped on exit)
  --start-lsn X/Y        start at this LSN (the server starts at the later of it and the slot's position)
  --proto 1-4            pgoutput protocol version (default: what the options need)
  --streaming off|on|parallel   stream large transactions while in progress (default on, PostgreSQL 14+)
  --binary               values in binary format
  --messages             include logical decoding messages (pg_logical_emit_message)
  --two-phase            decode prepared transactions at PREPARE (P, K, R lines)
  --pg 18                the embedded PostgreSQL's version (the only one it ships)
  --heartbeat SECONDS    write a heartbeat into the WAL every SECONDS (pg_logical_emit_message,
                         filtered from the output) so the slot of a quiet database keeps advancing
  --failover             create --slot as a failover slot (PostgreSQL 17+; an error before)
  --no-reconnect         exit on a lost connection instead of reconnecting (reconnecting, the
                         default, needs a slot that outlives the connection: --slot, not --temporary;
                         transactions not yet acknowledged are printed again)

output:
  --tables LIST          only these tables: schema.table or table; repeat or comma-separate
  --transactions         also print B (begin) and C (commit) lines
  --format jsonl|pretty  one line per change (default), or indented
  --numbers-as-strings   int8 and numeric as JSON strings (default: exact JSON numbers)
  --max-messages N       exit after N lines
  --ack auto|manual|none auto (default): acknowledge a transaction once printed;
                         manual: acknowledge LSNs read from stdin (X/Y, or a line's JSON with nextlsn);
                         none: never (a later run from the slot gets them all again)
  --backend wasm|baseline  decoder (default wasm)
  --follow               embedded demo: keep streaming after the workload until Ctrl-C
  --progress             status line and summary on stderr even when it is not a terminal
  --snapshot             first print every row the publications hold (S lines, initial snapshot),
                         then the changes after them; needs a new slot (--create-slot, or no --slot)

stderr shows a live status line (messages/s, MiB/s, LSN, lag behind the server's
WAL end) and a summary on exit when it is a terminal. Ctrl-C or SIGTERM stops
cleanly: what was printed is acknowledged, exit code 0 (under npx, 130: npm
runs the command through a shell that dies of the Ctrl-C, and re-raises it); a
second Ctrl-C leaves at once, exit code 130. A closed stdout (tail | head)
stops cleanly too. SIGHUP (the terminal closed) and SIGQUIT end it at once: the
embedded server and its folders removed, it dies by that signal (129, 131).
Errors: one line with a hint, exit code 1 (2 for bad options).
`;

export async function tailCommand(args: string[]): Promise<number> {
  const { values } = parseArgs({
    args,
    allowPositionals: false,
    options: {
      ...SOURCE_OPTIONS,
      tables: { type: "string", multiple: true },
      transactions: { type: "boolean", default: false },
      format: { type: "string", default: "jsonl" },
      "numbers-as-strings": { type: "boolean", default: false },
      "no-reconnect": { type: "boolean", default: false },
    },
  });
  if (values.help) {
    process.stdout.write(TAIL_USAGE);
    return 0;
  }
  const settings = { ...sourceSettings(values as SourceFlags), reconnect: !values["no-reconnect"] };
  const layout = values.format;
  if (layout !== "jsonl" && layout !== "pretty") throw usage(`--format must be jsonl or pretty, not ${JSON.stringify(layout)}`);
  const tables = (values.tables ?? []).flatMap((t) => t.split(",")).map((t) => t.trim()).filter((t) => t.length > 0);

  const stderr = process.stderr;
  const stdout = process.stdout;
  const showStatus = stderr.isTTY === true || settings.progress;
  let source: Source | undefined;
  let stopRequested = false;
  let pipeline: Pipeline | undefined;

  // Counters for the status line.
  let transactions = 0;
  let messages = 0;

  const status = new StatusLine({
    out: stderr,
    enabled: showStatus,
    label: "tail",
    writtenUnit: "lines",
    sample: () => ({
      messages,
      bytes: source?.stream.stats.bytes ?? 0,
      written: pipeline?.stats.records ?? 0,
      transactions,
      lsn: source?.stream.lastReceivedLsn ?? 0n,
      acked: source?.stream.lastAckedLsn ?? 0n,
      reconnects: source?.stream.stats.reconnects ?? 0,
      phase: snapshotPhase(source),
    }),
    walEnd: () => source?.walEnd() ?? Promise.resolve(undefined),
  });

  const requestStop = (): void => {
    if (stopRequested) {
      // A second Ctrl-C: leave now (the exit hook stops an embedded server).
      process.exit(130);
    }
    stopRequested = true;
    pipeline?.stop();
  };
  const onSignal = (): void => requestStop();
  process.on("SIGINT", onSignal);
  process.on("SIGTERM", onSignal);

  try {
    try {
      source = await openSource(settings, {
        stopped: () => stopRequested,
        note: (text) => status.note(`tail: ${text}`),
        values: (types) => jsonl.values(types),
        onDemoStep: (step) => status.note(`demo: ${step.note}`),
      });
    } catch (e) {
      if (e instanceof Interrupted) return 0;
      throw e;
    }
    const src = source;
    const stream = src.stream;
    status.start();

    const format = jsonl.create({ decoder: src.decoder }, {
      transactions: values.transactions, tables, pretty: layout === "pretty", "numbers-as-strings": values["numbers-as-strings"],
    });
    const ack = settings.ack;
    // --ack auto: the pipeline acknowledges what stdout took; manual: what stdin says; none: nothing.
    const acknowledge = ack === "auto";
    const pipelineSource = src.snapshot !== undefined ? snapshotSource(src.snapshot, { acknowledge }) : streamSource(stream, { acknowledge });

    // The demo ends once the commit of its last transaction has been printed (acknowledged by the pipeline).
    const ends = new Map<number, bigint>();
    let openXid: number | undefined;
    let printedTo = 0n;
    let lastXid: number | undefined;
    let demoDone = false;
    let demoError: unknown;
    const checkDemo = (): void => {
      const end = lastXid === undefined ? undefined : ends.get(lastXid);
      if (end !== undefined && printedTo >= end && !settings.follow) {
        demoDone = true;
        pipeline?.stop();
      }
    };
    src.demo?.then(
      (r) => {
        lastXid = r.lastXid;
        if (settings.follow) status.note(`demo workload done; streaming until Ctrl-C. Try: psql ${src.embeddedUrl} -c "INSERT INTO demo.ledger (account_id, amount) VALUES (2, 1)"`);
        checkDemo();
      },
      (e: unknown) => {
        if (!stopRequested) {
          demoError = e;
          pipeline?.stop();
        }
      },
    );

    if (ack === "manual" && process.stdin.readable) {
      const rl = createInterface({ input: process.stdin });
      rl.on("line", (line) => {
        const lsn = ackedLsn(line);
        if (lsn !== undefined && !stream.error) {
          stream.ack(lsn);
          stream.sendStatus();
        }
      });
      stream.closed.then(() => rl.close(), () => rl.close());
    }

    pipeline = new Pipeline({
      source: pipelineSource,
      format,
      sink: writableSink(stdout, { beforeWrite: stdout.isTTY === true && stderr.isTTY === true ? () => status.clear() : undefined }),
      replayDecoder: await src.replayDecoder(),
      limit: settings.maxMessages,
      onItem: (item) => {
        messages++;
        if (item.kind === "Begin") openXid = item.xid;
        else if (item.kind === "Commit" && openXid !== undefined) {
          transactions++;
          ends.set(openXid, item.endLsn);
        } else if (item.kind === "StreamCommit") {
          transactions++;
          ends.set(item.xid, item.endLsn);
        } else if (item.kind === "SnapshotComplete") {
          status.note(`tail: snapshot complete: ${item.rows} rows of ${item.tables} tables; streaming from ${formatLsn(item.consistentPoint)}`);
        }
      },
      onAck: (lsn) => {
        printedTo = lsn;
        checkDemo();
      },
    });
    if (stopRequested) pipeline.stop();
    let streamError: unknown;
    try {
      await pipeline.run();
    } catch (e) {
      // The reader went away (tail ... | head): stop like Ctrl-C.
      if (!(e instanceof SinkError && (e.cause as NodeJS.ErrnoException | undefined)?.code === "EPIPE")) streamError = e;
    }
    status.stop(demoDone ? "demo complete" : undefined);
    if (demoError !== undefined && !demoDone) {
      throw new CliError(`the demo workload failed: ${(demoError as Error).message}`);
    }
    if (streamError !== undefined && !stopRequested) throw explain(streamError, src.context);
    return 0;
  } finally {
    status.stop();
    await source?.close();
    process.off("SIGINT", onSignal);
    process.off("SIGTERM", onSignal);
  }
}

/** The status line's snapshot part while the initial snapshot runs. */
function snapshotPhase(source: Source | undefined): string | undefined {
  const run = source?.snapshot;
  if (run === undefined) return undefined;
  const p = run.progress;
  if (p.tables > 0 && p.tablesDone === p.tables) return undefined;
  const of = p.estimatedRows > 0 ? `/${Math.round(p.estimatedRows)}` : "";
  return `snapshot ${p.tablesDone}/${p.tables} tables, ${p.rows}${of} rows`;
}

/** An LSN from a line of stdin (`--ack manual`): `X/Y`, or JSON with `nextlsn` (a C line) or `lsn`. */
export function ackedLsn(line: string): bigint | undefined {
  const t = line.trim();
  if (t === "") return undefined;
  try {
    if (t.startsWith("{")) {
      const obj = JSON.parse(t) as { nextlsn?: unknown; lsn?: unknown };
      const v = typeof obj.nextlsn === "string" ? obj.nextlsn : typeof obj.lsn === "string" ? obj.lsn : undefined;
      return v === undefined ? undefined : parseLsn(v);
    }
    return parseLsn(t);
  } catch {
    return undefined;
  }
}
