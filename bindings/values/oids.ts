/**
 * Built-in type OIDs by name (`pg_type.oid`, fixed in PostgreSQL's catalog
 * and the same on every server since long before 15), and the array type of
 * each (`pg_type.typarray`). `test/values-pg.test.ts` checks every entry
 * against a real server's `pg_type`.
 *
 * @example
 * ```ts
 * Oid.int4 === 23;
 * arrayElement(Oid._int4) === Oid.int4;
 * ```
 */

/** Scalar types: name → [oid, array oid] (0: no array type). */
const SCALARS = {
  bool: [16, 1000],
  bytea: [17, 1001],
  char: [18, 1002],
  name: [19, 1003],
  int8: [20, 1016],
  int2: [21, 1005],
  int2vector: [22, 1006],
  int4: [23, 1007],
  regproc: [24, 1008],
  text: [25, 1009],
  oid: [26, 1028],
  tid: [27, 1010],
  xid: [28, 1011],
  cid: [29, 1012],
  oidvector: [30, 1013],
  json: [114, 199],
  xml: [142, 143],
  point: [600, 1017],
  lseg: [601, 1018],
  path: [602, 1019],
  box: [603, 1020],
  polygon: [604, 1027],
  line: [628, 629],
  cidr: [650, 651],
  float4: [700, 1021],
  float8: [701, 1022],
  unknown: [705, 0],
  circle: [718, 719],
  macaddr8: [774, 775],
  money: [790, 791],
  macaddr: [829, 1040],
  inet: [869, 1041],
  aclitem: [1033, 1034],
  bpchar: [1042, 1014],
  varchar: [1043, 1015],
  date: [1082, 1182],
  time: [1083, 1183],
  timestamp: [1114, 1115],
  timestamptz: [1184, 1185],
  interval: [1186, 1187],
  timetz: [1266, 1270],
  bit: [1560, 1561],
  varbit: [1562, 1563],
  numeric: [1700, 1231],
  refcursor: [1790, 2201],
  regprocedure: [2202, 2207],
  regoper: [2203, 2208],
  regoperator: [2204, 2209],
  regclass: [2205, 2210],
  regtype: [2206, 2211],
  record: [2249, 2287],
  cstring: [2275, 1263],
  uuid: [2950, 2951],
  txid_snapshot: [2970, 2949],
  pg_lsn: [3220, 3221],
  tsvector: [3614, 3643],
  tsquery: [3615, 3645],
  gtsvector: [3642, 3644],
  regconfig: [3734, 3735],
  regdictionary: [3769, 3770],
  jsonb: [3802, 3807],
  int4range: [3904, 3905],
  numrange: [3906, 3907],
  tsrange: [3908, 3909],
  tstzrange: [3910, 3911],
  daterange: [3912, 3913],
  int8range: [3926, 3927],
  jsonpath: [4072, 4073],
  regnamespace: [4089, 4090],
  regrole: [4096, 4097],
  regcollation: [4191, 4192],
  int4multirange: [4451, 6150],
  nummultirange: [4532, 6151],
  tsmultirange: [4533, 6152],
  tstzmultirange: [4534, 6153],
  datemultirange: [4535, 6155],
  int8multirange: [4536, 6157],
  pg_snapshot: [5038, 5039],
  xid8: [5069, 271],
} as const satisfies Record<string, readonly [number, number]>;

type ScalarName = keyof typeof SCALARS;
type OidTable = { readonly [K in ScalarName]: number } & { readonly [K in ScalarName as `_${K}`]: number };

/** OID of every built-in type by its `pg_type.typname` (array types with PostgreSQL's leading `_`). */
export const Oid: OidTable = (() => {
  const out: Record<string, number> = {};
  for (const [name, [oid, array]] of Object.entries(SCALARS)) {
    out[name] = oid;
    if (array !== 0) out[`_${name}`] = array;
  }
  return Object.freeze(out) as OidTable;
})();

const ELEMENT = new Map<number, number>();
for (const [oid, array] of Object.values(SCALARS)) if (array !== 0) ELEMENT.set(array, oid);

/** The element type of a built-in array type, or 0 when `oid` is none. */
export function arrayElement(oid: number): number {
  return ELEMENT.get(oid) ?? 0;
}

/** The array type of a built-in scalar type, or 0. */
export function arrayOf(oid: number): number {
  for (const [scalar, array] of Object.values(SCALARS)) if (scalar === oid) return array;
  return 0;
}

/** Every built-in (scalar, array) pair, for tests and tools. */
export function builtinTypes(): ReadonlyArray<{ name: string; oid: number; arrayOid: number }> {
  return Object.entries(SCALARS).map(([name, [oid, arrayOid]]) => ({ name, oid, arrayOid }));
}

/** Array element delimiter (`typdelim`): `;` for box, `,` for every other built-in type. */
export function arrayDelimiter(elementOid: number): number {
  return elementOid === 603 ? 0x3b : 0x2c;
}

/** OIDs below this are built in (PostgreSQL's FirstNormalObjectId); user types are at or above it. */
export const FIRST_NORMAL_OID = 16384;
