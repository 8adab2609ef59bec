/**
 * A format's records from a real walsender, through the library's Pipeline:
 * the slot is made by replicate() (with a snapshot when asked: the rows
 * already there come first), then `workload` runs on its own connection,
 * and the records are gathered until the slot is confirmed past the WAL
 * end the workload left. Each record with what a sink sees of it: id,
 * kind, bytes, key and headers; a real sink (`sink`) is given every batch
 * too. Decoders of the run's backend (test/support/backends.ts).
 */
import pg from "pg";
import { createDecoder } from "../../bindings/create-decoder.ts";
import type { FormatDefinition, FormatOptionValues } from "../../bindings/pipeline/format.ts";
import { formatOptions } from "../../bindings/formats/index.ts";
import { Pipeline } from "../../bindings/pipeline/run.ts";
import type { RecordKind } from "../../bindings/pipeline/records.ts";
import { snapshotSource, streamSource } from "../../bindings/pipeline/sources.ts";
import { replicate } from "../../bindings/pg/replicate.ts";
import { TYPES_QUERY, typesFromCatalog, type CatalogTypeRow } from "../../bindings/values/catalog.ts";
import type { Sink } from "../../bindings/pipeline/sink.ts";
import type { Cluster } from "../../devkit/cluster/cluster.ts";
import { backend } from "./backends.ts";
import { walEnd } from "./sink-workload.ts";

export interface StreamedRecord {
  id: string;
  kind: RecordKind;
  schema: string | undefined;
  table: string | undefined;
  /** The record's bytes as text. */
  text: string;
  key: string | undefined;
  headers: Readonly<Record<string, string>> | undefined;
  /** The commit time the records know (µs). */
  time: bigint | undefined;
}

export interface FormatStreamOptions {
  slot: string;
  publication: string;
  format: FormatDefinition;
  options?: FormatOptionValues;
  snapshot?: boolean;
  messages?: boolean;
  binary?: boolean;
  /** The database name the format is told (FormatContext.database). */
  database?: string;
  workload: (client: pg.Client) => Promise<void>;
  /** A sink each batch is also written to (the caller closes it). */
  sink?: Sink;
}

const text = new TextDecoder();

export async function streamFormat(cluster: Cluster, o: FormatStreamOptions): Promise<StreamedRecord[]> {
  const options = formatOptions(o.format, o.options ?? {});
  const admin = await cluster.connect();
  try {
    const types = typesFromCatalog((await admin.query<CatalogTypeRow>(TYPES_QUERY)).rows);
    const values = o.format.values(types, options);
    const decoder = await createDecoder({ backend: backend.name, values });
    const common = {
      connection: cluster.connectionString, slot: { name: o.slot, create: true }, publications: [o.publication], ack: "manual" as const,
      decoder, binary: o.binary === true, messages: o.messages === true, reconnect: false as const,
    };
    const run = o.snapshot === true ? await replicate({ ...common, snapshot: {} }) : undefined;
    const stream = run?.stream ?? (await replicate(common));
    const out: StreamedRecord[] = [];
    let until: bigint | undefined;
    const pipeline = new Pipeline({
      source: run !== undefined ? snapshotSource(run) : streamSource(stream),
      format: o.format.create({ decoder, database: o.database, slot: o.slot }, options),
      replayDecoder: o.format.raw ? undefined : await createDecoder({ backend: backend.name, values }),
      raw: o.format.raw,
      sink: {
        name: "test",
        write: async (r) => {
          await o.sink?.write(r);
          for (let i = 0; i < r.length; i++) {
            const rel = r.relations[i];
            const key = r.keyOf(i);
            out.push({
              id: r.id(i), kind: r.kinds[i]!, schema: rel?.namespace, table: rel?.name, text: text.decode(r.bytesOf(i)),
              key: key === undefined ? undefined : text.decode(key), headers: r.headersOf(i), time: r.txns[i]!.time,
            });
          }
        },
        close: async () => {},
      },
      onAck: (lsn) => {
        if (until !== undefined && lsn >= until) pipeline.stop();
      },
    });
    const done = pipeline.run();
    // A sink that refuses fails the run while the workload is still going: awaited below, not unhandled meanwhile.
    done.catch(() => {});
    const client = await cluster.connect();
    try {
      await o.workload(client);
      until = await walEnd(client);
    } finally {
      await client.end();
    }
    // The workload's last commit may not be the last WAL record: stop once nothing more came after it.
    const idle = setInterval(() => {
      if (stream.lastReceivedLsn >= until! && !stream.ready) pipeline.stop();
    }, 300);
    try {
      await done;
    } finally {
      clearInterval(idle);
      await stream.stop();
      await admin.query("SELECT pg_drop_replication_slot($1)", [o.slot]).catch(() => {});
    }
    return out;
  } finally {
    await admin.end();
  }
}
