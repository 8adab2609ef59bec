/**
 * A sink's metrics (`sink.metrics()`, docs/metrics.md): what it was given,
 * what it confirmed durable, what is in flight between the two, the
 * attempts it will make again and the failures it will not. Every sink of
 * this folder owns one: `write()` goes through `track()`, and a retry is
 * told to `retried()`. Labelled with the sink's name only: one series per
 * sink, whatever the destination's subjects or streams.
 */
import { family, metricsText, type MetricFamily } from "../metrics/exposition.ts";
import type { Records } from "../pipeline/records.ts";

const P = "pgoutput_wasm_sink_";

export class SinkMeter {
  writes = 0;
  records = 0;
  bytes = 0;
  ackedRecords = 0;
  inFlightRecords = 0;
  inFlightBytes = 0;
  retries = 0;
  /** Writes rejected (a failure retrying will not fix); the later writes that reject with the same failure count once. */
  errors = 0;
  #lastError: unknown;

  constructor(readonly sink: string) {}

  /** Counts the batch given (its size read now: the sink owns it only until `written` settles) as in flight until `written` settles. */
  track(records: Records, written: Promise<void>): Promise<void> {
    const n = records.length;
    const bytes = records.bytes.len;
    this.writes++;
    this.records += n;
    this.bytes += bytes;
    this.inFlightRecords += n;
    this.inFlightBytes += bytes;
    const settle = () => {
      this.inFlightRecords -= n;
      this.inFlightBytes -= bytes;
    };
    return written.then(
      () => {
        settle();
        this.ackedRecords += n;
      },
      (e: unknown) => {
        settle();
        if (e !== this.#lastError) this.errors++;
        this.#lastError = e;
        throw e;
      },
    );
  }

  /** An attempt failed and will be made again. */
  retried(): void {
    this.retries++;
  }

  collectMetrics(): MetricFamily[] {
    const l = { sink: this.sink };
    return [
      family(`${P}writes_total`, "counter", "Batches handed to the sink.", l, this.writes),
      family(`${P}records_total`, "counter", "Records handed to the sink.", l, this.records),
      family(`${P}bytes_total`, "counter", "Bytes of the records handed to the sink.", l, this.bytes),
      family(`${P}acked_records_total`, "counter", "Records the sink confirmed durable at its destination.", l, this.ackedRecords),
      family(`${P}in_flight_records`, "gauge", "Records handed to the sink and not yet confirmed.", l, this.inFlightRecords),
      family(`${P}in_flight_bytes`, "gauge", "Bytes handed to the sink and not yet confirmed.", l, this.inFlightBytes),
      family(`${P}retries_total`, "counter", "Failed attempts the sink makes again after a backoff (a broker restarting, a 503).", l, this.retries),
      family(`${P}errors_total`, "counter", "Permanent failures: writes rejected with an error retrying will not fix.", l, this.errors),
    ];
  }

  metrics(): Promise<string> {
    return metricsText(this);
  }
}

/** A sink written as a class: its name, its meter, and the meter's metrics as `Sink` has them (bound: they may be passed on alone). */
export abstract class MeteredSink {
  protected readonly meter: SinkMeter;
  readonly metrics = (): Promise<string> => this.meter.metrics();
  readonly collectMetrics = (): MetricFamily[] => this.meter.collectMetrics();

  constructor(readonly name: string) {
    this.meter = new SinkMeter(name);
  }
}
