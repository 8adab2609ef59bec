/**
 * Benchmark corpora: pgoutput streams captured from a real PostgreSQL.
 *
 *   npx tsx devkit/capture/corpus.ts [--scale default|small|<MB>] [--pg 15|18]
 *       [--variant proto1-text|proto2-stream|binary|proto4-parallel|all]
 *       [--out bench/corpus] [--force] [--quiet]
 *
 * Starts a throw-away cluster (devkit/cluster/cluster.ts), runs the workloads
 * of corpus-workloads.ts in rounds, and after each round drains the
 * slot with pg_logical_slot_get_binary_changes and appends the messages to
 * the output, so memory stays bounded by one round. Stops once the message
 * bytes (sum of message lengths, without the 4-byte frame lengths) reach the
 * target: default 180 MiB (about 189 MB), small 3 MiB, or <MB> MiB.
 *
 * Output: <out>/<variant>-pg<major>-<scale>.bin in the capture format
 * ([uint32 BE length][message]..., uncompressed) and a JSON sidecar
 * <same>.json (see CorpusInfo). An existing corpus is kept unless --force.
 *
 * Variants: proto1-text (proto_version 1), proto2-stream (2, streaming 'on',
 * logical_decoding_work_mem 64kB so large transactions are streamed), binary
 * (proto_version 1, binary 'true'), proto4-parallel (PostgreSQL 18,
 * proto_version 4, streaming 'parallel'). All with messages 'true'. The
 * first three default to PostgreSQL 15, proto4-parallel to 18.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { parseArgs } from "node:util";
import type { Client } from "pg";
import { startCluster, type Cluster, type PgMajor } from "../cluster/cluster.ts";
import { createSlot, encodeCapture, getChanges, type SlotRow } from "./slot.ts";
import {
  INITIAL_BYTES_PER_UNIT,
  MIX,
  ORIGIN_SESSION_SETUP,
  PUBLICATION,
  SCHEMA,
  TABLES,
  WORKLOADS,
  WorkloadState,
  docsRound,
  miscRound,
  oltpRound,
  setupSql,
  wideRound,
  type RoundWork,
  type WorkloadName,
} from "./corpus-workloads.ts";

export type CorpusVariant = "proto1-text" | "proto2-stream" | "binary" | "proto4-parallel";
export const VARIANTS: readonly CorpusVariant[] = ["proto1-text", "proto2-stream", "binary", "proto4-parallel"];

/** "default" (180 MiB of message bytes), "small" (3 MiB), or a size in MiB. */
export type CorpusScale = "default" | "small" | number | string;

export interface CorpusOptions {
  scale?: CorpusScale;
  /** PostgreSQL major version; default 15, 18 for proto4-parallel. */
  major?: PgMajor;
  /** Output folder; default bench/corpus of the repository. */
  out?: string;
  /** Regenerate even if the corpus exists. */
  force?: boolean;
  /** Progress lines (default: to stderr); pass () => {} for silence. */
  log?: (line: string) => void;
}

/** The JSON sidecar. */
export interface CorpusInfo {
  variant: CorpusVariant;
  major: PgMajor;
  serverVersion: string;
  /** Options given to pg_logical_slot_get_binary_changes. */
  options: Record<string, string>;
  /** Extra server settings the cluster ran with (beyond bindings/cli/server.ts's defaults). */
  settings: Record<string, string>;
  scale: string;
  targetBytes: number;
  /** Number of messages. */
  messages: number;
  /** Message bytes: sum of the message lengths. */
  bytes: number;
  /** File size: bytes + 4 per message. */
  frameBytes: number;
  /** Messages per tag character ("B", "C", "I", ...). */
  countsByTag: Record<string, number>;
  /** TupleData columns per kind ("n", "u", "t", "b") over all Insert/Update/Delete messages. */
  cellsByKind: Record<string, number>;
  /** Message bytes from Stream Start to Stream Stop inclusive (0 without streaming). */
  bytesInStreams: number;
  /** Message bytes per workload (a transaction's messages go to the workload of its first change). */
  bytesByWorkload: Record<WorkloadName, number>;
  /** Work done: units per workload (wide: rows inserted, oltp: transactions, docs: documents inserted, misc: ledger operations). */
  unitsByWorkload: Record<WorkloadName, number>;
  /** Transactions the workloads committed (planned; pgoutput skips the empty ones). */
  transactions: number;
  rounds: number;
  generatedAt: string;
  /** Wall-clock seconds for the whole generation (cluster start to stop). */
  seconds: number;
}

const MB = 1024 * 1024;
/** bench/corpus of the repository, also when this file runs compiled from build/bench. */
function repoRoot(): string {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  while (!fs.existsSync(path.join(dir, "package.json")) && path.dirname(dir) !== dir) dir = path.dirname(dir);
  return dir;
}
const DEFAULT_OUT = path.join(repoRoot(), "bench", "corpus");

interface VariantDef {
  options: Record<string, string>;
  settings: Record<string, string>;
  defaultMajor: PgMajor;
  minMajor: PgMajor;
}

// Non-streaming variants get a large logical_decoding_work_mem so that the
// reorder buffer does not spill every transaction to disk (only speed).
const VARIANT_DEFS: Record<CorpusVariant, VariantDef> = {
  "proto1-text": {
    options: { proto_version: "1", publication_names: PUBLICATION, messages: "true" },
    settings: { logical_decoding_work_mem: "'256MB'" },
    defaultMajor: 15,
    minMajor: 15,
  },
  "proto2-stream": {
    options: { proto_version: "2", publication_names: PUBLICATION, messages: "true", streaming: "on" },
    settings: { logical_decoding_work_mem: "'64kB'" },
    defaultMajor: 15,
    minMajor: 15,
  },
  binary: {
    options: { proto_version: "1", publication_names: PUBLICATION, messages: "true", binary: "true" },
    settings: { logical_decoding_work_mem: "'256MB'" },
    defaultMajor: 15,
    minMajor: 15,
  },
  "proto4-parallel": {
    options: { proto_version: "4", publication_names: PUBLICATION, messages: "true", streaming: "parallel" },
    settings: { logical_decoding_work_mem: "'64kB'" },
    defaultMajor: 18,
    minMajor: 18,
  },
};

function isVariant(v: string): v is CorpusVariant {
  return (VARIANTS as readonly string[]).includes(v);
}

/** Target message bytes and the name used in the file name. */
export function resolveScale(scale: CorpusScale = "default"): { name: string; targetBytes: number; roundBytes: number } {
  if (scale === "default") return { name: "default", targetBytes: 180 * MB, roundBytes: 8 * MB };
  if (scale === "small") return { name: "small", targetBytes: 3 * MB, roundBytes: 1 * MB };
  const mb = typeof scale === "number" ? scale : Number(scale);
  if (!Number.isFinite(mb) || mb <= 0) throw new Error(`bad --scale ${String(scale)}: use default, small or a size in MB`);
  const targetBytes = Math.round(mb * MB);
  return {
    name: `${String(+mb.toFixed(3)).replace(".", "_")}mb`,
    targetBytes,
    roundBytes: Math.min(8 * MB, Math.max(MB, Math.round(targetBytes / 20))),
  };
}

/** Path of the corpus file for a variant, major and scale (whether or not it exists). */
export function corpusPath(variant: CorpusVariant, opts: CorpusOptions = {}): string {
  const major = opts.major ?? VARIANT_DEFS[variant].defaultMajor;
  const { name } = resolveScale(opts.scale);
  return path.resolve(opts.out ?? DEFAULT_OUT, `${variant}-pg${major}-${name}.bin`);
}

/** The sidecar path for a corpus file. */
export const sidecarPath = (bin: string): string => bin.replace(/\.bin$/, "") + ".json";

/**
 * Returns the path of the corpus file, generating it first if it (or its
 * sidecar) is missing or `force` is set.
 */
export async function ensureCorpus(variant: CorpusVariant, opts: CorpusOptions = {}): Promise<string> {
  if (!isVariant(variant)) throw new Error(`unknown corpus variant ${String(variant)}`);
  const major = opts.major ?? VARIANT_DEFS[variant].defaultMajor;
  if (major < VARIANT_DEFS[variant].minMajor) {
    throw new Error(`variant ${variant} needs PostgreSQL ${VARIANT_DEFS[variant].minMajor}+ (asked for ${major})`);
  }
  const file = corpusPath(variant, { ...opts, major });
  if (!opts.force && fs.existsSync(file) && fs.existsSync(sidecarPath(file))) return file;
  await generateCorpus(variant, major, file, opts);
  return file;
}

// ----------------------------------------------------------- statistics

class Stats {
  messages = 0;
  bytes = 0;
  countsByTag: Record<string, number> = {};
  cellsByKind: Record<string, number> = {};
  bytesInStreams = 0;
  bytesByWorkload = Object.fromEntries(WORKLOADS.map((w) => [w, 0])) as Record<WorkloadName, number>;
  /** Inside Stream Start ... Stream Stop: messages carry an xid after the tag. */
  private inStream = false;

  constructor(private readonly workloadOf: Map<number, WorkloadName>) {}

  /** Relation OID of a message that has one (I U D R), counting the TupleData cells of I U D. */
  private relationOf(m: Uint8Array, tag: number): number | undefined {
    const view = new DataView(m.buffer, m.byteOffset, m.byteLength);
    let off = 1 + (this.inStream ? 4 : 0);
    if (tag !== 0x49 && tag !== 0x55 && tag !== 0x44 && tag !== 0x52) return undefined; // I U D R
    const oid = view.getUint32(off);
    if (tag === 0x52) return oid;
    off += 4;
    const tuple = () => {
      const n = view.getUint16(off);
      off += 2;
      for (let i = 0; i < n; i++) {
        const kind = String.fromCharCode(m[off]!);
        off++;
        this.cellsByKind[kind] = (this.cellsByKind[kind] ?? 0) + 1;
        if (kind === "t" || kind === "b") off += 4 + view.getUint32(off);
      }
    };
    // I: N tuple; U: [K|O tuple] N tuple; D: K|O tuple.
    while (off < m.length) {
      off++; // 'N', 'K' or 'O'
      tuple();
    }
    return oid;
  }

  /** Adds one round's messages (in order). */
  add(rows: SlotRow[]): void {
    // The workload of a transaction is that of its first change (by xid).
    const xidWorkload = new Map<string, WorkloadName>();
    for (let i = 0; i < rows.length; i++) {
      const m = rows[i]!.data;
      if (m.length === 0) throw new Error("empty pgoutput message");
      const tag = m[0]!;
      const ch = String.fromCharCode(tag);
      this.countsByTag[ch] = (this.countsByTag[ch] ?? 0) + 1;
      this.messages++;
      this.bytes += m.length;
      if (tag === 0x53) this.inStream = true; // S
      if (this.inStream) this.bytesInStreams += m.length;
      if (tag === 0x45) this.inStream = false; // E
      const oid = this.relationOf(m, tag);
      if (oid !== undefined) {
        const w = this.workloadOf.get(oid);
        if (w && !xidWorkload.has(rows[i]!.xid)) xidWorkload.set(rows[i]!.xid, w);
      }
    }
    for (let i = 0; i < rows.length; i++) {
      const r = rows[i]!;
      const w = xidWorkload.get(r.xid) ?? "misc";
      this.bytesByWorkload[w] += r.data.length;
    }
  }
}

// ----------------------------------------------------------- generation

const fmtMB = (n: number) => `${(n / MB).toFixed(1)} MB`;

async function runAll(db: Client, statements: string[]): Promise<void> {
  for (const s of statements) await db.query(s);
}

async function generateCorpus(variant: CorpusVariant, major: PgMajor, file: string, opts: CorpusOptions): Promise<void> {
  const log = opts.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  const def = VARIANT_DEFS[variant];
  const scale = resolveScale(opts.scale);
  const t0 = performance.now();
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const partial = `${file}.${process.pid}.partial`;
  const partialJson = `${sidecarPath(file)}.${process.pid}.partial`;
  log(`corpus ${path.basename(file)}: PostgreSQL ${major}, target ${fmtMB(scale.targetBytes)} of message bytes`);

  const conns: Client[] = [];
  const fh = await fs.promises.open(partial, "w");
  let cluster: Cluster | undefined;
  try {
    cluster = await startCluster(major, { settings: { ...def.settings, max_wal_size: "'2GB'" } });
    for (const sql of setupSql()) await cluster.query(sql);
    const oids = await cluster.query<{ oid: number; relname: string }>(
      `SELECT c.oid::int8 AS oid, c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
       WHERE n.nspname = $1 AND c.relname = ANY($2)`,
      [SCHEMA, Object.keys(TABLES)],
    );
    const workloadOf = new Map<number, WorkloadName>(oids.map((r) => [Number(r.oid), TABLES[r.relname]!]));
    const slot = "corpus_slot";
    await createSlot(cluster, slot);

    const db = {} as Record<WorkloadName, Client>;
    for (const w of WORKLOADS) {
      const c = await cluster.connect();
      conns.push(c);
      db[w] = c;
    }
    const originDb = await cluster.connect();
    conns.push(originDb);
    await originDb.query(ORIGIN_SESSION_SETUP);

    const st = new WorkloadState();
    const stats = new Stats(workloadOf);
    const units = Object.fromEntries(WORKLOADS.map((w) => [w, 0])) as Record<WorkloadName, number>;
    const perUnit = { ...INITIAL_BYTES_PER_UNIT };
    let transactions = 0;
    let frameBytes = 0;

    while (stats.bytes < scale.targetBytes) {
      st.round++;
      const roundBytes = Math.max(256 * 1024, Math.min(scale.roundBytes, scale.targetBytes - stats.bytes));
      // Size each workload so that its share of all bytes so far plus this
      // round's moves towards MIX.
      const plan = {} as Record<WorkloadName, number>;
      for (const w of WORKLOADS) {
        const want = MIX[w] * (stats.bytes + roundBytes) - stats.bytesByWorkload[w];
        const cap = (2 * MIX[w] * scale.roundBytes) / perUnit[w];
        plan[w] = Math.round(Math.min(cap, Math.max(0, want / perUnit[w])));
      }
      const work: Record<WorkloadName, RoundWork> = {
        wide: wideRound(st, plan.wide),
        oltp: oltpRound(st, plan.oltp),
        docs: docsRound(st, plan.docs),
        misc: miscRound(st, plan.misc),
      };
      const tw = performance.now();
      await Promise.all(
        WORKLOADS.map(async (w) => {
          await runAll(db[w], work[w].statements);
          if (work[w].originStatements) await runAll(originDb, work[w].originStatements!);
        }),
      );
      const tr = performance.now();
      const rows = await getChanges(cluster, slot, def.options);
      const before = { ...stats.bytesByWorkload };
      stats.add(rows);
      const frames = encodeCapture(rows.map((r) => r.data));
      await fh.write(frames);
      frameBytes += frames.length;
      for (const w of WORKLOADS) {
        units[w] += plan[w];
        transactions += work[w].transactions;
        if (units[w] > 0 && stats.bytesByWorkload[w] > 0) perUnit[w] = stats.bytesByWorkload[w] / units[w];
      }
      const gained = WORKLOADS.map((w) => `${w} ${plan[w]}→${fmtMB(stats.bytesByWorkload[w] - before[w])}`).join(", ");
      log(
        `  round ${st.round}: ${rows.length} messages, ${fmtMB(frames.length)} (${gained}); ` +
          `workload ${((tr - tw) / 1000).toFixed(1)} s, decoding ${((performance.now() - tr) / 1000).toFixed(1)} s; ` +
          `total ${fmtMB(stats.bytes)}`,
      );
    }
    await fh.close();

    const info: CorpusInfo = {
      variant,
      major,
      serverVersion: cluster.version,
      options: def.options,
      settings: def.settings,
      scale: scale.name,
      targetBytes: scale.targetBytes,
      messages: stats.messages,
      bytes: stats.bytes,
      frameBytes,
      countsByTag: sortKeys(stats.countsByTag),
      cellsByKind: sortKeys(stats.cellsByKind),
      bytesInStreams: stats.bytesInStreams,
      bytesByWorkload: stats.bytesByWorkload,
      unitsByWorkload: units,
      transactions,
      rounds: st.round,
      generatedAt: new Date().toISOString(),
      seconds: 0,
    };
    await closeAll(conns);
    await cluster.stop();
    cluster = undefined;
    info.seconds = Math.round((performance.now() - t0) / 100) / 10;
    fs.writeFileSync(partialJson, `${JSON.stringify(info, null, 2)}\n`);
    fs.renameSync(partialJson, sidecarPath(file));
    fs.renameSync(partial, file);
    const share = WORKLOADS.map((w) => `${w} ${((100 * info.bytesByWorkload[w]) / info.bytes).toFixed(0)}%`).join(", ");
    log(`corpus ${path.basename(file)}: ${info.messages} messages, ${fmtMB(info.bytes)} (${share}) in ${info.seconds} s`);
  } catch (err) {
    await fh.close().catch(() => {});
    fs.rmSync(partial, { force: true });
    fs.rmSync(partialJson, { force: true });
    throw err;
  } finally {
    await closeAll(conns);
    await cluster?.stop();
  }
}

async function closeAll(conns: Client[]): Promise<void> {
  const list = conns.splice(0);
  await Promise.all(list.map((c) => c.end().catch(() => {})));
}

function sortKeys<T>(o: Record<string, T>): Record<string, T> {
  return Object.fromEntries(Object.entries(o).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

// ------------------------------------------------------------------ CLI

async function main(argv: string[]): Promise<void> {
  const { values } = parseArgs({
    args: argv,
    options: {
      scale: { type: "string", default: "default" },
      pg: { type: "string" },
      variant: { type: "string", default: "all" },
      out: { type: "string", default: DEFAULT_OUT },
      force: { type: "boolean", default: false },
      quiet: { type: "boolean", default: false },
      help: { type: "boolean", short: "h", default: false },
    },
  });
  if (values.help) {
    process.stdout.write(
      "usage: npx tsx devkit/capture/corpus.ts [--scale default|small|<MB>] [--pg 15|18]\n" +
        "         [--variant proto1-text|proto2-stream|binary|proto4-parallel|all] [--out bench/corpus] [--force] [--quiet]\n",
    );
    return;
  }
  let major: PgMajor | undefined;
  if (values.pg !== undefined) {
    if (values.pg !== "15" && values.pg !== "18") throw new Error(`--pg must be 15 or 18, not ${values.pg}`);
    major = Number(values.pg) as PgMajor;
  }
  const v = values.variant!;
  if (v !== "all" && !isVariant(v)) throw new Error(`unknown --variant ${v}`);
  const list = v === "all" ? [...VARIANTS] : [v];
  resolveScale(values.scale); // validate early
  const log = values.quiet ? () => {} : undefined;
  for (const variant of list) {
    const m = major ?? VARIANT_DEFS[variant].defaultMajor;
    if (m < VARIANT_DEFS[variant].minMajor) {
      if (v === "all") {
        process.stderr.write(`skipping ${variant}: needs PostgreSQL ${VARIANT_DEFS[variant].minMajor}+\n`);
        continue;
      }
    }
    const file = await ensureCorpus(variant, { scale: values.scale, major: m, out: path.resolve(values.out!), force: values.force, log });
    process.stdout.write(`${file}\n`);
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(path.resolve(process.argv[1])).href) {
  main(process.argv.slice(2)).catch((err: unknown) => {
    process.stderr.write(`devkit/capture/corpus.ts: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  });
}
