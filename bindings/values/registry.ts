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
}

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
  if (o.timestamp === "bigint") {
    set(Oid.timestamp, textTimestamp, binaryTimestamp);
    set(Oid.timestamptz, textTimestamptz, binaryTimestamp);
  } else if (o.timestamp === "iso") {
    set(Oid.timestamp, (b, p, n) => timestampISO(textTimestamp(b, p, n), false), (b, p, n) => timestampISO(binaryTimestamp(b, p, n), false));
    set(Oid.timestamptz, (b, p, n) => timestampISO(textTimestamptz(b, p, n), true), (b, p, n) => timestampISO(binaryTimestamp(b, p, n), true));
  } else {
    set(Oid.timestamp, (b, p, n) => timestampDate(textTimestamp(b, p, n)), (b, p, n) => timestampDate(binaryTimestamp(b, p, n)));
    set(Oid.timestamptz, (b, p, n) => timestampDate(textTimestamptz(b, p, n)), (b, p, n) => timestampDate(binaryTimestamp(b, p, n)));
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
