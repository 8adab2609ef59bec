/**
 * The status line of `tail` and `capture` on stderr: messages/s, MiB/s, the
 * current LSN and the lag behind the server's end of WAL (and, with a sink
 * other than stdout, what it confirms per second, what is in flight to it,
 * and how far the slot's acknowledged position is behind), redrawn in place
 * on a terminal (a plain line every few seconds with `--progress` when
 * stderr is not one), and a summary when the command ends.
 */
import { formatLsn } from "../lsn.ts";
import { outside } from "./terminal.ts";

/** Counters the status line reads. */
export interface StatusSample {
  /** pgoutput messages received. */
  messages: number;
  /** Payload bytes received. */
  bytes: number;
  /** Lines printed (tail) or messages written (capture). */
  written: number;
  /** Transactions completed. */
  transactions: number;
  /** The current position: the highest WAL position received. */
  lsn: bigint;
  /** What is acknowledged to the server. */
  acked: bigint;
  /** Automatic reconnects so far (shown once there was one). */
  reconnects?: number;
  /** A phase shown at the line's end (the initial snapshot's progress). */
  phase?: string;
  /** A sink that confirms later than it is written to (a broker, a file): records it confirmed, and those in flight. */
  sink?: { acked: number; inFlight: number };
}

export interface StatusOptions {
  /** Where to draw (stderr). */
  out: NodeJS.WriteStream;
  /** Whether to show anything at all (a TTY, or `--progress`). */
  enabled: boolean;
  /** The command's name, the line's first word. */
  label: string;
  /** What `written` counts: "lines"; "messages" when it counts the messages received (not repeated in the summary). */
  writtenUnit: string;
  sample: () => StatusSample;
  /** The server's current end of WAL (polled once a second), for the lag. */
  walEnd?: () => Promise<bigint | undefined>;
}

const REDRAW_MS = 250;
const PLAIN_EVERY_MS = 2000;

const MIB = 1024 * 1024;

/** A size in binary units, labelled as such (KiB = 1024 bytes, MiB, GiB), as the rest of the project counts. */
export function formatBytes(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < MIB) return `${(n / 1024).toFixed(1)} KiB`;
  if (n < 1024 * MIB) return `${(n / MIB).toFixed(1)} MiB`;
  return `${(n / (1024 * MIB)).toFixed(2)} GiB`;
}

function rate(n: number): string {
  return n >= 10_000 ? `${Math.round(n / 1000)}k` : n >= 100 ? String(Math.round(n)) : n.toFixed(1);
}

export class StatusLine {
  readonly #o: StatusOptions;
  readonly #tty: boolean;
  readonly #started = performance.now();
  #timer: ReturnType<typeof setInterval> | undefined;
  #window: { t: number; messages: number; bytes: number; acked: number }[] = [];
  #walEnd: bigint | undefined;
  #polling = false;
  #lastPoll = 0;
  #lastPlain = 0;
  #drawn = false;
  #running = false;
  #finished = false;

  constructor(options: StatusOptions) {
    this.#o = options;
    this.#tty = options.out.isTTY === true;
  }

  get enabled(): boolean {
    return this.#o.enabled;
  }

  start(): void {
    if (!this.#o.enabled || this.#running) return;
    this.#running = true;
    this.#timer = setInterval(() => this.#tick(), REDRAW_MS);
    this.#timer.unref();
  }

  /** Erases the line (before other output to the same terminal); the next tick draws it again. */
  clear(): void {
    if (this.#drawn) {
      this.#o.out.write("\r\x1b[2K");
      this.#drawn = false;
    }
  }

  /**
   * A message of its own on stderr (when enabled), above the status line.
   * Notes carry outside text (server warnings, connection targets): redacted,
   * printable, and one line (a newline from a server could fake another).
   */
  note(text: string): void {
    if (!this.#o.enabled || this.#finished) return;
    this.clear();
    this.#o.out.write(`${outside(text).replace(/\s*\n\s*/g, " ")}\n`);
  }

  /** Stops redrawing; prints the summary (when enabled and started; once). */
  stop(extra?: string): void {
    if (this.#timer !== undefined) clearInterval(this.#timer);
    this.#timer = undefined;
    this.#finished = true;
    if (!this.#running) return;
    this.#running = false;
    this.clear();
    const s = this.#o.sample();
    const seconds = (performance.now() - this.#started) / 1000;
    const parts = [
      `${this.#o.label}: ${this.#o.writtenUnit === "messages" ? "" : `${s.written} ${this.#o.writtenUnit}, `}${s.transactions} transactions`,
      `${s.messages} messages (${formatBytes(s.bytes)}) in ${seconds.toFixed(1)} s, ${rate(s.messages / Math.max(seconds, 1e-3))} msg/s, ${(s.bytes / MIB / Math.max(seconds, 1e-3)).toFixed(2)} MiB/s`,
      `acknowledged up to ${formatLsn(s.acked)}`,
    ];
    if (s.reconnects) parts.push(`${s.reconnects} reconnect${s.reconnects === 1 ? "" : "s"}`);
    this.#o.out.write(`${parts.join("; ")}${extra ? `; ${extra}` : ""}\n`);
  }

  #tick(): void {
    const now = performance.now();
    const s = this.#o.sample();
    this.#window.push({ t: now, messages: s.messages, bytes: s.bytes, acked: s.sink?.acked ?? 0 });
    while (this.#window.length > 2 && now - this.#window[0]!.t > 2000) this.#window.shift();
    if (this.#o.walEnd !== undefined && !this.#polling && now - this.#lastPoll >= 1000) {
      this.#polling = true;
      this.#lastPoll = now;
      this.#o.walEnd().then(
        (end) => { this.#walEnd = end ?? this.#walEnd; this.#polling = false; },
        () => { this.#polling = false; },
      );
    }
    if (!this.#tty && now - this.#lastPlain < PLAIN_EVERY_MS) return;
    this.#lastPlain = now;
    const first = this.#window[0]!;
    const dt = Math.max((now - first.t) / 1000, 1e-3);
    const mps = (s.messages - first.messages) / dt;
    const mibps = (s.bytes - first.bytes) / MIB / dt;
    const lag = this.#walEnd !== undefined ? (this.#walEnd > s.lsn ? this.#walEnd - s.lsn : 0n) : undefined;
    let text = `${this.#o.label}: ${this.#o.writtenUnit === "messages" ? `${s.messages} messages` : `${s.written} ${this.#o.writtenUnit}`} | ${rate(mps)} msg/s | ${mibps.toFixed(2)} MiB/s | lsn ${formatLsn(s.lsn)}`;
    if (lag !== undefined) text += ` | lag ${formatBytes(Number(lag))}`;
    if (s.sink !== undefined) {
      // What the sink confirmed per second, what waits for it, and how far the slot is behind the server.
      text += ` | ${rate((s.sink.acked - first.acked) / dt)} acked/s | in flight ${s.sink.inFlight}`;
      if (this.#walEnd !== undefined && s.acked > 0n) text += ` | slot lag ${formatBytes(Number(this.#walEnd > s.acked ? this.#walEnd - s.acked : 0n))}`;
    }
    if (s.reconnects) text += ` | reconnects ${s.reconnects}`;
    if (s.phase !== undefined) text += ` | ${s.phase}`;
    if (this.#tty) {
      const width = this.#o.out.columns ?? 120;
      if (text.length > width - 1) text = text.slice(0, width - 1);
      this.#o.out.write(`\r\x1b[2K${text}`);
      this.#drawn = true;
    } else {
      this.#o.out.write(`${text}\n`);
    }
  }
}
