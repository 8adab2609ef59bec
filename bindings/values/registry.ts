/**
 * The built-in parsers of scalar types, per format, for a set of options.
 * Arrays, overrides and user types are resolved by `ValueDecoder` on top.
 */
import type { Parse } from "./bytes.ts";
import * as binaryDatetime from "./binary/datetime.ts";
import { binaryDateDays, binaryInterval, binaryTimeMicros, binaryTimestamp, binaryTimetzMicros } from "./binary/datetime.ts";
import { binaryBit, binaryInt2vector, binaryOidvector, binaryPgLsn, binaryTid, textNumberList } from "./binary/misc.ts";
import { binaryCidr, binaryInet, binaryMacaddr, binaryMacaddr8 } from "./binary/network.ts";
import {
  binaryBool, binaryFloat4, binaryFloat8, binaryInt2, binaryInt4, binaryInt8, binaryInt8Number, binaryInt8String,
  binaryMoney, binaryMoneyString, binaryNumeric, binaryUint32, binaryUint64,
} from "./binary/numbers.ts";
import { binaryBytes, binaryChar, binaryJsonbText, binaryString, binaryUuid } from "./binary/strings.ts";
import { Oid } from "./oids.ts";
import type { ResolvedOptions } from "./options.ts";
import { dateDate, dateISO, dateString, timestampDate, timestampISO, timeString, timetzString } from "./represent.ts";
import {
  textDateDays, textInterval, textTimeMicros, textTimestamp as jsTextTimestamp, textTimestamptz as jsTextTimestamptz,
  textTimetzMicros,
} from "./text/datetime.ts";
// timetz parsers leave the zone in the module's live `lastZone` binding.
import * as textDatetime from "./text/datetime.ts";
import {
  textBool, textFloat4, textFloat8, textInt, textInt8, textInt8Number, textInt8String, textMoney, textNumeric,
  textUint32, textUint64,
} from "./text/numbers.ts";
import { parseJson, textBytea, textJson, textJsonb, textString } from "./text/strings.ts";
import {
  ROW_BOOL, ROW_FLOAT4, ROW_FLOAT8, ROW_INT, ROW_INT8, ROW_TIMESTAMP, ROW_TIMESTAMPTZ,
} from "../row-values.ts";

export interface FormatParsers {
  text?: Parse;
  binary?: Parse;
}

/**
 * Faster parsers a backend can offer for some text forms (the wasm kernel
 * parses timestamps in place). They return `undefined` for input they leave
 * to the JS parser, which then decides (and reports errors).
 */
export interface Accelerators {
  textTimestamp(bytes: Uint8Array, offset: number, length: number, withZone: boolean): bigint | undefined;
  /** The kernel's side table, where it has one (the wasm kernel's rowValues). */
  rowValues?: RowValues | undefined;
}

/** A kernel's side table (spec: bindings/row-values.ts), for the row readers (row-reader.ts). */
export interface RowValues {
  /**
   * Parses the coded text columns of the TUPLE at word `w` of `u8`'s memory
   * into the slots; returns the bit set of the slots written (0 when `u8`
   * is not the kernel's memory). Read the slots through `f64` and `i64`
   * after the call: it may re-take them.
   */
  read(u8: Uint8Array, w: number, plan0: number, plan1: number, plan2: number, plan3: number): number;
  readonly f64: Float64Array<ArrayBufferLike>;
  readonly i64: BigInt64Array<ArrayBufferLike>;
}

/**
 * What a built-in text parser's value is in the side table: its ROW_* code,
 * and what turns the slot into the parser's value (timestamps as the
 * `timestamp` option wants them; none: the slot is the value).
 */
export interface RowValue {
  readonly code: number;
  readonly then?: ((us: bigint) => unknown) | undefined;
}

/** The built-in text parsers a side table can stand in for, by identity: an override or a user's parser never is one. */
const rowValueOfParser = new WeakMap<Parse, RowValue>();

/** The side table's code for `parse`, if it is a built-in parser the kernel can stand in for. */
export function rowValueOf(parse: Parse): RowValue | undefined {
  return rowValueOfParser.get(parse);
}

function tag<P extends Parse>(parse: P, code: number, then?: (us: bigint) => unknown): P {
  rowValueOfParser.set(parse, { code, then });
  return parse;
}

tag(textBool, ROW_BOOL);
tag(textInt, ROW_INT);
tag(textUint32, ROW_INT);
// The short case only: the kernel declines more than 15 digits, which this parser range-checks.
tag(textInt8Number, ROW_INT);
tag(textInt8, ROW_INT8);
tag(textFloat8, ROW_FLOAT8);
tag(textFloat4, ROW_FLOAT4);

/** Built-in scalar parsers, by OID, for these options. */
export function builtinParsers(o: ResolvedOptions, accel?: Accelerators): Map<number, FormatParsers> {
  const m = new Map<number, FormatParsers>();
  const textTimestamp: (b: Uint8Array, p: number, n: number) => bigint = accel
    ? (b, p, n) => accel.textTimestamp(b, p, n, false) ?? jsTextTimestamp(b, p, n)
    : jsTextTimestamp;
  const textTimestamptz: (b: Uint8Array, p: number, n: number) => bigint = accel
    ? (b, p, n) => accel.textTimestamp(b, p, n, true) ?? jsTextTimestamptz(b, p, n)
    : jsTextTimestamptz;
  const set = (oids: number | number[], text: Parse | undefined, binary: Parse | undefined) => {
    for (const oid of Array.isArray(oids) ? oids : [oids]) m.set(oid, { text, binary });
  };

  set(Oid.bool, textBool, binaryBool);
  set(Oid.int2, textInt, binaryInt2);
  set(Oid.int4, textInt, binaryInt4);
  set([Oid.oid, Oid.xid, Oid.cid], textUint32, binaryUint32);
  set(Oid.xid8, textUint64, binaryUint64);
  if (o.int8 === "bigint") set(Oid.int8, textInt8, binaryInt8);
  else if (o.int8 === "number") set(Oid.int8, textInt8Number, binaryInt8Number);
  else set(Oid.int8, textInt8String, binaryInt8String);
  set(Oid.float4, textFloat4, binaryFloat4);
  set(Oid.float8, textFloat8, binaryFloat8);

  const numeric = o.numeric;
  if (numeric === "string") set(Oid.numeric, textNumeric, binaryNumeric);
  else if (numeric === "number") set(Oid.numeric, (b, p, n) => Number(textNumeric(b, p, n)), (b, p, n) => Number(binaryNumeric(b, p, n)));
  else set(Oid.numeric, (b, p, n) => numeric(textNumeric(b, p, n)), (b, p, n) => numeric(binaryNumeric(b, p, n)));

  if (o.money === "bigint") set(Oid.money, textMoney, binaryMoney);
  else set(Oid.money, textString, binaryMoneyString);

  // Types whose binary form is their text.
  set([Oid.text, Oid.varchar, Oid.bpchar, Oid.name, Oid.unknown, Oid.xml, Oid.refcursor], textString, binaryString);
  set(Oid.char, textString, binaryChar);
  set(Oid.uuid, textString, binaryUuid);
  set(Oid.bytea, textBytea, binaryBytes);

  const json = o.json;
  if (json === "parsed") {
    set(Oid.json, textJson, (b, p, n) => parseJson(binaryString(b, p, n), "json"));
    set(Oid.jsonb, textJsonb, (b, p, n) => parseJson(binaryJsonbText(b, p, n), "jsonb"));
  } else if (json === "raw") {
    set(Oid.json, textString, binaryString);
    set(Oid.jsonb, textString, binaryJsonbText);
  } else {
    set(Oid.json, (b, p, n) => json(textString(b, p, n)), (b, p, n) => json(binaryString(b, p, n)));
    set(Oid.jsonb, (b, p, n) => json(textString(b, p, n)), (b, p, n) => json(binaryJsonbText(b, p, n)));
  }

  // date
  if (o.date === "string") set(Oid.date, textString, (b, p, n) => dateString(binaryDateDays(b, p, n)));
  else if (o.date === "iso") set(Oid.date, (b, p, n) => dateISO(textDateDays(b, p, n)), (b, p, n) => dateISO(binaryDateDays(b, p, n)));
  else if (o.date === "days") set(Oid.date, textDateDays, binaryDateDays);
  else set(Oid.date, (b, p, n) => dateDate(textDateDays(b, p, n)), (b, p, n) => dateDate(binaryDateDays(b, p, n)));

  // time, timetz
  if (o.time === "string") {
    set(Oid.time, textString, (b, p, n) => timeString(binaryTimeMicros(b, p, n)));
    set(Oid.timetz, textString, (b, p, n) => {
      const us = binaryTimetzMicros(b, p, n);
      return timetzString(us, binaryDatetime.lastZone);
    });
  } else {
    set(Oid.time, textTimeMicros, binaryTimeMicros);
    set(
      Oid.timetz,
      (b, p, n) => {
        const microseconds = textTimetzMicros(b, p, n);
        return { microseconds, offset: textDatetime.lastZone };
      },
      (b, p, n) => {
        const microseconds = binaryTimetzMicros(b, p, n);
        return { microseconds, offset: binaryDatetime.lastZone };
      },
    );
  }

  // timestamp, timestamptz
  // Each text parser is tagged with what the side table's µs become under this option.
  if (o.timestamp === "bigint") {
    set(Oid.timestamp, tag(textTimestamp, ROW_TIMESTAMP), binaryTimestamp);
    set(Oid.timestamptz, tag(textTimestamptz, ROW_TIMESTAMPTZ), binaryTimestamp);
  } else if (o.timestamp === "iso") {
    const plain = (us: bigint) => timestampISO(us, false);
    const zoned = (us: bigint) => timestampISO(us, true);
    set(Oid.timestamp, tag((b, p, n) => plain(textTimestamp(b, p, n)), ROW_TIMESTAMP, plain), (b, p, n) => plain(binaryTimestamp(b, p, n)));
    set(Oid.timestamptz, tag((b, p, n) => zoned(textTimestamptz(b, p, n)), ROW_TIMESTAMPTZ, zoned), (b, p, n) => zoned(binaryTimestamp(b, p, n)));
  } else {
    set(Oid.timestamp, tag((b, p, n) => timestampDate(textTimestamp(b, p, n)), ROW_TIMESTAMP, timestampDate), (b, p, n) => timestampDate(binaryTimestamp(b, p, n)));
    set(Oid.timestamptz, tag((b, p, n) => timestampDate(textTimestamptz(b, p, n)), ROW_TIMESTAMPTZ, timestampDate), (b, p, n) => timestampDate(binaryTimestamp(b, p, n)));
  }

  set(Oid.interval, textInterval, binaryInterval);

  // Printed the way their text form reads.
  set([Oid.bit, Oid.varbit], textString, binaryBit);
  set(Oid.inet, textString, binaryInet);
  set(Oid.cidr, textString, binaryCidr);
  set(Oid.macaddr, textString, binaryMacaddr);
  set(Oid.macaddr8, textString, binaryMacaddr8);
  set(Oid.pg_lsn, textString, binaryPgLsn);
  set(Oid.tid, textString, binaryTid);
  set(Oid.int2vector, textNumberList, binaryInt2vector);
  set(Oid.oidvector, textNumberList, binaryOidvector);

  return m;
}

/** The parsers of a type with no built-in, override or known base: text → string, binary → bytes. */
export const fallback: Required<FormatParsers> = { text: textString, binary: binaryBytes };
