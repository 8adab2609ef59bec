// Type-checks against the installed package from a CommonJS TypeScript project (package.json has no
// "type": "module"), as scripts/pack-check.mjs runs it: moduleResolution node16 (each import here
// becomes a require(), so the types must be the CommonJS build's) and node10 (no `exports`: the
// `types` field and typesVersions). Strict, skipLibCheck off; @types/pg installed, as by any user of pg's types.
import { BaselineDecoder, PgoutputError, createDecoder, formatLsn, isPgoutputError, type PgoutputMessage } from "pgoutput-wasm";
import { PgoutputPlugin, type Pgoutput } from "pgoutput-wasm/pg-logical-replication";
import { ReplicationError, TransactionAssembler, replicate, type ReplicateOptions, type TransactionItem } from "pgoutput-wasm/pg";

async function main(): Promise<void> {
  const decoder = await createDecoder({ backend: "auto" });
  const base: BaselineDecoder = new BaselineDecoder();
  for (const msg of decoder.decodeBatch([new Uint8Array([0x45])])) {
    const m: PgoutputMessage = msg;
    if (m.kind === "Commit") console.log(formatLsn(m.commitLsn));
  }
  try {
    base.decode(new Uint8Array([0x42]));
  } catch (e) {
    if (isPgoutputError(e) && e.incomplete) console.log(e.code, e.offset);
    if (e instanceof PgoutputError) console.log(e.messageKind);
  }

  const plugin = new PgoutputPlugin({ protoVersion: 1, publicationNames: ["pub"] });
  const parsed: Pgoutput.AnyMessage = plugin.parse(new Uint8Array([0x42]));
  if (parsed.tag === "insert") {
    const row: Pgoutput.MessageInsert = parsed;
    console.log(row.relation.name, row.new);
  }

  const options: ReplicateOptions = { connection: "postgres://127.0.0.1/db", slot: "s", publications: "p" };
  const stream = await replicate(options);
  const assembler = new TransactionAssembler();
  for await (const msg of stream) {
    if (msg.kind === "PrimaryKeepalive") continue;
    const item: TransactionItem | undefined = assembler.push(msg);
    if (item?.kind === "commit") console.log(item.xid, item.messages.length);
  }
  const err: unknown = new ReplicationError("x", { code: "CONNECTION_LOST" });
  if (err instanceof ReplicationError && err.retryable) console.log(err.code);
}

main().catch((e: unknown) => console.error(e));
