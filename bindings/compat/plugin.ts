/**
 * A drop-in for pg-logical-replication's `PgoutputPlugin`, decoding with
 * pgoutput-wasm: `service.subscribe(new PgoutputWasmPlugin(options), slot)`.
 *
 * pg-logical-replication's `LogicalReplicationService` drives a plugin by two
 * calls: `start(client, slotName, lastLsn)` once connected (it issues
 * START_REPLICATION on the replication connection and returns the query's
 * promise, which settles when streaming ends), and `parse(payload)` for every
 * XLogData, with the pgoutput message (the CopyData payload after its 25-byte
 * header); what `parse` returns is emitted as the service's `data` event.
 *
 * The class has the members of pg-logical-replication's `AbstractPlugin`
 * (`options`, `name`, `start`, `parse`) without extending it: this package
 * never loads pg-logical-replication (its users have it; it is an optional
 * peer dependency, for the version range only).
 */
import type { PgoutputDecoder } from "../decoder.ts";
import { createDecoderSync } from "../create-decoder.ts";
import { TapeDecoder } from "../kernel/decoder.ts";
import { startReplicationCommand as pgStartReplicationCommand } from "../pg/commands.ts";
import { CompatConverter } from "./convert.ts";
import { RecordConverter } from "./record.ts";
import { pgTypes, type TypeParserSource } from "./type-parsers.ts";
import type { AnyMessage, Options } from "./types.ts";

export interface PgoutputWasmPluginOptions extends Options {
  /** The decoder to use (one per plugin: it holds the stream's relations). Default: a new one, see `backend`. */
  decoder?: PgoutputDecoder;
  /** Backend of the decoder made when none is given: `auto` (default: wasm where it runs, else the pure-TS baseline). */
  backend?: "wasm" | "baseline" | "auto";
  /**
   * Text parsers for column values, e.g. `pg.types` or a client's type
   * overrides. Default: `pg.types` of the installed `pg` (what
   * pg-logical-replication uses), loaded at the first Relation message.
   */
  typeParsers?: TypeParserSource;
}

/** The replication connection, as far as the plugin uses it (a `pg.Client`). */
export interface ReplicationQueryable {
  query(sql: string): Promise<unknown>;
}

export class PgoutputWasmPlugin {
  readonly options: PgoutputWasmPluginOptions;
  readonly #converter: CompatConverter;
  #decoder: PgoutputDecoder | undefined;
  /** The fast path over a tape decoder (record.ts), made at the first parse(). */
  #records: RecordConverter | undefined;

  constructor(options: PgoutputWasmPluginOptions) {
    this.options = options;
    this.#decoder = options.decoder;
    const given = options.typeParsers;
    this.#converter = new CompatConverter(given === undefined ? pgTypes : () => given);
  }

  /** The output plugin's name, `pgoutput`. */
  get name(): string {
    return "pgoutput";
  }

  /** The decoder doing the work (made on first use). */
  get decoder(): PgoutputDecoder {
    return (this.#decoder ??= createDecoderSync({ backend: this.options.backend ?? "auto" }));
  }

  /**
   * Issues START_REPLICATION for the slot from `lastLsn` with this plugin's
   * options; resolves when the server ends the stream. A new session starts
   * outside any streamed block (a connection lost inside one leaves none
   * behind).
   */
  start(client: ReplicationQueryable, slotName: string, lastLsn: string): Promise<unknown> {
    this.decoder.inStream = false;
    return client.query(startReplicationCommand(slotName, lastLsn, this.options));
  }

  /** Decodes one pgoutput message into a plain object in pg-logical-replication's shape. */
  parse(buffer: Uint8Array): AnyMessage {
    const records = this.#records;
    if (records !== undefined) return records.parse(buffer);
    const decoder = this.decoder;
    // Both backends are tape decoders: read the message's record, no batch or view (record.ts).
    if (decoder instanceof TapeDecoder) return (this.#records = new RecordConverter(decoder, this.#converter)).parse(buffer);
    return this.#converter.convert(decoder.decode(buffer));
  }
}

/**
 * The START_REPLICATION command for a slot, start LSN (`X/Y`) and options, as
 * pg-logical-replication's PgoutputPlugin writes it: its option order,
 * explicit `false` values, publication names joined as given (unquoted).
 */
export function startReplicationCommand(slotName: string, lastLsn: string, options: Options): string {
  const proto = options.protoVersion;
  if (!Number.isInteger(proto) || proto < 1) throw new Error(`bad protoVersion: ${String(proto)}`);
  const params: [string, string][] = [
    ["proto_version", String(proto)],
    ["publication_names", options.publicationNames.join(",")],
  ];
  if (options.messages !== undefined) params.push(["messages", String(options.messages)]);
  if (options.binary !== undefined) params.push(["binary", String(options.binary)]);
  if (options.streaming !== undefined) {
    const s = options.streaming;
    params.push(["streaming", s === true ? "on" : s === false ? "off" : s]);
  }
  if (options.twoPhase !== undefined) params.push(["two_phase", String(options.twoPhase)]);
  if (options.origin !== undefined) params.push(["origin", options.origin]);
  return pgStartReplicationCommand(slotName, lastLsn, params);
}
