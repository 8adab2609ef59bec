/**
 * What `tail` and `capture` are: the source the settings name (source.ts:
 * a connection, or the embedded demo) → the command's format → its sink,
 * through a Pipeline, which acknowledges a transaction to the slot once the
 * sink made it and everything before it durable (`--ack auto`; `manual`:
 * the LSNs read from stdin instead; `none`: nothing).
 *
 * Around the pipeline: the status line on stderr (status.ts), the sink
 * opened only once the source streams (a failed connection leaves no file
 * behind, nor truncates one), `--seconds` and `--max-messages`, the end of
 * the embedded demo (once the commit of its last transaction is durable,
 * unless --follow), and the signals: the first Ctrl-C or SIGTERM stops
 * cleanly (what is durable is acknowledged, exit 0), a second exits 130
 * at once (the 'exit' hook of temp-folders.ts then stops the embedded
 * server and removes its folders). While this listens to SIGINT and
 * SIGTERM, temp-folders.ts leaves those two to it; SIGHUP and SIGQUIT stay
 * temp-folders.ts's. A reader that goes away (`tail | head`: EPIPE) stops
 * it cleanly too.
 */
import { createInterface } from "node:readline";
import { formatLsn, parseLsn } from "../lsn.ts";
import type { FormatDefinition, FormatOptionValues } from "../pipeline/format.ts";
import { Pipeline, type PipelineStats } from "../pipeline/run.ts";
import { SinkError, type Sink } from "../pipeline/sink.ts";
import { snapshotSource, streamSource } from "../pipeline/sources.ts";
import { CliError, explain } from "./errors.ts";
import { ReplicationError } from "../pg/errors.ts";
import type { SourceSettings } from "./settings.ts";
import { Interrupted, openSource, type Source } from "./source.ts";
import { StatusLine } from "./status.ts";
import { serveMetrics, type MetricsAddress, type MetricsServer } from "./metrics-server.ts";
import { metricsText, type MetricsSource } from "../metrics/exposition.ts";

export interface StreamPlan {
  /** The command: the status line's label and the notes' prefix. */
  label: string;
  settings: SourceSettings;
  format: FormatDefinition;
  formatOptions: FormatOptionValues;
  /** The sink's target (`-`: stdout, whose writes clear the status line first when both are one terminal). */
  target: string;
  /** Opens the sink, once the source streams (a SinkError is the command's error, with its hint). */
  openSink: () => Promise<Sink>;
  /** What the status line counts as written: `lines`, or `messages` (then the count of messages received stands for it). */
  writtenUnit: string;
  /** Stop after this long. */
  seconds?: number;
  /** Streamed transactions held in memory at most until their commit (--held-memory); beyond, in temp files. */
  maxHeldBytes?: number;
  /** The summary's last words, from the pipeline's figures. */
  summary?: (stats: PipelineStats) => string;
  /** Serve the run's metrics there (`--metrics`), from the start to the end of the run. */
  metrics?: MetricsAddress;
}

/** How long a stop waits for what is in flight to the sink (then acknowledges what it confirmed). */
const DRAIN_SECONDS = 10;

/** Runs the plan to its end; resolves with the exit code. */
export async function streamCommand(plan: StreamPlan): Promise<number> {
  const { settings, label } = plan;
  const stderr = process.stderr;
  let source: Source | undefined;
  let pipeline: Pipeline | undefined;
  let stopRequested = false;
  const status = new StatusLine({
    out: stderr,
    enabled: stderr.isTTY === true || settings.progress,
    label,
    writtenUnit: plan.writtenUnit,
    sample: () => ({
      messages: pipeline?.stats.items ?? 0,
      bytes: source?.stream.stats.bytes ?? 0,
      written: pipeline?.stats.records ?? 0,
      transactions: source?.stream.stats.transactions ?? 0,
      lsn: source?.stream.lastReceivedLsn ?? 0n,
      acked: source?.stream.lastAckedLsn ?? 0n,
      reconnects: source?.stream.stats.reconnects ?? 0,
      phase: snapshotPhase(source),
      sink: plan.target === "-" || pipeline === undefined ? undefined : { acked: pipeline.stats.durable, inFlight: pipeline.stats.inFlight },
    }),
    walEnd: () => source?.walEnd() ?? Promise.resolve(undefined),
  });
  const onSignal = (): void => {
    if (stopRequested) process.exit(130); // a second Ctrl-C: leave now
    stopRequested = true;
    pipeline?.stop();
    const inFlight = pipeline?.stats.inFlight ?? 0;
    if (inFlight > 0 && plan.target !== "-") {
      status.note(`${label}: stopping: waiting up to ${DRAIN_SECONDS} s for the sink to confirm ${inFlight} records in flight (Ctrl-C again leaves now: the next run sends them again)`);
    }
  };
  process.on("SIGINT", onSignal);
  process.on("SIGTERM", onSignal);
  let timer: ReturnType<typeof setTimeout> | undefined;
  let sink: Sink | undefined;
  let metricsServer: MetricsServer | undefined;
  try {
    if (plan.metrics !== undefined) {
      // Listening before the source opens: a port that cannot be bound fails the command at once; until then a scrape gets an empty answer.
      metricsServer = await serveMetrics(plan.metrics, () => {
        const sources: MetricsSource[] = [];
        const from = source?.snapshot ?? source?.stream;
        if (from !== undefined) sources.push(from);
        if (pipeline !== undefined) sources.push(pipeline);
        return metricsText(...sources);
      });
      status.note(`${label}: metrics at ${metricsServer.url}`);
    }
    try {
      source = await openSource(settings, {
        stopped: () => stopRequested,
        note: (text) => status.note(`${label}: ${text}`),
        values: (types) => plan.format.values(types, plan.formatOptions),
        onDemoStep: (step) => status.note(`demo: ${step.note}`),
      });
    } catch (e) {
      if (e instanceof Interrupted) return 0;
      throw e;
    }
    const src = source;
    try {
      sink = await plan.openSink();
    } catch (e) {
      throw e instanceof SinkError ? new CliError(e.message, e.hint) : e;
    }
    if (plan.target === "-" && process.stdout.isTTY === true && stderr.isTTY === true) sink = clearingFirst(sink, status);
    status.start();

    // The demo ends once the commit of its last transaction is durable (acknowledged by the pipeline).
    const ends = new Map<number, bigint>();
    let openXid: number | undefined;
    let durableTo = 0n;
    let lastXid: number | undefined;
    let demoDone = false;
    let demoError: unknown;
    const checkDemo = (): void => {
      const end = lastXid === undefined ? undefined : ends.get(lastXid);
      if (end !== undefined && durableTo >= end && !settings.follow) {
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
        if (stopRequested) return;
        demoError = e;
        pipeline?.stop();
      },
    );
    if (settings.ack === "manual") acknowledgeFromStdin(src);

    if (settings.backfill.length > 0) {
      try {
        await src.stream.backfill({ tables: settings.backfill, decoder: await src.replayDecoder() });
      } catch (e) {
        if (e instanceof ReplicationError && e.code === "INVALID_OPTION") throw new CliError(e.message);
        throw e;
      }
      status.note(`${label}: backfilling ${settings.backfill.join(", ")} while streaming`);
    }
    const acknowledge = settings.ack === "auto";
    const run = new Pipeline({
      source: src.snapshot !== undefined ? snapshotSource(src.snapshot, { acknowledge }) : streamSource(src.stream, { acknowledge }),
      format: plan.format.create({ decoder: src.decoder, database: src.database, slot: src.slot }, plan.formatOptions),
      sink,
      raw: plan.format.raw,
      replayDecoder: plan.format.raw ? undefined : await src.replayDecoder(),
      maxHeldBytes: plan.maxHeldBytes,
      limit: settings.maxMessages,
      drainTimeoutMs: DRAIN_SECONDS * 1000,
      ddl: settings.ddl,
      // The stream asks for messages for --ddl; the others are written only when asked for.
      messages: settings.ddl && settings.messages !== true && settings.mode !== "embedded" ? false : undefined,
      // Only where something waits for an item (the demo's last commit, a snapshot's or backfill's end):
      // given onItem, the pipeline makes a view of every message, so the kernel's whole lines are not taken.
      onItem: src.demo === undefined && src.snapshot === undefined && settings.backfill.length === 0 ? undefined : (item) => {
        if (item.kind === "Begin") openXid = item.xid;
        else if (item.kind === "Commit" && openXid !== undefined) ends.set(openXid, item.endLsn);
        else if (item.kind === "StreamCommit") ends.set(item.xid, item.endLsn);
        else if (item.kind === "BackfillComplete") {
          status.note(`${label}: backfill of ${item.table} complete: ${item.rows} rows`);
        } else if (item.kind === "SnapshotComplete") {
          status.note(`${label}: snapshot complete: ${item.rows} rows of ${item.tables} tables; streaming from ${formatLsn(item.consistentPoint)}`);
        }
      },
      onAck: (lsn) => {
        durableTo = lsn;
        checkDemo();
      },
    });
    pipeline = run;
    sink = undefined; // the pipeline closes it
    if (stopRequested) run.stop();
    if (plan.seconds !== undefined) timer = setTimeout(() => pipeline?.stop(), plan.seconds * 1000);
    let streamError: unknown;
    try {
      await run.run();
    } catch (e) {
      // The reader went away (... | head): a stop like Ctrl-C.
      if (isClosedReader(e)) stopRequested = true;
      else if (e instanceof SinkError) throw new CliError(e.message, e.hint);
      else streamError = e;
    }
    status.stop([plan.summary?.(run.stats), demoDone ? "demo complete" : undefined].filter((t) => t !== undefined).join("; ") || undefined);
    if (demoError !== undefined && !demoDone) throw new CliError(`the demo workload failed: ${(demoError as Error).message}`);
    if (streamError !== undefined && !stopRequested) throw explain(streamError, src.context);
    return 0;
  } finally {
    if (timer !== undefined) clearTimeout(timer);
    status.stop();
    await sink?.close().catch(() => {});
    await source?.close();
    await metricsServer?.close();
    process.off("SIGINT", onSignal);
    process.off("SIGTERM", onSignal);
  }
}

function isClosedReader(e: unknown): boolean {
  return e instanceof SinkError && (e.cause as NodeJS.ErrnoException | undefined)?.code === "EPIPE";
}

/** The sink, with the status line erased before each write (both on one terminal). */
function clearingFirst(sink: Sink, status: StatusLine): Sink {
  return {
    name: sink.name,
    write: (records) => {
      status.clear();
      return sink.write(records);
    },
    delivered: sink.delivered?.bind(sink),
    close: () => sink.close(),
    metrics: sink.metrics?.bind(sink),
    collectMetrics: sink.collectMetrics?.bind(sink),
  };
}

/** `--ack manual`: the LSNs read from stdin are acknowledged. */
function acknowledgeFromStdin(src: Source): void {
  if (!process.stdin.readable) return;
  const stream = src.stream;
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
