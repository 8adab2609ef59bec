/**
 * How the Redis sink appends: one Lua script call (EVALSHA) per chunk of
 * entries, each entry an `XADD key [MAXLEN [~|=] N] <id> field value ...`
 * with the explicit id `<commit LSN, decimal>-<seq>` (seq: the record's
 * position, `entrySeq()`), and the sink's position key set to the last
 * entry's position in the same atomic step.
 *
 * Why a script and not plain pipelined XADDs: an XADD that fails without
 * the connection dropping (OOM, LOADING, a script running: BUSY) would let
 * the pipelined XADDs behind it land; sent again, the failed one would then
 * be "equal or smaller than the top item" — taken as delivered, and lost.
 * Each call therefore states the position the chunk before it ended at
 * (ARGV[1]) and writes nothing unless the position key has reached it: a
 * chunk can only land after every earlier one did, so what the streams
 * hold is always a prefix, in commit order, of what was sent, and an entry
 * "not newer" than its stream's top really is there. Within a call,
 * entries land in order up to the first failure (a script is atomic; its
 * writes before an error stay), and the position key says where that was.
 *
 * Positions are written as 28 hex digits (16 of LSN, 12 of seq) so that
 * they compare as text in JS and, split in three, as exact numbers in Lua
 * (whose numbers are doubles: 53 bits).
 *
 * ARGV: [1] the position the previous chunk ended at ('' for none known);
 * [2] '' or the MAXLEN mode and count ('~1000', '=1000'); then per entry:
 * the index of its stream in KEYS, its id, its position, the number of
 * field/value pairs, the pairs. KEYS: [1] the position key, then the
 * chunk's streams.
 *
 * Replies: {'ok', landed, duplicates} | {'gap', position key's value} |
 * {'err', landed, duplicates, error text} (entries before the failing one
 * landed, and the position key says so).
 */
import { ByteSink } from "../jsonl/sink.ts";
import type { ChangePosition } from "../pipeline/change-id.ts";
import { arrayHeader, bulkAscii, bulkBytes } from "./resp.ts";

export const APPEND_SCRIPT = `
local function before(a, b)
  for _, r in ipairs({{1, 8}, {9, 16}, {17, 28}}) do
    local x, y = tonumber(string.sub(a, r[1], r[2]), 16), tonumber(string.sub(b, r[1], r[2]), 16)
    if x ~= y then return x < y end
  end
  return false
end
local pos = redis.call('GET', KEYS[1])
if ARGV[1] ~= '' and (not pos or before(pos, ARGV[1])) then
  return {'gap', pos or ''}
end
-- Entries come in position order: the last one processed (landed, or already there) is where the key goes.
local done = nil
local function mark()
  if done and (not pos or before(pos, done)) then redis.call('SET', KEYS[1], done) end
end
local maxlen = ARGV[2]
local mode, count = string.sub(maxlen, 1, 1), string.sub(maxlen, 2)
local landed, dups = 0, 0
local i = 3
local n = #ARGV
while i <= n do
  local key = KEYS[tonumber(ARGV[i])]
  local id, p, m = ARGV[i + 1], ARGV[i + 2], tonumber(ARGV[i + 3])
  local from, to = i + 4, i + 3 + 2 * m
  local r
  if maxlen == '' then
    r = redis.pcall('XADD', key, id, unpack(ARGV, from, to))
  else
    r = redis.pcall('XADD', key, 'MAXLEN', mode, count, id, unpack(ARGV, from, to))
  end
  if type(r) == 'table' and r.err then
    if string.find(r.err, 'equal or smaller', 1, true) then
      dups = dups + 1
    else
      mark()
      return {'err', landed, dups, r.err}
    end
  else
    landed = landed + 1
  end
  done = p
  i = to + 1
end
mark()
return {'ok', landed, dups}
`;

/** Sub-positions a record can have before one position (change-id.ts): the low 16 bits of a seq, 0xffff the record itself. */
const SUBS = 0x10000;

/**
 * A record's position in its transaction as one integer that sorts as the
 * positions do (change-id.ts): position × 65536, plus k − 1 for the k-th
 * derived record before it, or 65535 for the record itself. The entry id's
 * seq, and the position key's last 12 hex digits.
 */
export function entrySeq(index: number, sub: number): number {
  if (sub >= SUBS - 1) throw new RangeError(`more than ${SUBS - 2} derived records before one change`);
  return index * SUBS + (sub === 0 ? SUBS - 1 : sub - 1);
}

/** The entry id of the record at `p`: the commit LSN (decimal), then its seq. */
export function entryIdOf(p: ChangePosition): string {
  return `${p.lsn}-${entrySeq(p.index, p.sub ?? 0)}`;
}

/** The position a position key holds, or undefined for text that is not one. */
export function parsePositionText(text: string): ChangePosition | undefined {
  if (!/^[0-9a-f]{28}$/.test(text)) return undefined;
  const seq = Number.parseInt(text.substring(16), 16);
  const low = seq % SUBS;
  const at = { lsn: BigInt(`0x${text.substring(0, 16)}`), index: (seq - low) / SUBS };
  return low === SUBS - 1 ? at : { ...at, sub: low + 1 };
}

const constants = new Map<string, Uint8Array>();

/** An ASCII text that comes again and again (a field name, a count, a kind) as a whole bulk string, encoded once. */
export function constantBulk(text: string): Uint8Array {
  let b = constants.get(text);
  if (b === undefined) {
    if (constants.size > 4096) constants.clear();
    constants.set(text, (b = new TextEncoder().encode(`$${text.length}\r\n${text}\r\n`)));
  }
  return b;
}

/** A stream the sink appends to. */
export interface StreamKey {
  readonly name: string;
  readonly bytes: Uint8Array;
}

/** One call's worth of entries, encoded as it is built; `finish()` gives the whole EVALSHA command. */
export class AppendChunk {
  readonly keys: StreamKey[] = [];
  /** The stream of each entry (indexes into `keys`), for naming the one that failed. */
  readonly entryKeys: number[] = [];
  readonly #keyIndex = new Map<StreamKey, number>();
  #args = 0;
  /** The last entry's position. */
  last = "";

  constructor(readonly body: ByteSink) {
    body.len = 0;
  }

  get entries(): number {
    return this.entryKeys.length;
  }

  /** Starts an entry of `pairs` field/value pairs, which follow (`field`, `fieldBytes`). */
  entry(key: StreamKey, id: string, position: string, pairs: number): void {
    let k = this.#keyIndex.get(key);
    if (k === undefined) {
      k = this.keys.length;
      this.keys.push(key);
      this.#keyIndex.set(key, k);
    }
    this.entryKeys.push(k);
    this.body.bytes(constantBulk(String(k + 2)));
    bulkAscii(this.body, id);
    bulkAscii(this.body, position);
    this.body.bytes(constantBulk(String(pairs)));
    this.#args += 4 + 2 * pairs;
    this.last = position;
  }

  /** A field whose value is ASCII text; `value` as a bulk string already encoded (constantBulk) when it repeats. */
  field(name: string, value: string | Uint8Array): void {
    this.body.bytes(constantBulk(name));
    if (typeof value === "string") bulkAscii(this.body, value);
    else this.body.bytes(value);
  }

  fieldBytes(name: string, value: Uint8Array): void {
    this.body.bytes(constantBulk(name));
    bulkBytes(this.body, value);
  }

  /** The command: `EVALSHA sha numkeys positionKey streams... after maxlen entries...`. */
  finish(sha: string, positionKey: Uint8Array, after: string, maxlen: string): Uint8Array {
    const out = new ByteSink();
    out.ensure(this.body.len + 256 + positionKey.length + this.keys.reduce((n, k) => n + k.bytes.length + 16, 0));
    const nkeys = 1 + this.keys.length;
    arrayHeader(out, 3 + nkeys + 2 + this.#args);
    bulkAscii(out, "EVALSHA");
    bulkAscii(out, sha);
    bulkAscii(out, String(nkeys));
    bulkBytes(out, positionKey);
    for (const k of this.keys) bulkBytes(out, k.bytes);
    bulkAscii(out, after);
    bulkAscii(out, maxlen);
    out.bytes(this.body.buf, 0, this.body.len);
    return out.buf.subarray(0, out.len);
  }
}
