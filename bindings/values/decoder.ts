/**
 * ValueDecoder: a column's bytes (text or binary format) → a JS value, by
 * type OID. Which parser a type gets is decided once per OID and format and
 * cached (a dense array below OID 16384, a Map above); parsing itself only
 * happens when a value is asked for.
 *
 * Order of precedence for a type OID and format:
 * 1. `parsers[oid].text` / `.binary`;
 * 2. `getTypeParser(oid, format)` (pg-types style), unless it has no parser;
 * 3. the built-in parser of a built-in type (see options.ts for what each gives);
 * 4. a built-in array type: its element type's parser (resolved by this same order) per element;
 * 5. `types[oid]`: a domain or enum via `baseType`, an array via `elementType`;
 * 6. otherwise the text as a string, or a copy of the binary bytes.
 *
 * @example
 * ```ts
 * const values = new ValueDecoder({ int8: "number" });
 * const bytes = new TextEncoder().encode("{1,NULL,3}");
 * values.text(Oid._int4, bytes, 0, bytes.length); // [1, null, 3]
 * ```
 */
import { readString } from "../utf8.ts";
import { binaryArrayParser, textArrayParser } from "./arrays.ts";
import type { Parse } from "./bytes.ts";
import { arrayDelimiter, arrayElement, FIRST_NORMAL_OID, Oid } from "./oids.ts";
import { resolveOptions, type ResolvedOptions, type TypeKnowledge, type TypeOverride, type ValueOptions } from "./options.ts";
import { builtinParsers, fallback, type Accelerators, type FormatParsers, type RowValues } from "./registry.ts";
import { valueFailure } from "./failure.ts";
import { copyBytes } from "../copy-bytes.ts";

export type Format = "text" | "binary";

interface BufferLike {
  from(bytes: Uint8Array): Uint8Array;
}

/**
 * The parsers chosen per OID for one format: an array for the built-in
 * OIDs (below FIRST_NORMAL_OID: nearly every value's lookup), a Map above.
 */
class ParserCache {
  readonly #low: (Parse | undefined)[] = new Array<Parse | undefined>(FIRST_NORMAL_OID).fill(undefined);
  readonly #high = new Map<number, Parse>();

  get(oid: number): Parse | undefined {
    return oid < FIRST_NORMAL_OID ? this.#low[oid] : this.#high.get(oid);
  }

  set(oid: number, p: Parse): void {
    if (oid < FIRST_NORMAL_OID) this.#low[oid] = p;
    else this.#high.set(oid, p);
  }

  delete(oid: number): void {
    if (oid < FIRST_NORMAL_OID) this.#low[oid] = undefined;
    else this.#high.delete(oid);
  }
}

export class ValueDecoder {
  /** The options with their defaults filled in. */
  readonly options: Readonly<ResolvedOptions>;

  readonly #builtins: Map<number, FormatParsers>;
  readonly #parsers: Record<number, TypeOverride> | undefined;
  readonly #types: Record<number, TypeKnowledge> | undefined;
  readonly #getTypeParser: ((oid: number, format?: Format) => unknown) | undefined;
  readonly #noParser: { text?: unknown; binary?: unknown } = {};
  readonly #text = new ParserCache();
  readonly #binary = new ParserCache();
  /** What Type messages taught (user `types` win over it). */
  readonly #learned = new Map<number, TypeKnowledge>();

  /** The backend's side table for the row readers (row-reader.ts), if it has one. */
  readonly rowValues: RowValues | undefined;

  /** `accelerators`: faster built-in parsers a backend offers (the wasm decoder's in-kernel timestamp parser and side table). */
  constructor(options: ValueOptions = {}, accelerators?: Accelerators) {
    this.rowValues = accelerators?.rowValues;
    this.options = Object.freeze(resolveOptions(options));
    this.#builtins = builtinParsers(this.options, accelerators);
    this.#parsers = options.parsers;
    this.#types = options.types;
    const g = options.getTypeParser;
    if (g !== undefined && typeof g !== "function") throw new TypeError("option getTypeParser: expected a function");
    this.#getTypeParser = g;
  }

  /**
   * The value of a text-format (`t`) column: bytes[offset, offset+length).
   * Throws only `PgoutputError` (INVALID_VALUE with `typeId`, `format`, and
   * as `cause` what a parser threw that was not one).
   */
  text(typeId: number, bytes: Uint8Array, offset: number, length: number, typeModifier = -1): unknown {
    return this.#value(this.#text, "text", typeId, bytes, offset, length, typeModifier);
  }

  /** The value of a binary-format (`b`) column: bytes[offset, offset+length). Throws as `text` does. */
  binary(typeId: number, bytes: Uint8Array, offset: number, length: number, typeModifier = -1): unknown {
    return this.#value(this.#binary, "binary", typeId, bytes, offset, length, typeModifier);
  }

  #value(cache: ParserCache, format: Format, typeId: number, bytes: Uint8Array, offset: number, length: number, typeModifier: number): unknown {
    try {
      return (cache.get(typeId) ?? this.#parser(typeId >>> 0, format))(bytes, offset, length, typeModifier);
    } catch (e) {
      throw valueFailure(e, typeId >>> 0, format);
    }
  }

  /** The value of a column from its text (a convenience for strings already decoded). */
  fromText(typeId: number, text: string, typeModifier = -1): unknown {
    const bytes = encoder.encode(text);
    return this.text(typeId, bytes, 0, bytes.length, typeModifier);
  }

  /**
   * Adds what a Type message says of a non-built-in type. pgoutput sends,
   * for a domain, the domain's OID with its base type's name and namespace:
   * a name of a built-in type in `pg_catalog` (namespace "") makes the OID
   * parse as that type. Knowledge given in the `types` option wins.
   */
  learnType(typeId: number, namespace: string, typeName: string): void {
    const oid = typeId >>> 0;
    if (this.#types?.[oid] !== undefined || namespace !== "") return;
    const base = (Oid as Record<string, number | undefined>)[typeName];
    if (base === undefined || base === oid || this.#learned.get(oid)?.baseType === base) return;
    this.#learned.set(oid, { baseType: base });
    this.#knowledge++;
    // Forget parsers already chosen for this OID.
    this.#text.delete(oid);
    this.#binary.delete(oid);
  }

  /**
   * Whether a text value of this type comes out as its text, a string: no
   * built-in parser, option, `types` entry or Type message makes it
   * anything else (enums, and types nothing is known of). Can change when
   * a Type message teaches something: `knowledge` counts those changes.
   */
  textIsString(typeId: number): boolean {
    return this.textParser(typeId) === fallback.text;
  }

  /** What is known of a non-built-in type: the `types` option's entry, else what a Type message taught. */
  knownType(typeId: number): TypeKnowledge | undefined {
    const oid = typeId >>> 0;
    return this.#types?.[oid] ?? this.#learned.get(oid);
  }

  /** Bumped whenever learnType() changes how an OID parses. */
  get knowledge(): number {
    return this.#knowledge;
  }
  #knowledge = 0;

  /** The (cached) parser of a type's text form: `(bytes, offset, length, typeModifier) => value`. */
  textParser(typeId: number): Parse {
    return this.#parser(typeId >>> 0, "text");
  }

  /** The (cached) parser of a type's binary form. */
  binaryParser(typeId: number): Parse {
    return this.#parser(typeId >>> 0, "binary");
  }

  #cache(format: Format): ParserCache {
    return format === "text" ? this.#text : this.#binary;
  }

  #parser(oid: number, format: Format): Parse {
    const cache = this.#cache(format);
    const hit = cache.get(oid);
    if (hit !== undefined) return hit;
    const p = this.#resolve(oid, format, 0);
    cache.set(oid, p);
    return p;
  }

  #resolve(oid: number, format: Format, depth: number): Parse {
    const override = this.#parsers?.[oid];
    if (format === "text" && typeof override?.text === "function") return fromString(override.text);
    if (format === "binary" && typeof override?.binary === "function") return fromCopy(override.binary);

    const external = this.#external(oid, format);
    if (external !== undefined) return external;

    const builtin = this.#builtins.get(oid)?.[format];
    if (builtin !== undefined) return builtin;

    const element = arrayElement(oid);
    if (element !== 0) return this.#array(element, format);

    const known = this.#types?.[oid] ?? this.#learned.get(oid);
    if (known !== undefined && depth < 16) {
      if (known.baseType !== undefined) return this.#parserAt(known.baseType >>> 0, format, depth + 1);
      if (known.elementType !== undefined) return this.#array(known.elementType >>> 0, format, depth + 1);
    }
    return fallback[format];
  }

  /** A parser resolved inside another's resolution (a domain's base, an array's element); cached as usual. */
  #parserAt(oid: number, format: Format, depth: number): Parse {
    if (depth === 0) return this.#parser(oid, format);
    // Deeper chains are resolved without caching the intermediate OIDs, so a cycle ends at the depth limit.
    return this.#cache(format).get(oid) ?? this.#resolve(oid, format, depth);
  }

  #array(element: number, format: Format, depth = 0): Parse {
    if (format === "text") {
      // Resolved lazily: the element parser is looked up on first use, so declaring types in any order works.
      let parse: Parse | undefined;
      const delimiter = arrayDelimiter(element);
      let arrayParse: Parse | undefined;
      return (b, off, len, typmod) => {
        if (arrayParse === undefined) {
          parse = this.#parserAt(element, "text", depth);
          arrayParse = textArrayParser(parse, delimiter);
        }
        return arrayParse(b, off, len, typmod);
      };
    }
    let arrayParse: Parse | undefined;
    return (b, off, len, typmod) => {
      arrayParse ??= binaryArrayParser(element, this.#parserAt(element, "binary", depth), (oid) => this.#parserAt(oid, "binary", depth));
      return arrayParse(b, off, len, typmod);
    };
  }

  /** The `getTypeParser` option's parser, unless it has none for this type. */
  #external(oid: number, format: Format): Parse | undefined {
    const g = this.#getTypeParser;
    if (g === undefined) return undefined;
    const fn = g(oid, format);
    if (typeof fn !== "function") return undefined;
    if (!(format in this.#noParser)) this.#noParser[format] = g(0, format);
    if (fn === this.#noParser[format]) return undefined;
    const f = fn as (value: unknown) => unknown;
    if (format === "text") return (b, off, len) => f(readString(b, off, len));
    const B = (globalThis as { Buffer?: BufferLike }).Buffer;
    if (B !== undefined) return (b, off, len) => f(B.from(b.subarray(off, off + len)));
    return (b, off, len) => f(copyBytes(b, off, off + len));
  }
}

const encoder = new TextEncoder();

function fromString(f: (text: string) => unknown): Parse {
  return (b, off, len) => f(readString(b, off, len));
}

function fromCopy(f: (bytes: Uint8Array) => unknown): Parse {
  return (b, off, len) => f(copyBytes(b, off, off + len));
}
