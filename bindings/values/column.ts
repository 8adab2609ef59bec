/**
 * One column's value, as both backends' tuples compute it: by the column's
 * type from the relation (unknown without one: text stays a string, binary
 * stays bytes), straight from the bytes in place, without a copy. Errors
 * are `PgoutputError`s naming the column, its type OID and format.
 */
import type { Relation } from "../relation.ts";
import { unchangedToast } from "../tuple.ts";
import type { ValueDecoder } from "./decoder.ts";
import { inColumn } from "./failure.ts";
import { KIND_BINARY as KIND_B, KIND_TEXT as KIND_T, KIND_UNCHANGED as KIND_U } from "../tape.ts";

/** `kind` is the TupleData kind byte; for `t`/`b` the value is bytes[offset, offset + length). */
export function columnValue(
  values: ValueDecoder, relation: Relation | undefined, index: number,
  kind: number, bytes: Uint8Array, offset: number, length: number,
): unknown {
  if (kind === KIND_T || kind === KIND_B) {
    const column = relation?.columns[index];
    const typeId = column?.typeId ?? 0;
    const typeModifier = column?.typeModifier ?? -1;
    try {
      return kind === KIND_T
        ? values.text(typeId, bytes, offset, length, typeModifier)
        : values.binary(typeId, bytes, offset, length, typeModifier);
    } catch (e) {
      // The value decoder made it a PgoutputError with the type; the column is known only here.
      throw inColumn(e, relation, index, typeId, kind === KIND_T ? "text" : "binary");
    }
  }
  return kind === KIND_U ? unchangedToast : null;
}
