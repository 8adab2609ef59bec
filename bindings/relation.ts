/**
 * The relation cache entry: what a Relation (`R`) message said about a table.
 * It owns a private copy of the message's bytes, so it outlives the batch it
 * came from, and decodes its strings on first touch.
 */
import { readString } from "./utf8.ts";
import { copyBytes } from "./copy-bytes.ts";

/** Replica identity setting of a relation: `d` default, `n` nothing, `f` full, `i` index. */
export type ReplicaIdentity = "d" | "n" | "f" | "i";

/** One column of a Relation message. */
export interface RelationColumn {
  /** Flags: 1 marks the column as part of the key. */
  readonly flags: number;
  /** Whether the column is part of the replica identity key (flags bit 0). */
  readonly isKey: boolean;
  /** Name of the column. */
  readonly name: string;
  /** OID of the column's data type. */
  readonly typeId: number;
  /** Type modifier of the column (`atttypmod`), -1 when none. */
  readonly typeModifier: number;
}

/**
 * Where the fields of a Relation message are, as found by a decoder that
 * already validated them. Offsets are into `bytes`.
 */
export interface RelationLayout {
  relationId: number;
  namespaceOffset: number;
  namespaceLength: number;
  nameOffset: number;
  nameLength: number;
  replicaIdentity: number;
  /** Per column: the offset of its flags byte and the byte length of its name, interleaved. */
  columns: Int32Array;
}

export class Relation {
  /** OID of the relation. */
  readonly relationId: number;
  /** Replica identity: `d` default, `n` nothing, `f` full, `i` index. */
  readonly replicaIdentity: ReplicaIdentity;
  /** Number of columns. */
  readonly columnCount: number;

  readonly #bytes: Uint8Array;
  readonly #layout: RelationLayout;
  #namespace: string | undefined;
  #name: string | undefined;
  #columns: RelationColumn[] | undefined;
  #byName: Map<string, number> | undefined;

  /** `bytes` must be owned by the relation (a copy), `layout` validated. */
  constructor(bytes: Uint8Array, layout: RelationLayout) {
    this.#bytes = bytes;
    this.#layout = layout;
    this.relationId = layout.relationId;
    this.replicaIdentity = String.fromCharCode(layout.replicaIdentity) as ReplicaIdentity;
    this.columnCount = layout.columns.length >> 1;
  }

  /** Namespace (schema); empty for `pg_catalog`. */
  get namespace(): string {
    return (this.#namespace ??= readString(this.#bytes, this.#layout.namespaceOffset, this.#layout.namespaceLength));
  }

  /** Relation name. */
  get name(): string {
    return (this.#name ??= readString(this.#bytes, this.#layout.nameOffset, this.#layout.nameLength));
  }

  /** The columns as the Relation message listed them. */
  get columns(): readonly RelationColumn[] {
    return (this.#columns ??= this.#readColumns());
  }

  /** Index of the column with this name, or -1. */
  columnIndex(name: string): number {
    if (this.#byName === undefined) {
      this.#byName = new Map();
      const cols = this.columns;
      for (let i = 0; i < cols.length; i++) this.#byName.set(cols[i]!.name, i);
    }
    return this.#byName.get(name) ?? -1;
  }

  /** A copy of the Relation message this entry was made from. */
  bytes(): Uint8Array {
    return copyBytes(this.#bytes, 0, this.#bytes.length);
  }

  toJSON(): Record<string, unknown> {
    return {
      relationId: this.relationId,
      namespace: this.namespace,
      relationName: this.name,
      replicaIdentity: this.replicaIdentity,
      columns: this.columns.map((c) => ({ ...c })),
    };
  }

  #readColumns(): RelationColumn[] {
    const b = this.#bytes;
    const pos = this.#layout.columns;
    const out: RelationColumn[] = new Array(pos.length >> 1);
    for (let i = 0; i < out.length; i++) {
      const p = pos[2 * i]!;
      const nameLength = pos[2 * i + 1]!;
      const t = p + 1 + nameLength + 1; // flags byte, name, NUL
      const flags = b[p]!;
      out[i] = {
        flags,
        isKey: (flags & 1) !== 0,
        name: readString(b, p + 1, nameLength),
        typeId: ((b[t]! << 24) | (b[t + 1]! << 16) | (b[t + 2]! << 8) | b[t + 3]!) >>> 0,
        typeModifier: (b[t + 4]! << 24) | (b[t + 5]! << 16) | (b[t + 6]! << 8) | b[t + 7]!,
      };
    }
    return out;
  }
}
