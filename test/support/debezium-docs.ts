/**
 * The events of Debezium's PostgreSQL connector documentation
 * ("Data change events", "Transaction metadata"), written down as shapes:
 * the field names and where each holds what kind of JSON value are the
 * documentation's; the values are our own (the documentation's example
 * rows: the `customers` table). `matchShape` checks an event against one.
 *
 * Where the documentation's examples and the connector disagree, the
 * connector's schema is taken and the difference named:
 * - `source.snapshot` is a string ("true", "false", …: the connector's
 *   `io.debezium.data.Enum`), not the examples' boolean;
 * - every envelope field of the value schema is present, `null` when it
 *   has no value (the JSON converter writes the schema's fields): the
 *   examples leave out `transaction` (metadata off) and a truncate's
 *   `before` / `after`.
 */

/** A sentinel: any value of this JSON kind. */
export interface Kind {
  $kind: "integer" | "string" | "boolean" | "object" | "array" | "null" | "integer|null" | "string|null";
}
export type Shape = null | boolean | number | string | Kind | Shape[] | { [key: string]: Shape };

const k = (kind: Kind["$kind"]): Kind => ({ $kind: kind });

/** `source` of a streamed change of `inventory.customers` (the create example's source). */
export const CHANGE_SOURCE = {
  version: k("string"), connector: "postgresql", name: k("string"), ts_ms: k("integer"), snapshot: "false", db: k("string"),
  sequence: k("string"), ts_us: k("integer"), ts_ns: k("integer"), schema: "inventory", table: "customers",
  txId: k("integer"), lsn: k("integer"), xmin: null,
} satisfies Shape;

const ENVELOPE_TIMES = { ts_ms: k("integer"), ts_us: k("integer"), ts_ns: k("integer") };

/** The _create_ event: Anne Kretchmar inserted. */
export const CREATE = {
  before: null,
  after: { id: 1, first_name: "Anne", last_name: "Kretchmar", email: "annek@noanswer.org" },
  source: CHANGE_SOURCE, op: "c", ...ENVELOPE_TIMES, transaction: null,
} satisfies Shape;

/** The _update_ event with REPLICA IDENTITY DEFAULT and the key unchanged: no old values (`before` is null). */
export const UPDATE = {
  before: null,
  after: { id: 1, first_name: "Anne Marie", last_name: "Kretchmar", email: "annek@noanswer.org" },
  source: CHANGE_SOURCE, op: "u", ...ENVELOPE_TIMES, transaction: null,
} satisfies Shape;

/** The _delete_ event with REPLICA IDENTITY DEFAULT: `before` holds the primary key columns. */
export const DELETE = {
  before: { id: 2 }, after: null, source: CHANGE_SOURCE, op: "d", ...ENVELOPE_TIMES, transaction: null,
} satisfies Shape;

/** A primary key change: a delete of the old key, then a create of the new one. */
export const KEY_CHANGE_DELETE = { ...DELETE, before: { id: 1 } } satisfies Shape;
export const KEY_CHANGE_CREATE = { ...CREATE, after: { id: 2, first_name: "Anne Marie", last_name: "Kretchmar", email: "annek@noanswer.org" } } satisfies Shape;

/** The _truncate_ event (its message key is null). */
export const TRUNCATE = {
  before: null, after: null, source: CHANGE_SOURCE, op: "t", ...ENVELOPE_TIMES, transaction: k("object"),
} satisfies Shape;

/** A transactional _message_ event: schema and table "", `content` base64 (of "bar", ours: the example's is not base64 of a word). */
export const MESSAGE = {
  source: { ...CHANGE_SOURCE, schema: "", table: "" }, op: "m", ...ENVELOPE_TIMES, message: { prefix: "foo", content: "YmFy" },
} satisfies Shape;

/** A non-transactional one: no txId. */
export const MESSAGE_OUTSIDE = {
  ...MESSAGE, source: { ...CHANGE_SOURCE, schema: "", table: "", txId: null },
} satisfies Shape;

/** A snapshot row (`op` `r`): `before` null, `source.snapshot` "true", no transaction id. */
export const READ = {
  before: null,
  after: { id: 1001, first_name: "Sally", last_name: "Thomas", email: "sally.thomas@acme.com" },
  source: { ...CHANGE_SOURCE, snapshot: "true", txId: null }, op: "r", ...ENVELOPE_TIMES, transaction: null,
} satisfies Shape;

/** Transaction metadata: BEGIN and END events, and the block a change carries. */
export const BEGIN = { status: "BEGIN", id: k("string"), event_count: null, data_collections: null, ts_ms: k("integer") } satisfies Shape;
export const END = {
  status: "END", id: k("string"), event_count: k("integer"), data_collections: k("array"), ts_ms: k("integer"),
} satisfies Shape;
export const TRANSACTION = { id: k("string"), total_order: k("integer"), data_collection_order: k("integer") } satisfies Shape;

/** Where `actual` (parsed JSON) differs from `shape`, or [] when it matches: the same keys, each value as the shape says. */
export function shapeDiff(actual: unknown, shape: Shape, path = "$"): string[] {
  if (shape !== null && typeof shape === "object" && "$kind" in shape && typeof shape.$kind === "string") {
    return shape.$kind.split("|").some((kind) => kindOf(actual) === kind) ? [] : [`${path}: ${kindOf(actual)} ${JSON.stringify(actual)}, not ${shape.$kind}`];
  }
  if (Array.isArray(shape)) {
    if (!Array.isArray(actual) || actual.length !== shape.length) return [`${path}: ${JSON.stringify(actual)}, not an array of ${shape.length}`];
    return shape.flatMap((s, i) => shapeDiff(actual[i], s, `${path}[${i}]`));
  }
  if (shape !== null && typeof shape === "object") {
    if (actual === null || typeof actual !== "object" || Array.isArray(actual)) return [`${path}: ${JSON.stringify(actual)}, not an object`];
    const a = actual as Record<string, unknown>;
    const keys = Object.keys(shape);
    const out = Object.keys(a).filter((key) => !keys.includes(key)).map((key) => `${path}.${key}: not in the documented event`);
    for (const key of keys) {
      if (!Object.hasOwn(a, key)) out.push(`${path}.${key}: missing`);
      else out.push(...shapeDiff(a[key], (shape as Record<string, Shape>)[key]!, `${path}.${key}`));
    }
    return out;
  }
  return Object.is(actual, shape) ? [] : [`${path}: ${JSON.stringify(actual)}, not ${JSON.stringify(shape)}`];
}

function kindOf(v: unknown): string {
  if (v === null) return "null";
  if (Array.isArray(v)) return "array";
  if (typeof v === "number") return Number.isInteger(v) ? "integer" : "number";
  return typeof v;
}
