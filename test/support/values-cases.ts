/**
 * Edge values of every type, as SQL expressions with the JS value the
 * default ValueDecoder must give for them, in text and in binary format.
 * Used against a real server (values-pg.test.ts): directly through the
 * output and send functions, and through a pgoutput capture.
 */

export interface ValueCase {
  /** SQL type of the column, e.g. `int4[]`, `values_mood`. */
  type: string;
  /** SQL expression of the value (cast to `type` by the test). */
  sql: string;
  /** What the default ValueDecoder gives from both formats. */
  expected: unknown;
  /** Only the text form has a parser; binary gives the raw bytes. */
  textOnly?: boolean;
  /** Oldest server major version that has this value. */
  since?: number;
}

const iv = (months: number, days: number, microseconds: bigint) => ({ months, days, microseconds });
const f32 = Math.fround;
const bytes = (...b: number[]) => Uint8Array.from(b);
/** µs since 1970 of an ISO instant plus extra µs (through Date: years within its range). */
const us = (iso: string, extra = 0) => BigInt(Date.parse(iso)) * 1000n + BigInt(extra);
const BC44_NOON = us("-000043-03-15T12:00:00Z");
const INF = 9223372036854775807n;
const NINF = -9223372036854775808n;

const thousandDigits = Array.from({ length: 1000 }, (_, i) => String((i * 7 + 3) % 10)).join("");
const thousand = `3${thousandDigits.slice(1)}`;
const scaled = `-${thousand.slice(0, 300)}.${thousand.slice(300)}`;
const allBytes = Uint8Array.from({ length: 256 }, (_, i) => i);

/** Extra DDL the cases need (the test prefixes the names with its schema). */
export const SETUP_SQL = [
  "CREATE TYPE values_mood AS ENUM ('happy', 'so so', 'ünï\"c,o{de}')",
  "CREATE DOMAIN values_posint AS int8 CHECK (VALUE > 0)",
  "CREATE DOMAIN values_label AS text",
];

export const CASES: ValueCase[] = [
  { type: "bool", sql: "true", expected: true },
  { type: "bool", sql: "false", expected: false },
  { type: "int2", sql: "32767", expected: 32767 },
  { type: "int2", sql: "-32768", expected: -32768 },
  { type: "int4", sql: "2147483647", expected: 2147483647 },
  { type: "int4", sql: "-2147483648", expected: -2147483648 },
  { type: "int4", sql: "0", expected: 0 },
  { type: "int8", sql: "9223372036854775807", expected: 9223372036854775807n },
  { type: "int8", sql: "-9223372036854775808", expected: -9223372036854775808n },
  { type: "int8", sql: "-42", expected: -42n },
  { type: "oid", sql: "4294967295", expected: 4294967295 },
  { type: "xid", sql: "'4294967295'", expected: 4294967295 },
  { type: "cid", sql: "'4294967295'", expected: 4294967295 },
  { type: "xid8", sql: "'18446744073709551615'", expected: 18446744073709551615n },
  { type: "float4", sql: "'0.1'", expected: f32(0.1) },
  { type: "float4", sql: "'3.4028235e38'", expected: f32(3.4028235e38) },
  { type: "float4", sql: "'1e-45'", expected: f32(1e-45) },
  { type: "float4", sql: "'-0'", expected: -0 },
  { type: "float4", sql: "'NaN'", expected: NaN },
  { type: "float4", sql: "'Infinity'", expected: Infinity },
  { type: "float4", sql: "'-Infinity'", expected: -Infinity },
  { type: "float4", sql: "'123456.79'", expected: f32(123456.79) },
  { type: "float8", sql: "'0.1'", expected: 0.1 },
  { type: "float8", sql: "'-0'", expected: -0 },
  { type: "float8", sql: "'NaN'", expected: NaN },
  { type: "float8", sql: "'Infinity'", expected: Infinity },
  { type: "float8", sql: "'-Infinity'", expected: -Infinity },
  { type: "float8", sql: "'1.7976931348623157e308'", expected: 1.7976931348623157e308 },
  { type: "float8", sql: "'5e-324'", expected: 5e-324 },
  { type: "float8", sql: "'1e15'", expected: 1e15 },
  { type: "float8", sql: "'-1.5e-7'", expected: -1.5e-7 },
  { type: "numeric", sql: "'0'", expected: "0" },
  { type: "numeric", sql: "'0.00'", expected: "0.00" },
  { type: "numeric", sql: "'-1.50'", expected: "-1.50" },
  { type: "numeric", sql: "'0.000001000'", expected: "0.000001000" },
  { type: "numeric", sql: "'10000.0001'", expected: "10000.0001" },
  { type: "numeric", sql: "'NaN'", expected: "NaN" },
  { type: "numeric", sql: "'Infinity'", expected: "Infinity", since: 14 },
  { type: "numeric", sql: "'-Infinity'", expected: "-Infinity", since: 14 },
  { type: "numeric", sql: `'${thousand}'`, expected: thousand },
  { type: "numeric", sql: `'${scaled}'`, expected: scaled },
  { type: "numeric(20,10)", sql: "'1.5'", expected: "1.5000000000" },
  { type: "money", sql: "'1234.56'", expected: 123456n },
  { type: "money", sql: "'-92233720368547758.08'", expected: -9223372036854775808n },
  { type: "money", sql: "'92233720368547758.07'", expected: 9223372036854775807n },
  { type: "text", sql: "'héllo wörld 😀'", expected: "héllo wörld 😀" },
  { type: "text", sql: "''", expected: "" },
  { type: "text", sql: "E'tab\\there\\nnew line \\\\ back'", expected: "tab\there\nnew line \\ back" },
  { type: "varchar(5)", sql: "'abc'", expected: "abc" },
  { type: "char(4)", sql: "'ab'", expected: "ab  " },
  { type: "name", sql: "'pg_class'", expected: "pg_class" },
  { type: '"char"', sql: "'a'", expected: "a" },
  { type: '"char"', sql: "E'\\\\'", expected: "\\" },
  { type: '"char"', sql: "''", expected: "" },
  { type: '"char"', sql: "'\\351'", expected: "\\351", since: 15 },
  { type: "uuid", sql: "'A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11'", expected: "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11" },
  { type: "json", sql: `'{"a": "\\u00e9\\ud83d\\ude00", "b": [1, 2.5, null, true]}'`, expected: { a: "é😀", b: [1, 2.5, null, true] } },
  { type: "jsonb", sql: `'{"a": "\\u00e9\\ud83d\\ude00", "b": [1, 2.5e10, null, true], "q": "\\"\\\\"}'`, expected: { a: "é😀", b: [1, 2.5e10, null, true], q: '"\\' } },
  { type: "jsonb", sql: `'"just a string"'`, expected: "just a string" },
  { type: "bytea", sql: "(SELECT decode(string_agg(lpad(to_hex(i), 2, '0'), '' ORDER BY i), 'hex') FROM generate_series(0, 255) i)", expected: allBytes },
  { type: "bytea", sql: "''", expected: new Uint8Array(0) },
  { type: "date", sql: "'2024-02-29'", expected: "2024-02-29" },
  { type: "date", sql: "'0044-03-15 BC'", expected: "0044-03-15 BC" },
  { type: "date", sql: "'4714-11-24 BC'", expected: "4714-11-24 BC" },
  { type: "date", sql: "'294276-12-31'", expected: "294276-12-31" },
  { type: "date", sql: "'5874897-12-31'", expected: "5874897-12-31" },
  { type: "date", sql: "'infinity'", expected: "infinity" },
  { type: "date", sql: "'-infinity'", expected: "-infinity" },
  { type: "time", sql: "'24:00:00'", expected: "24:00:00" },
  { type: "time", sql: "'04:05:06.789'", expected: "04:05:06.789" },
  { type: "time", sql: "'23:59:59.999999'", expected: "23:59:59.999999" },
  { type: "time(2)", sql: "'04:05:06.789'", expected: "04:05:06.79" },
  { type: "timetz", sql: "'04:05:06.789+05:30'", expected: "04:05:06.789+05:30" },
  { type: "timetz", sql: "'12:00:00-00:25:21'", expected: "12:00:00-00:25:21" },
  { type: "timetz", sql: "'24:00:00-15:59'", expected: "24:00:00-15:59" },
  { type: "timetz", sql: "'00:00:00+15:59:59'", expected: "00:00:00+15:59:59" },
  { type: "timestamp", sql: "'2024-02-29 04:05:06.123456'", expected: us("2024-02-29T04:05:06.123Z", 456) },
  { type: "timestamp", sql: "'0044-03-15 12:00:00 BC'", expected: BC44_NOON },
  { type: "timestamp", sql: "'4714-11-24 00:00:00 BC'", expected: -210866803200000000n },
  { type: "timestamp", sql: "'294276-12-31 23:59:59.999999'", expected: 9224318015999999999n },
  { type: "timestamp", sql: "'infinity'", expected: INF },
  { type: "timestamp", sql: "'-infinity'", expected: NINF },
  { type: "timestamptz", sql: "'2024-02-29 04:05:06.123456+05:30'", expected: us("2024-02-28T22:35:06.123Z", 456) },
  { type: "timestamptz", sql: "'1850-01-01 00:00:00 America/New_York'", expected: us("1850-01-01T04:56:02Z") },
  { type: "timestamptz", sql: "'1900-01-01 00:00:00+05:53:28'", expected: us("1899-12-31T18:06:32Z") },
  { type: "timestamptz", sql: "'0044-03-15 12:00:00+00 BC'", expected: BC44_NOON },
  { type: "timestamptz", sql: "'294276-12-31 23:59:59.999999+00'", expected: 9224318015999999999n },
  { type: "timestamptz", sql: "'4714-11-24 00:00:00+00 BC'", expected: -210866803200000000n },
  { type: "timestamptz", sql: "'infinity'", expected: INF },
  { type: "timestamptz", sql: "'-infinity'", expected: NINF },
  { type: "interval", sql: "'1 year 2 mons 3 days 04:05:06.789'", expected: iv(14, 3, 14_706_789_000n) },
  { type: "interval", sql: "'-1 second'", expected: iv(0, 0, -1_000_000n) },
  { type: "interval", sql: "'0'", expected: iv(0, 0, 0n) },
  { type: "interval", sql: "'1 mon -1 days 1 second'", expected: iv(1, -1, 1_000_000n) },
  { type: "interval", sql: "'-1 year -2 mons 3 days -4:05:06.000001'", expected: iv(-14, 3, -14_706_000_001n) },
  { type: "interval", sql: "'100 hours 0.5 seconds'", expected: iv(0, 0, 360_000_500_000n) },
  { type: "interval", sql: "'178956970 years 7 mons 2147483647 days 2562047788:00:54.775807'", expected: iv(2147483647, 2147483647, INF), since: 99 },
  { type: "interval", sql: "'-178956970 years -8 mons -2147483648 days -2562047788:00:54.775808'", expected: iv(-2147483648, -2147483648, NINF), since: 99 },
  { type: "interval", sql: "'178956970 years 7 mons 2147483647 days 2562047787:00:54.775807'", expected: iv(2147483647, 2147483647, INF - 3_600_000_000n) },
  { type: "interval", sql: "'-178956970 years -8 mons -2147483647 days -2562047788:00:54.775807'", expected: iv(-2147483648, -2147483647, NINF + 1n) },
  { type: "interval", sql: "'infinity'", expected: iv(2147483647, 2147483647, INF), since: 17 },
  { type: "interval", sql: "'-infinity'", expected: iv(-2147483648, -2147483648, NINF), since: 17 },
  { type: "inet", sql: "'192.168.0.1'", expected: "192.168.0.1" },
  { type: "inet", sql: "'192.168.0.1/24'", expected: "192.168.0.1/24" },
  { type: "inet", sql: "'::ffff:1.2.3.4'", expected: "::ffff:1.2.3.4" },
  { type: "inet", sql: "'2001:db8::1/64'", expected: "2001:db8::1/64" },
  { type: "inet", sql: "'1:0:0:1:0:0:0:1'", expected: "1:0:0:1::1" },
  { type: "inet", sql: "'::'", expected: "::" },
  { type: "inet", sql: "'::1'", expected: "::1" },
  { type: "inet", sql: "'::0.0.0.2'", expected: "::2" },
  { type: "inet", sql: "'::0.1.0.0'", expected: "::0.1.0.0" },
  { type: "inet", sql: "'::1.2.3.4'", expected: "::1.2.3.4" },
  { type: "inet", sql: "'::0.0.1.0'", expected: "::100" },
  { type: "inet", sql: "'0:0:0:0:0:ffff:0:0'", expected: "::ffff:0.0.0.0" },
  { type: "inet", sql: "'1::'", expected: "1::" },
  { type: "cidr", sql: "'10/8'", expected: "10.0.0.0/8" },
  { type: "cidr", sql: "'fe80::/10'", expected: "fe80::/10" },
  { type: "cidr", sql: "'192.168.1.1'", expected: "192.168.1.1/32" },
  { type: "macaddr", sql: "'08:00:2B:01:02:03'", expected: "08:00:2b:01:02:03" },
  { type: "macaddr8", sql: "'08:00:2b:01:02:03:04:05'", expected: "08:00:2b:01:02:03:04:05" },
  { type: "bit(11)", sql: "B'10100000111'", expected: "10100000111" },
  { type: "varbit", sql: "B''", expected: "" },
  { type: "varbit", sql: "B'1111111101'", expected: "1111111101" },
  { type: "pg_lsn", sql: "'16/B374D848'", expected: "16/B374D848" },
  { type: "pg_lsn", sql: "'FFFFFFFF/FFFFFFFF'", expected: "FFFFFFFF/FFFFFFFF" },
  { type: "tid", sql: "'(4294967295,65535)'", expected: "(4294967295,65535)" },
  { type: "xml", sql: "'<a x=\"1\">b &amp; é</a>'", expected: '<a x="1">b &amp; é</a>' },
  { type: "int2vector", sql: "'1 -2 3'", expected: [1, -2, 3] },
  { type: "oidvector", sql: "'23 4294967295'", expected: [23, 4294967295] },
  // Text only: no binary parser, the raw bytes are kept.
  { type: "point", sql: "'(1.5,-2)'", expected: "(1.5,-2)", textOnly: true },
  { type: "tsvector", sql: "'a fat:2 cat'", expected: "'a' 'cat' 'fat':2", textOnly: true },
  { type: "int4range", sql: "'[1,5]'", expected: "[1,6)", textOnly: true },
  // Arrays
  { type: "int4[]", sql: "'{1,NULL,-3}'", expected: [1, null, -3] },
  { type: "int4[]", sql: "'{}'", expected: [] },
  { type: "int4[]", sql: "'{{1,2},{3,NULL}}'", expected: [[1, 2], [3, null]] },
  { type: "int4[]", sql: "'[0:1]={1,2}'", expected: Object.assign([1, 2], { lowerBounds: [0] }) },
  { type: "int4[]", sql: "'[-2:-1][5:6]={{1,2},{3,4}}'", expected: Object.assign([[1, 2], [3, 4]], { lowerBounds: [-2, 5] }) },
  {
    type: "text[]",
    sql: `ARRAY['a"b', 'back\\slash', 'com,ma', '{br}aces', 'NULL', 'null', '', ' lead', 'trail ', 'é😀', NULL, 'x;y', E'new\\nline']`,
    expected: ['a"b', "back\\slash", "com,ma", "{br}aces", "NULL", "null", "", " lead", "trail ", "é😀", null, "x;y", "new\nline"],
  },
  { type: "text[]", sql: "'{{{a,b},{c,d}},{{e,f},{g,NULL}}}'", expected: [[["a", "b"], ["c", "d"]], [["e", "f"], ["g", null]]] },
  { type: "varchar[]", sql: "'{NULL,\"NULL\"}'", expected: [null, "NULL"] },
  { type: "char(2)[]", sql: "'{a,bc}'", expected: ["a ", "bc"] },
  { type: '"char"[]', sql: "ARRAY['a'::\"char\", E'\\\\'::\"char\"]", expected: ["a", "\\"] },
  { type: "bool[]", sql: "'{t,f,NULL}'", expected: [true, false, null] },
  { type: "int8[]", sql: "'{9223372036854775807,-9223372036854775808}'", expected: [9223372036854775807n, -9223372036854775808n] },
  { type: "float4[]", sql: "'{0.1,NaN,-Infinity,-0}'", expected: [f32(0.1), NaN, -Infinity, -0] },
  { type: "float8[]", sql: "'{0.1,1e300,NaN}'", expected: [0.1, 1e300, NaN] },
  { type: "numeric[]", sql: "'{1.50,NaN,-0.001}'", expected: ["1.50", "NaN", "-0.001"] },
  { type: "money[]", sql: "'{1.00,-2.50}'", expected: [100n, -250n] },
  { type: "bytea[]", sql: "ARRAY['\\x00ff'::bytea, NULL, '\\x'::bytea, '\\x5c22'::bytea]", expected: [bytes(0, 255), null, new Uint8Array(0), bytes(0x5c, 0x22)] },
  { type: "jsonb[]", sql: `ARRAY['{"a": "\\u00e9", "b": [1, "x,y"]}'::jsonb, 'null'::jsonb, NULL]`, expected: [{ a: "é", b: [1, "x,y"] }, null, null] },
  { type: "json[]", sql: `ARRAY['{"k": "{}"}'::json]`, expected: [{ k: "{}" }] },
  { type: "uuid[]", sql: "'{a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11,NULL}'", expected: ["a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11", null] },
  { type: "date[]", sql: "'{2024-02-29,\"0044-03-15 BC\",infinity}'", expected: ["2024-02-29", "0044-03-15 BC", "infinity"] },
  { type: "time[]", sql: "'{24:00:00,00:00:00.5}'", expected: ["24:00:00", "00:00:00.5"] },
  { type: "timetz[]", sql: "'{12:00:00-00:25:21}'", expected: ["12:00:00-00:25:21"] },
  { type: "timestamp[]", sql: "'{\"2024-02-29 04:05:06.123456\",-infinity}'", expected: [us("2024-02-29T04:05:06.123Z", 456), NINF] },
  { type: "timestamptz[]", sql: "'{\"2024-02-29 04:05:06.123456+05:30\",infinity}'", expected: [us("2024-02-28T22:35:06.123Z", 456), INF] },
  { type: "interval[]", sql: "'{\"1 day -00:00:01\",\"-1 mons\"}'", expected: [iv(0, 1, -1_000_000n), iv(-1, 0, 0n)] },
  { type: "inet[]", sql: "'{::1,10.0.0.1/8}'", expected: ["::1", "10.0.0.1/8"] },
  { type: "cidr[]", sql: "'{10/8}'", expected: ["10.0.0.0/8"] },
  { type: "macaddr[]", sql: "'{08:00:2b:01:02:03}'", expected: ["08:00:2b:01:02:03"] },
  { type: "varbit[]", sql: "'{101,\"\"}'", expected: ["101", ""] },
  { type: "oid[]", sql: "'{4294967295}'", expected: [4294967295] },
  { type: "xid[]", sql: "'{4294967295}'", expected: [4294967295] },
  { type: "name[]", sql: "'{pg_class}'", expected: ["pg_class"] },
  // User types (resolved with typesFromCatalog)
  { type: "values_mood", sql: "'so so'", expected: "so so" },
  { type: "values_mood", sql: `'ünï"c,o{de}'`, expected: 'ünï"c,o{de}' },
  { type: "values_mood[]", sql: `ARRAY['happy', 'ünï"c,o{de}', NULL]::values_mood[]`, expected: ["happy", 'ünï"c,o{de}', null] },
  { type: "values_posint", sql: "42", expected: 42n },
  { type: "values_posint[]", sql: "ARRAY[1, 9223372036854775807]", expected: [1n, 9223372036854775807n] },
  { type: "values_label", sql: "'a label'", expected: "a label" },
];
